/*
 * reflink_bench.c --- time reflinks and copy-on-write writes, on an extref
 * image through libextref, or on a mounted filesystem through the
 * kernel's FICLONE (for comparison with XFS).
 *
 * usage: reflink_bench IMAGE    CMD ARGS...   (libextref, offline image)
 *        reflink_bench --posix  CMD ARGS...   (paths on a mounted fs)
 *
 *   make FILE SIZE EXTENTS  a file of SIZE bytes (K, M, G suffixes) in
 *                           EXTENTS pieces; EXTENTS 1 gives as few extents
 *                           as the filesystem allows, more pieces are
 *                           interleaved with one-block writes to a
 *                           scratch file (removed afterwards) so that no
 *                           two pieces are physically contiguous.
 *   extents FILE            count the file's extents
 *   reflink SRC DST         one reflink to a new file DST
 *   reflinks SRC N PREFIX   N successive reflinks SRC -> PREFIX.0 ...,
 *                           each timed; first and last 100 compared
 *   cow FILE OFF LEN        write LEN bytes at OFF (copy-on-write when
 *                           the file is shared)
 *
 * Output: one line of key=value figures, times in seconds.  Every time
 * is taken with clock_gettime(CLOCK_MONOTONIC) around the operation only:
 *   extref: open = extref_fs_open + ext2fs_read_bitmaps, op = the library
 *           call(s), each of which commits the tree (with its flushes,
 *           i.e. fsyncs of IMAGE) before it returns, close =
 *           extref_fs_close (commit, bitmaps, superblock, fsync).
 *   posix:  op = open(O_CREAT|O_EXCL) of DST + ioctl(FICLONE) + close;
 *           op_fsync additionally fsync(DST) (makes the clone durable,
 *           as an extref operation is); for cow, op = pwrite() only
 *           (page cache), op_fsync = pwrite + fsync (the copy-on-write
 *           really happens at writeback).
 * Paths on an extref image are from its root directory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <linux/fiemap.h>
#include "extref.h"
#include "extref_ops.h"
#include "bench_util.h"

#define CHUNK (1ULL << 20)


static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	case 0: break;
	default:
		fprintf(stderr, "%s: bad size %s\n", bench_prog, s);
		exit(2);
	}
	return v;
}

/* Fill buf with a pattern that depends on the file offset. */
static void pattern(char *buf, size_t len, unsigned long long off)
{
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		unsigned long long v = (off + i) * 0x9E3779B97F4A7C15ULL;

		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = (char)(off + i);
}

static void *xmalloc_aligned(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len))
		die_errno("posix_memalign");
	return p;
}

/* A pattern-filled buffer of len bytes (a multiple of 4096), cheaply. */
static char *big_buffer(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	size_t off, tile = len < CHUNK ? len : CHUNK;

	if (p == MAP_FAILED)
		die_errno("mmap");
	pattern(p, tile, 0);
	for (off = tile; off < len; off += tile) {
		size_t n = len - off < tile ? len - off : tile;

		memcpy(p + off, p, n);
		memcpy(p + off, &off, sizeof(off));	/* differs per MiB */
	}
	return p;
}

/* Piece i of n over nblk blocks: [start, end) in blocks. */
static void piece(unsigned long long nblk, unsigned long n, unsigned long i,
		  unsigned long long *start, unsigned long long *end)
{
	*start = nblk * i / n;
	*end = nblk * (i + 1) / n;
}

/* Mean of v[from, to). */
static double mean(const double *v, unsigned long from, unsigned long to)
{
	double s = 0;
	unsigned long i;

	for (i = from; i < to; i++)
		s += v[i];
	return to > from ? s / (to - from) : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of v[from, to) (sorts a copy). */
static double median_of(const double *v, unsigned long from, unsigned long to)
{
	unsigned long n = to - from;
	double *s, m;

	if (n == 0)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		die_errno("malloc");
	memcpy(s, v + from, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = s[n / 2];
	free(s);
	return m;
}

/*
 * The series' total, the means of the first and of the last k (100)
 * and their ratio, the medians of the same and theirs (less moved by a
 * few slow ones), the median and the maximum of all.
 */
static void print_series(const double *v, unsigned long n, double total)
{
	unsigned long k = n < 100 ? n : 100;
	double first = mean(v, 0, k), last = mean(v, n - k, n);
	double mf = median_of(v, 0, k), ml = median_of(v, n - k, n);
	double *s = malloc(n * sizeof(*s));

	if (!s)
		die_errno("malloc");
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	printf("n=%lu total=%.6f first%lu=%.6f last%lu=%.6f ratio=%.3f "
	       "first%lu_med=%.6f last%lu_med=%.6f ratio_med=%.3f "
	       "median=%.6f max=%.6f", n, total, k, first, k, last,
	       first > 0 ? last / first : 0, k, mf, k, ml,
	       mf > 0 ? ml / mf : 0, s[n / 2], s[n - 1]);
	free(s);
}

/* ===== extref: the image through libextref ===== */

static extref_fs_t xfs;
static ext2_filsys efs;
static double t_open;

static void x_open(const char *image)
{
	double t0 = now();

	check(extref_fs_open(image, EXTREF_OPEN_RW, &xfs, NULL), "open");
	efs = extref_fs_ext2(xfs);
	check(ext2fs_read_bitmaps(efs), "read bitmaps");
	t_open = now() - t0;
}

static void x_close(void)
{
	struct extref_tree_stats st;
	double t0;

	check(extref_tree_get_stats(extref_fs_tree(xfs), &st), "tree stats");
	t0 = now();
	check(extref_fs_close(xfs), "close");
	printf(" open=%.6f close=%.6f tree_records=%llu tree_depth=%u "
	       "tree_nodes=%u\n", t_open, now() - t0,
	       (unsigned long long)st.records, st.depth, st.nodes);
}

static ext2_ino_t x_lookup(const char *path)
{
	ext2_ino_t ino;

	check(ext2fs_namei(efs, EXT2_ROOT_INO, EXT2_ROOT_INO, path, &ino),
	      path);
	return ino;
}

/* Split path into its directory's inode and the last name. */
static ext2_ino_t x_parent(const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	ext2_ino_t ino;

	if (!slash) {
		*name = path;
		return EXT2_ROOT_INO;
	}
	*name = slash + 1;
	if (slash == path)
		return EXT2_ROOT_INO;
	dir = strndup(path, slash - path);
	ino = x_lookup(dir);
	free(dir);
	return ino;
}

static errcode_t count_map(const struct extref_mapping *m, void *priv)
{
	unsigned long *n = priv;

	(void)m;
	(*n)++;
	return 0;
}

/* Extents as libextref reports them (split where sharing changes). */
static unsigned long x_extents(ext2_ino_t ino)
{
	unsigned long n = 0;

	check(extref_iterate_mappings(xfs, ino, count_map, &n), "mappings");
	return n;
}

static ext2_ino_t x_create(const char *path)
{
	const char *name;
	ext2_ino_t dir = x_parent(path, &name), ino;

	check(extref_create_file(xfs, dir, name, 0644, NULL, &ino), path);
	return ino;
}

static void x_make(const char *path, unsigned long long size,
		   unsigned long pieces)
{
	unsigned int bs = efs->blocksize;
	unsigned long long nblk = size / bs, s, e, off;
	ext2_ino_t ino, scratch = 0;
	char *buf = xmalloc_aligned(CHUNK), *sname = NULL;
	const char *name;
	ext2_ino_t dir;
	unsigned long i;
	double t0;

	if (size % bs || pieces == 0 || pieces > nblk) {
		fprintf(stderr, "%s: SIZE must be whole blocks, EXTENTS in "
			"[1, blocks]\n", bench_prog);
		exit(2);
	}
	t0 = now();
	ino = x_create(path);
	if (pieces == 1) {
		/*
		 * One call: every block is allocated before any is mapped, so
		 * the extent tree's own blocks do not land inside the data.
		 */
		char *all = big_buffer(size);

		check(extref_pwrite(xfs, ino, 0, all, size), "pwrite");
		munmap(all, size);
	} else {
		if (asprintf(&sname, "%s.scratch", path) < 0)
			die_errno("asprintf");
		scratch = x_create(sname);
		for (i = 0; i < pieces; i++) {
			piece(nblk, pieces, i, &s, &e);
			for (off = s * bs; off < e * bs; off += CHUNK) {
				unsigned long long len = e * bs - off < CHUNK ?
							 e * bs - off : CHUNK;

				pattern(buf, len, off);
				check(extref_pwrite(xfs, ino, off, buf, len),
				      "pwrite");
			}
			/* One block of the scratch file after each piece. */
			pattern(buf, bs, ~0ULL - i);
			check(extref_pwrite(xfs, scratch, (__u64)i * bs, buf,
					    bs), "pwrite scratch");
		}
		dir = x_parent(sname, &name);
		check(extref_unlink(xfs, dir, name, 0), "unlink scratch");
		free(sname);
	}
	printf("make backend=extref file=%s size=%llu pieces=%lu "
	       "extents=%lu seconds=%.3f", path, size, pieces,
	       x_extents(ino), now() - t0);
	free(buf);
}

static int x_main(const char *image, int argc, char **argv)
{
	const char *cmd = argv[0], *name;
	ext2_ino_t src, dir, ino;
	double t0, t;

	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	x_open(image);
	if (!strcmp(cmd, "make") && argc == 4) {
		x_make(argv[1], parse_size(argv[2]),
		       strtoul(argv[3], NULL, 0));
	} else if (!strcmp(cmd, "extents") && argc == 2) {
		printf("extents backend=extref file=%s extents=%lu", argv[1],
		       x_extents(x_lookup(argv[1])));
	} else if (!strcmp(cmd, "reflink") && argc == 3) {
		src = x_lookup(argv[1]);
		dir = x_parent(argv[2], &name);
		t0 = now();
		check(extref_reflink(xfs, src, dir, name, 0, NULL, &ino),
		      "reflink");
		t = now() - t0;
		printf("reflink backend=extref src=%s extents=%lu op=%.6f",
		       argv[1], x_extents(src), t);
	} else if (!strcmp(cmd, "reflinks") && argc == 4) {
		unsigned long n = strtoul(argv[2], NULL, 0), i;
		double *v = malloc((n ? n : 1) * sizeof(*v)), total;
		char dst[4096];

		if (!v || n == 0)
			die_errno("reflinks");
		src = x_lookup(argv[1]);
		dir = x_parent(argv[3], &name);
		t = now();
		for (i = 0; i < n; i++) {
			snprintf(dst, sizeof(dst), "%s.%lu", name, i);
			t0 = now();
			check(extref_reflink(xfs, src, dir, dst, 0, NULL,
					     &ino), "reflink");
			v[i] = now() - t0;
		}
		total = now() - t;
		printf("reflinks backend=extref src=%s ", argv[1]);
		print_series(v, n, total);
		free(v);
	} else if (!strcmp(cmd, "cow") && argc == 4) {
		unsigned long long off = parse_size(argv[2]);
		unsigned long long len = parse_size(argv[3]);
		char *buf = xmalloc_aligned(len ? len : 1);

		ino = x_lookup(argv[1]);
		pattern(buf, len, off ^ 0x5555);
		t0 = now();
		check(extref_pwrite(xfs, ino, off, buf, len), "pwrite");
		t = now() - t0;
		printf("cow backend=extref file=%s off=%llu len=%llu op=%.6f "
		       "extents_after=%lu", argv[1], off, len, t,
		       x_extents(ino));
		free(buf);
	} else {
		fprintf(stderr, "%s: bad command\n", bench_prog);
		extref_fs_abort(xfs);
		return 2;
	}
	x_close();
	return 0;
}

/* ===== posix: a mounted filesystem through the kernel ===== */

static unsigned long p_extents(const char *path)
{
	struct fiemap fm;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die_errno(path);
	if (fsync(fd))
		die_errno("fsync");
	memset(&fm, 0, sizeof(fm));
	fm.fm_length = FIEMAP_MAX_OFFSET;
	fm.fm_flags = FIEMAP_FLAG_SYNC;
	fm.fm_extent_count = 0;		/* count only */
	if (ioctl(fd, FS_IOC_FIEMAP, &fm))
		die_errno("FIEMAP");
	close(fd);
	return fm.fm_mapped_extents;
}

static void p_write(int fd, const char *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0)
			die_errno("pwrite");
		buf += n;
		len -= n;
		off += n;
	}
}

static void p_make(const char *path, unsigned long long size,
		   unsigned long pieces)
{
	const unsigned int bs = 4096;
	unsigned long long nblk = size / bs, s, e, off;
	char *buf = xmalloc_aligned(CHUNK), *sname;
	unsigned long i;
	double t0 = now();
	int fd, sfd;

	if (size % bs || pieces == 0 || pieces > nblk) {
		fprintf(stderr, "%s: SIZE must be whole 4 KiB blocks, "
			"EXTENTS in [1, blocks]\n", bench_prog);
		exit(2);
	}
	if (pieces == 1) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			die_errno(path);
		if (fallocate(fd, 0, 0, size))
			die_errno("fallocate");
		for (off = 0; off < size; off += CHUNK) {
			size_t len = size - off < CHUNK ? size - off : CHUNK;

			pattern(buf, len, off);
			p_write(fd, buf, len, off);
		}
	} else {
		/*
		 * O_DIRECT allocates at once, so the scratch file's block
		 * lands right after each piece.
		 */
		if (asprintf(&sname, "%s.scratch", path) < 0)
			die_errno("asprintf");
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT, 0644);
		sfd = open(sname, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT,
			   0644);
		if (fd < 0 || sfd < 0)
			die_errno(path);
		for (i = 0; i < pieces; i++) {
			piece(nblk, pieces, i, &s, &e);
			for (off = s * bs; off < e * bs; off += CHUNK) {
				size_t len = e * bs - off < CHUNK ?
					     e * bs - off : CHUNK;

				pattern(buf, len, off);
				p_write(fd, buf, len, off);
			}
			pattern(buf, bs, ~0ULL - i);
			p_write(sfd, buf, bs, (off_t)i * bs);
		}
		close(sfd);
		if (unlink(sname))
			die_errno("unlink");
		free(sname);
	}
	if (fsync(fd))
		die_errno("fsync");
	close(fd);
	printf("make backend=posix file=%s size=%llu pieces=%lu extents=%lu "
	       "seconds=%.3f\n", path, size, pieces, p_extents(path),
	       now() - t0);
	free(buf);
}

/* Create dst and clone src into it; *with_sync gets the time with fsync. */
static double p_clone(int sfd, const char *dst, double *with_sync)
{
	double t0 = now(), t;
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0)
		die_errno(dst);
	if (ioctl(fd, FICLONE, sfd))
		die_errno("FICLONE");
	t = now() - t0;
	if (with_sync) {
		if (fsync(fd))
			die_errno("fsync");
		*with_sync = now() - t0;
	}
	close(fd);
	return t;
}

static int p_main(int argc, char **argv)
{
	const char *cmd = argv[0];
	double t, ts;
	int sfd;

	if (!strcmp(cmd, "make") && argc == 4) {
		p_make(argv[1], parse_size(argv[2]),
		       strtoul(argv[3], NULL, 0));
	} else if (!strcmp(cmd, "extents") && argc == 2) {
		printf("extents backend=posix file=%s extents=%lu\n", argv[1],
		       p_extents(argv[1]));
	} else if (!strcmp(cmd, "reflink") && argc == 3) {
		sfd = open(argv[1], O_RDONLY);
		if (sfd < 0)
			die_errno(argv[1]);
		t = p_clone(sfd, argv[2], &ts);
		printf("reflink backend=posix src=%s extents=%lu op=%.6f "
		       "op_fsync=%.6f\n", argv[1], p_extents(argv[1]), t, ts);
		close(sfd);
	} else if (!strcmp(cmd, "reflinks") && argc == 4) {
		unsigned long n = strtoul(argv[2], NULL, 0), i;
		double *v = malloc((n ? n : 1) * sizeof(*v)), total;
		char dst[4096];

		if (!v || n == 0)
			die_errno("reflinks");
		sfd = open(argv[1], O_RDONLY);
		if (sfd < 0)
			die_errno(argv[1]);
		t = now();
		for (i = 0; i < n; i++) {
			snprintf(dst, sizeof(dst), "%s.%lu", argv[3], i);
			v[i] = p_clone(sfd, dst, NULL);
		}
		total = now() - t;
		close(sfd);
		printf("reflinks backend=posix src=%s ", argv[1]);
		print_series(v, n, total);
		printf("\n");
		free(v);
	} else if (!strcmp(cmd, "cow") && argc == 4) {
		unsigned long long off = parse_size(argv[2]);
		unsigned long long len = parse_size(argv[3]);
		char *buf = xmalloc_aligned(len ? len : 1);
		double t0;
		int fd = open(argv[1], O_WRONLY);

		if (fd < 0)
			die_errno(argv[1]);
		pattern(buf, len, off ^ 0x5555);
		t0 = now();
		p_write(fd, buf, len, off);
		t = now() - t0;
		if (fsync(fd))
			die_errno("fsync");
		ts = now() - t0;
		close(fd);
		printf("cow backend=posix file=%s off=%llu len=%llu op=%.6f "
		       "op_fsync=%.6f extents_after=%lu\n", argv[1], off, len,
		       t, ts, p_extents(argv[1]));
		free(buf);
	} else {
		fprintf(stderr, "%s: bad command\n", bench_prog);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	bench_prog = "reflink_bench";
	if (argc < 3) {
		fprintf(stderr,
			"usage: %s IMAGE|--posix make FILE SIZE EXTENTS\n"
			"       %s IMAGE|--posix extents FILE\n"
			"       %s IMAGE|--posix reflink SRC DST\n"
			"       %s IMAGE|--posix reflinks SRC N PREFIX\n"
			"       %s IMAGE|--posix cow FILE OFF LEN\n",
			bench_prog, bench_prog, bench_prog, bench_prog,
			bench_prog);
		return 2;
	}
	if (!strcmp(argv[1], "--posix"))
		return p_main(argc - 2, argv + 2);
	return x_main(argv[1], argc - 2, argv + 2);
}
