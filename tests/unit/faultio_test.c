/*
 * faultio_test.c --- unit test of the fault-injecting io_manager (faultio.c).
 *
 * Usage: faultio_test DIR   (a scratch directory; files are made there)
 *
 * Checks, on a plain file of 64 blocks of 1 KiB:
 *  - count: every write and flush counted, data passed through, the
 *    EXTREF_FAULT_OUT line;
 *  - crash=N: exactly the first N writes reach the file (write_blk64 of
 *    several blocks and write_byte each count one);
 *  - powercut=N,seed=S: reads see held writes (also partly overlapping
 *    ones); writes before the last flush are all on the file; of the
 *    writes since, a subset (in order) is; later writes and flushes do
 *    nothing; different seeds give different subsets;
 *  - powercut with N beyond the writes made: close applies everything.
 * Prints "faultio_test: OK" and exits 0, else names the failed check.
 * Built without configure --enable-fault-injection (no such io manager in
 * the library), it says so and exits 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include "extref.h"
#include "tree/extref_int.h"	/* extref_fault_io_manager */

#ifdef EXTREF_FAULT_INJECTION

#define BS	1024
#define NBLK	64

static const char *dir;
static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);	\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		failures++;						\
	}								\
} while (0)

static void die(const char *what, errcode_t err)
{
	fprintf(stderr, "faultio_test: %s: %s\n", what, error_message(err));
	exit(2);
}

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

/* A fresh file of NBLK blocks, block b filled with byte b. */
static void make_file(const char *path)
{
	unsigned char blk[BS];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int b;

	if (fd < 0) {
		perror(path);
		exit(2);
	}
	for (b = 0; b < NBLK; b++) {
		memset(blk, b, BS);
		if (pwrite(fd, blk, BS, (off_t)b * BS) != BS) {
			perror("pwrite");
			exit(2);
		}
	}
	close(fd);
}

static void file_block(const char *path, int b, unsigned char *buf)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || pread(fd, buf, BS, (off_t)b * BS) != BS) {
		perror(path);
		exit(2);
	}
	close(fd);
}

/* Does block b of the file hold byte v throughout? */
static int file_block_is(const char *path, int b, int v)
{
	unsigned char buf[BS];
	int i;

	file_block(path, b, buf);
	for (i = 0; i < BS; i++)
		if (buf[i] != (unsigned char)v)
			return 0;
	return 1;
}

static io_channel open_chan(const char *path, const char *spec,
			    const char *out)
{
	io_channel ch;
	errcode_t err;

	setenv("EXTREF_FAULT", spec, 1);
	if (out)
		setenv("EXTREF_FAULT_OUT", out, 1);
	else
		unsetenv("EXTREF_FAULT_OUT");
	err = extref_fault_io_manager->open(path, IO_FLAG_RW, &ch);
	if (err)
		die("open", err);
	err = io_channel_set_blksize(ch, BS);
	if (err)
		die("set_blksize", err);
	return ch;
}

/* Write block b (count blocks) filled with byte v. */
static void wblk(io_channel ch, int b, int count, int v)
{
	unsigned char buf[BS * 4];
	errcode_t err;

	memset(buf, v, sizeof(buf));
	err = io_channel_write_blk64(ch, b, count, buf);
	if (err)
		die("write_blk64", err);
}

static void read_last_line(const char *path, char *line, size_t n)
{
	FILE *f = fopen(path, "r");

	line[0] = 0;
	if (!f)
		return;
	while (fgets(line, (int)n, f))
		;
	fclose(f);
}

static void test_count(void)
{
	char img[4096], out[4096], line[256];
	unsigned char v = 0xAA;
	io_channel ch;
	errcode_t err;

	path_of(img, sizeof(img), "count.img");
	path_of(out, sizeof(out), "count.out");
	make_file(img);
	unlink(out);
	ch = open_chan(img, "count", out);
	wblk(ch, 1, 1, 0xA1);
	wblk(ch, 2, 3, 0xA2);			/* several blocks: one write */
	err = io_channel_flush(ch);
	CHECK(!err, "flush");
	err = io_channel_write_byte(ch, 10 * BS + 5, 1, &v);
	CHECK(!err, "write_byte");
	{
		char bytes[100];

		memset(bytes, 'x', sizeof(bytes));
		memcpy(bytes, "0123456789", 10);
		/* a negative count is a number of bytes */
		err = io_channel_write_blk64(ch, 12, -10, bytes);
		CHECK(!err, "write_blk64 with byte count");
	}
	io_channel_flush(ch);
	io_channel_close(ch);
	read_last_line(out, line, sizeof(line));
	CHECK(strcmp(line, "writes=4 flushes=2\n") == 0,
	      "count output: \"%s\"", line);
	CHECK(file_block_is(img, 1, 0xA1) && file_block_is(img, 2, 0xA2) &&
	      file_block_is(img, 4, 0xA2) && file_block_is(img, 5, 5),
	      "count: data passed through");
	{
		unsigned char buf[BS];

		file_block(img, 10, buf);
		CHECK(buf[5] == 0xAA && buf[4] == 10 && buf[6] == 10,
		      "count: write_byte");
		file_block(img, 12, buf);
		CHECK(memcmp(buf, "0123456789", 10) == 0 && buf[10] == 12,
		      "count: negative count writes bytes");
	}
}

static void test_crash(void)
{
	int n, b;

	for (n = 0; n <= 6; n++) {
		char img[4096], out[4096], spec[64], line[256], want[64];
		unsigned char buf[BS];
		io_channel ch;

		path_of(img, sizeof(img), "crash.img");
		path_of(out, sizeof(out), "crash.out");
		make_file(img);
		unlink(out);
		snprintf(spec, sizeof(spec), "crash=%d", n);
		ch = open_chan(img, spec, out);
		/* writes 1..5 to blocks 20..24 (write 3 is two blocks) */
		wblk(ch, 20, 1, 0xC0);
		wblk(ch, 21, 1, 0xC1);
		io_channel_flush(ch);
		wblk(ch, 22, 2, 0xC2);
		wblk(ch, 24, 1, 0xC3);
		wblk(ch, 25, 1, 0xC4);
		/* reads still work */
		CHECK(io_channel_read_blk64(ch, 30, 1, buf) == 0 &&
		      buf[0] == 30, "crash: read");
		io_channel_flush(ch);
		io_channel_close(ch);
		for (b = 0; b < 5; b++) {
			int blk = 20 + b + (b >= 3);
			int kept = b < n;
			int v = kept ? 0xC0 + b : blk;

			CHECK(file_block_is(img, blk, v),
			      "crash=%d: write %d %s", n, b + 1,
			      kept ? "missing" : "not dropped");
		}
		CHECK(file_block_is(img, 23, n >= 3 ? 0xC2 : 23),
		      "crash=%d: second block of write 3", n);
		read_last_line(out, line, sizeof(line));
		snprintf(want, sizeof(want), "writes=5 dropped=%d\n",
			 n < 5 ? 5 - n : 0);
		CHECK(strcmp(line, want) == 0, "crash=%d output \"%s\"", n,
		      line);
	}
}

/*
 * Writes 1-3 then a flush, then writes 4..8, power cut at write 7:
 * 1-3 must be on the file, 4-7 a subset, 8 never.  Returns a bit mask of
 * which of 4-7 were kept.
 */
static unsigned powercut_once(unsigned seed)
{
	char img[4096], out[4096], spec[64], line[256];
	unsigned char buf[BS * 2];
	unsigned mask = 0;
	io_channel ch;
	unsigned long long w = 0, dropped = 0;
	int i;

	path_of(img, sizeof(img), "pc.img");
	path_of(out, sizeof(out), "pc.out");
	make_file(img);
	unlink(out);
	snprintf(spec, sizeof(spec), "powercut=7,seed=%u", seed);
	ch = open_chan(img, spec, out);
	wblk(ch, 1, 1, 0x11);
	wblk(ch, 2, 1, 0x12);
	wblk(ch, 3, 1, 0x13);
	CHECK(io_channel_flush(ch) == 0, "flush");
	CHECK(file_block_is(img, 3, 0x13), "flush applies held writes");
	wblk(ch, 40, 1, 0x40);
	CHECK(file_block_is(img, 40, 40), "held write reached the file early");
	/* read your writes */
	CHECK(io_channel_read_blk64(ch, 40, 1, buf) == 0 && buf[0] == 0x40 &&
	      buf[BS - 1] == 0x40, "powercut: read sees held write");
	/* a partial overlap: bytes 100..199 of block 41, then block 41 */
	CHECK(io_channel_write_byte(ch, 41 * BS + 100, 100,
				    memset(buf, 0x41, 100)) == 0, "write_byte");
	CHECK(io_channel_read_blk64(ch, 40, 2, buf) == 0 &&
	      buf[0] == 0x40 && buf[BS + 99] == 41 && buf[BS + 100] == 0x41 &&
	      buf[BS + 199] == 0x41 && buf[BS + 200] == 41,
	      "powercut: read overlays held bytes on the file");
	wblk(ch, 42, 1, 0x42);
	wblk(ch, 43, 1, 0x43);				/* write 7: cut */
	wblk(ch, 44, 1, 0x44);				/* dropped */
	CHECK(io_channel_flush(ch) == 0, "flush after cut");
	io_channel_close(ch);

	for (i = 1; i <= 3; i++)
		CHECK(file_block_is(img, i, 0x10 + i),
		      "seed %u: flushed write %d lost", seed, i);
	if (file_block_is(img, 40, 0x40))
		mask |= 1;
	else
		CHECK(file_block_is(img, 40, 40), "seed %u: block 40", seed);
	file_block(img, 41, buf);
	if (buf[100] == 0x41) {
		mask |= 2;
		CHECK(buf[99] == 41 && buf[199] == 0x41 && buf[200] == 41,
		      "seed %u: write_byte applied wrongly", seed);
	} else {
		CHECK(file_block_is(img, 41, 41), "seed %u: block 41", seed);
	}
	if (file_block_is(img, 42, 0x42))
		mask |= 4;
	else
		CHECK(file_block_is(img, 42, 42), "seed %u: block 42", seed);
	if (file_block_is(img, 43, 0x43))
		mask |= 8;
	else
		CHECK(file_block_is(img, 43, 43), "seed %u: block 43", seed);
	CHECK(file_block_is(img, 44, 44), "seed %u: write after cut", seed);

	read_last_line(out, line, sizeof(line));
	CHECK(sscanf(line, "writes=%llu dropped=%llu", &w, &dropped) == 2 &&
	      w == 8, "seed %u: output \"%s\"", seed, line);
	CHECK(dropped == 1 + 4 - (unsigned)__builtin_popcount(mask),
	      "seed %u: dropped %llu with mask %x", seed, dropped, mask);
	return mask;
}

static void test_powercut(void)
{
	unsigned seen = 0, seed, first = 0;
	int differ = 0;

	for (seed = 0; seed < 32; seed++) {
		unsigned m = powercut_once(seed);

		seen |= 1u << m;
		if (seed == 0)
			first = m;
		else if (m != first)
			differ = 1;
		CHECK(powercut_once(seed) == m,
		      "seed %u: not reproducible", seed);
	}
	CHECK(differ, "powercut: all seeds keep the same subset");
	CHECK(seen & 1, "powercut: no seed dropped every held write");
	CHECK(seen & (1u << 15), "powercut: no seed kept every held write");
}

static void test_powercut_no_cut(void)
{
	char img[4096];
	unsigned char buf[BS];
	io_channel ch;

	path_of(img, sizeof(img), "pc2.img");
	make_file(img);
	ch = open_chan(img, "powercut=100,seed=1", NULL);
	wblk(ch, 5, 1, 0x55);
	wblk(ch, 6, 1, 0x66);
	CHECK(file_block_is(img, 5, 5), "held before close");
	CHECK(io_channel_read_blk64(ch, 6, 1, buf) == 0 && buf[0] == 0x66,
	      "read held");
	io_channel_close(ch);
	CHECK(file_block_is(img, 5, 0x55) && file_block_is(img, 6, 0x66),
	      "close without a cut applies held writes");
}

static void test_bad_spec(void)
{
	char img[4096];
	io_channel ch;
	const char *bad[] = { "crash", "crash=x", "powercut=0,seed=1",
			      "powercut=3", "bogus", NULL };
	int i;

	path_of(img, sizeof(img), "bad.img");
	make_file(img);
	for (i = 0; bad[i]; i++) {
		setenv("EXTREF_FAULT", bad[i], 1);
		CHECK(extref_fault_io_manager->open(img, IO_FLAG_RW, &ch) != 0,
		      "spec \"%s\" accepted", bad[i]);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: faultio_test DIR\n");
		return 2;
	}
	dir = argv[1];
	add_error_table(&et_ext2_error_table);
	test_count();
	test_crash();
	test_powercut();
	test_powercut_no_cut();
	test_bad_spec();
	if (failures) {
		fprintf(stderr, "faultio_test: %d failures\n", failures);
		return 1;
	}
	printf("faultio_test: OK\n");
	return 0;
}

#else /* !EXTREF_FAULT_INJECTION */

int main(void)
{
	printf("faultio_test: not built (configure --enable-fault-injection)\n");
	return 77;
}

#endif
