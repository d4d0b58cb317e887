/*
 * fsck_bench.c --- images for the fsck.extref benchmark, and the
 * in-process memory figure of the checker.
 *
 * usage:
 *   fsck_bench build IMAGE KIND NFILES PER SRCBLOCKS [--sync]
 *   fsck_bench clone-mnt DIR KIND NFILES PER SRCBLOCKS
 *   fsck_bench check IMAGE
 *   fsck_bench run OUT CMD [ARGS...]
 *
 * build: on an empty extref image, one source file /src of SRCBLOCKS
 * 4 KiB blocks (extref_pwrite), then NFILES files /dDDDD/fFFFF (1000 per
 * directory), each made by PER extref_clone_range calls of one block of
 * /src, at destination blocks 0, 2, 4, ... (holes between, so no two
 * mappings merge): PER single-block shared mappings per file.  KIND says
 * which source block mapping j of file f takes:
 *   spread    a pseudo-random block (the same sequence on every run);
 *   hot       block 0 (one block shared NFILES * PER ways);
 *   distinct  block f * PER + j (every clone a block of its own, each
 *             block mapped twice: NFILES * PER distinct shared blocks).
 * Every library call commits the tree, which flushes the I/O channel
 * (fsync) four times; the builder opens the image with
 * EXTREF_OPEN_NOSYNC (as mkfs.extref -d does: writes in order, one sync
 * at close), since the build is not what is measured.  --sync syncs
 * every commit.  Prints the build time and the counts.
 *
 * clone-mnt: the same files and clones on a mounted filesystem (XFS with
 * reflink=1) through FICLONERANGE, for xfs_repair -n to compare with.
 *
 * check: opens IMAGE read-only as fsck.extref does, resets the peak RSS
 * (/proc/self/clear_refs), runs extref_fsck(-n) and prints its time, its
 * counts, the RSS after opening, the peak RSS during the check, and
 * (peak - RSS after open) / mappings.
 *
 * run: runs CMD and writes to OUT "wall_s peak_kib status cpu_s": its
 * wall-clock time, peak RSS, exit status and CPU time (user + system,
 * from wait4, in microseconds: on a machine shared with other work the
 * CPU time is what the load disturbs least).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "extref.h"
#include "extref_ops.h"
#include "extref_fsck.h"
#include "bench_util.h"

#define BS		4096ULL
#define PER_DIR		1000U

#ifndef FICLONERANGE
struct file_clone_range {
	int64_t		src_fd;
	uint64_t	src_offset;
	uint64_t	src_length;
	uint64_t	dest_offset;
};
#define FICLONERANGE	_IOW(0x94, 13, struct file_clone_range)
#endif


enum kind { SPREAD, HOT, DISTINCT };

static enum kind parse_kind(const char *s)
{
	if (!strcmp(s, "spread"))
		return SPREAD;
	if (!strcmp(s, "hot"))
		return HOT;
	if (!strcmp(s, "distinct"))
		return DISTINCT;
	fprintf(stderr, "%s: unknown kind '%s' (spread, hot, distinct)\n",
		bench_prog, s);
	exit(2);
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The source block that mapping j of file f clones. */
static uint64_t pick(enum kind k, uint64_t f, uint64_t j, uint64_t per,
		     uint64_t src_blocks)
{
	switch (k) {
	case HOT:
		return 0;
	case DISTINCT:
		return (f * per + j) % src_blocks;
	default:
		return splitmix(f * per + j) % src_blocks;
	}
}

/* 1 MiB of source data; every block different. */
static void fill(char *buf, size_t len, uint64_t first_block)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t v = splitmix(first_block * BS + i);

		memcpy(buf + i, &v, 8);
	}
}

/* ----- build ----- */

static ext2_ino_t make_dir(ext2_filsys fs, const char *name)
{
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_mkdir(fs, EXT2_ROOT_INO, 0, name);
	if (err == EXT2_ET_DIR_NO_SPACE) {
		check(ext2fs_expand_dir(fs, EXT2_ROOT_INO), "expand /");
		err = ext2fs_mkdir(fs, EXT2_ROOT_INO, 0, name);
	}
	check(err, "mkdir");
	check(ext2fs_lookup(fs, EXT2_ROOT_INO, name, strlen(name), NULL, &ino),
	      "lookup");
	return ino;
}

static int build(int argc, char **argv)
{
	const char *img = argv[2];
	enum kind k = parse_kind(argv[3]);
	uint64_t nfiles = strtoull(argv[4], NULL, 0);
	uint64_t per = strtoull(argv[5], NULL, 0);
	uint64_t src_blocks = strtoull(argv[6], NULL, 0);
	int sync = argc > 7 && !strcmp(argv[7], "--sync");
	struct extref_cred cred = { .uid = 0, .gid = 0, .umask = 022 };
	ext2_filsys fs;
	extref_fs_t xfs;
	ext2_ino_t src, dir = 0, ino;
	uint64_t f, j, off, clones = 0;
	__u64 done;
	double t0, t_src, t1;
	char name[32], *buf;
	size_t chunk = 1 << 20;

	if (!nfiles || !per || !src_blocks)
		return 2;
	if (k == DISTINCT && src_blocks < nfiles * per) {
		fprintf(stderr, "%s: distinct needs SRCBLOCKS >= NFILES * PER\n",
			bench_prog);
		return 2;
	}
	t0 = now();
	check(extref_fs_open(img, EXTREF_OPEN_RW |
			     (sync ? 0 : EXTREF_OPEN_NOSYNC), &xfs, NULL),
	      "open");
	fs = extref_fs_ext2(xfs);
	check(ext2fs_read_bitmaps(fs), "read bitmaps");
	if (fs->blocksize != BS) {
		fprintf(stderr, "%s: needs 4 KiB blocks\n", bench_prog);
		return 1;
	}
	buf = malloc(chunk);
	if (!buf)
		return 1;
	check(extref_create_file(xfs, EXT2_ROOT_INO, "src", 0644, &cred, &src),
	      "create /src");
	for (off = 0; off < src_blocks * BS; off += chunk) {
		uint64_t n = src_blocks * BS - off < chunk ?
			     src_blocks * BS - off : chunk;

		fill(buf, n, off / BS);
		check(extref_pwrite(xfs, src, off, buf, n), "write /src");
	}
	t_src = now() - t0;
	fprintf(stderr, "%s: /src %llu blocks written in %.1f s\n", bench_prog,
		(unsigned long long)src_blocks, t_src);
	for (f = 0; f < nfiles; f++) {
		if (f % PER_DIR == 0) {
			snprintf(name, sizeof(name), "d%04llu",
				 (unsigned long long)(f / PER_DIR));
			dir = make_dir(fs, name);
		}
		snprintf(name, sizeof(name), "f%04llu",
			 (unsigned long long)(f % PER_DIR));
		check(extref_create_file(xfs, dir, name, 0644, &cred, &ino),
		      "create");
		for (j = 0; j < per; j++) {
			uint64_t b = pick(k, f, j, per, src_blocks);

			check(extref_clone_range(xfs, src, b * BS, ino,
						 2 * j * BS, BS, &done),
			      "clone_range");
			clones++;
		}
		if ((f + 1) % 10000 == 0)
			fprintf(stderr, "%s: %llu files, %llu clones, %.1f s\n",
				bench_prog, (unsigned long long)f + 1,
				(unsigned long long)clones, now() - t0);
	}
	check(extref_fs_close(xfs), "close");
	t1 = now() - t0;
	printf("build kind=%s files=%llu clones_per_file=%llu "
	       "clone_mappings=%llu src_blocks=%llu src_s=%.2f total_s=%.2f "
	       "clones_per_s=%.0f%s\n",
	       argv[3], (unsigned long long)nfiles, (unsigned long long)per,
	       (unsigned long long)clones, (unsigned long long)src_blocks,
	       t_src, t1, clones / (t1 - t_src), sync ? " (fsync)" : "");
	free(buf);
	return 0;
}

/* ----- the same on a mounted filesystem (FICLONERANGE) ----- */

static int clone_mnt(int argc, char **argv)
{
	const char *top = argv[2];
	enum kind k = parse_kind(argv[3]);
	uint64_t nfiles = strtoull(argv[4], NULL, 0);
	uint64_t per = strtoull(argv[5], NULL, 0);
	uint64_t src_blocks = strtoull(argv[6], NULL, 0);
	uint64_t f, j, off, clones = 0;
	char path[4096], *buf;
	size_t chunk = 1 << 20;
	int sfd, dfd = -1;
	double t0, t_src, t1;

	(void) argc;
	if (!nfiles || !per || !src_blocks)
		return 2;
	t0 = now();
	buf = malloc(chunk);
	if (!buf)
		return 1;
	snprintf(path, sizeof(path), "%s/src", top);
	sfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (sfd < 0)
		die_errno(path);
	for (off = 0; off < src_blocks * BS; off += chunk) {
		uint64_t n = src_blocks * BS - off < chunk ?
			     src_blocks * BS - off : chunk;

		fill(buf, n, off / BS);
		if (pwrite(sfd, buf, n, off) != (ssize_t)n)
			die_errno("write src");
	}
	if (fsync(sfd))
		die_errno("fsync src");
	t_src = now() - t0;
	for (f = 0; f < nfiles; f++) {
		if (f % PER_DIR == 0) {
			snprintf(path, sizeof(path), "%s/d%04llu", top,
				 (unsigned long long)(f / PER_DIR));
			if (mkdir(path, 0755) && errno != EEXIST)
				die_errno(path);
		}
		snprintf(path, sizeof(path), "%s/d%04llu/f%04llu", top,
			 (unsigned long long)(f / PER_DIR),
			 (unsigned long long)(f % PER_DIR));
		dfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (dfd < 0)
			die_errno(path);
		for (j = 0; j < per; j++) {
			struct file_clone_range r = {
				.src_fd = sfd,
				.src_offset = pick(k, f, j, per, src_blocks) * BS,
				.src_length = BS,
				.dest_offset = 2 * j * BS,
			};

			if (ioctl(dfd, FICLONERANGE, &r))
				die_errno("FICLONERANGE");
			clones++;
		}
		close(dfd);
	}
	close(sfd);
	free(buf);
	t1 = now() - t0;
	printf("clone-mnt kind=%s files=%llu clones_per_file=%llu "
	       "clone_mappings=%llu src_blocks=%llu src_s=%.2f total_s=%.2f\n",
	       argv[3], (unsigned long long)nfiles, (unsigned long long)per,
	       (unsigned long long)clones, (unsigned long long)src_blocks,
	       t_src, t1);
	return 0;
}

/* ----- the checker in-process ----- */

/* A "Vm...:" figure of /proc/self/status, in KiB. */
static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t kl = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int reset_peak(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	int ok;

	if (fd < 0)
		return 0;
	ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok;
}

static int check_img(char **argv)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_NO };
	struct extref_fsck_result res;
	ext2_filsys fs;
	long rss_open, peak, rss_before;
	struct rusage ru;
	double t0, t;
	int reset;

	rss_before = status_kib("VmRSS");
	check(ext2fs_open2(argv[2], NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs), "open");
	rss_open = status_kib("VmRSS");
	reset = reset_peak();
	t0 = now();
	check(extref_fsck(fs, &o, &res), "extref_fsck");
	t = now() - t0;
	peak = status_kib("VmHWM");
	getrusage(RUSAGE_SELF, &ru);
	if (!reset)
		peak = ru.ru_maxrss;
	ext2fs_close_free(&fs);
	printf("check inodes=%llu mappings=%llu records=%llu "
	       "shared_blocks=%llu problems=%d seconds=%.3f "
	       "rss_start_kib=%ld rss_open_kib=%ld peak_kib=%ld "
	       "bytes_per_mapping=%.1f peak_reset=%s\n",
	       (unsigned long long)res.inodes,
	       (unsigned long long)res.mappings,
	       (unsigned long long)res.records,
	       (unsigned long long)res.shared_blocks, res.problems, t,
	       rss_before, rss_open, peak,
	       res.mappings ? (peak - rss_open) * 1024.0 / res.mappings : 0.0,
	       reset ? "yes" : "no");
	return res.problems ? 1 : 0;
}

/* ----- one timed run of a command ----- */

static int run_cmd(int argc, char **argv)
{
	struct rusage ru;
	double t0, wall, cpu;
	int status, rc;
	pid_t pid;
	FILE *out;

	(void) argc;
	t0 = now();
	pid = fork();
	if (pid < 0)
		die_errno("fork");
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		fprintf(stderr, "%s: %s: %s\n", bench_prog, argv[3],
			strerror(errno));
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0)
		die_errno("wait4");
	wall = now() - t0;
	cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	out = fopen(argv[2], "w");
	if (!out)
		die_errno(argv[2]);
	fprintf(out, "%.4f %ld %d %.4f\n", wall, ru.ru_maxrss, rc, cpu);
	fclose(out);
	return rc;
}

int main(int argc, char **argv)
{
	bench_prog = "fsck_bench";
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	if (argc >= 7 && !strcmp(argv[1], "build"))
		return build(argc, argv);
	if (argc == 7 && !strcmp(argv[1], "clone-mnt"))
		return clone_mnt(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "check"))
		return check_img(argv);
	if (argc >= 4 && !strcmp(argv[1], "run"))
		return run_cmd(argc, argv);
	fprintf(stderr,
		"usage: %s build IMAGE KIND NFILES PER SRCBLOCKS [--sync]\n"
		"       %s clone-mnt DIR KIND NFILES PER SRCBLOCKS\n"
		"       %s check IMAGE\n"
		"       %s run OUT CMD [ARGS...]\n"
		"KIND: spread, hot or distinct\n", bench_prog, bench_prog,
		bench_prog, bench_prog);
	return 2;
}
