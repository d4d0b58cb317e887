/*
 * fuzz_archive.c --- libFuzzer target: mkfs.extref -d ARCHIVE's reading
 * of the archive (mkfs/tar.c, plain or compressed tar through
 * libarchive), unpacked into a private directory under a private TMPDIR
 * as mkfs does, then walked as the source is (nftw) and removed.
 *
 * The boundary is one call, archive_run() below, over mkfs's own
 * tar_unpack(): when the archive code changes, only that function
 * changes.  mkfs's fatal() exits; here it is replaced (mkfs/util.c is
 * not linked) by one that returns to archive_run() with longjmp, and
 * the objects tar_unpack() had made are freed there: libarchive's two
 * handles (seen through the linker's --wrap of their constructors and
 * destructors, so that one tar_unpack freed is not freed again) and
 * the descriptors it opened.  Run as root, the unpacking runs as
 * nobody, so that an entry that escaped the unpack directory could not
 * touch the host.
 */
#define _XOPEN_SOURCE 700
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <archive.h>
#include "fz.h"
#include "../mkfs/mkfs.h"

const char *prog = "mkfs.extref";

static jmp_buf on_fatal;
static struct archive *made[2];	/* tar_unpack's read and write handles */

struct archive *__real_archive_read_new(void);
struct archive *__real_archive_write_disk_new(void);
struct archive *__wrap_archive_read_new(void);
struct archive *__wrap_archive_write_disk_new(void);

struct archive *__wrap_archive_read_new(void)
{
	return made[0] = __real_archive_read_new();
}

struct archive *__wrap_archive_write_disk_new(void)
{
	return made[1] = __real_archive_write_disk_new();
}

/* A handle tar_unpack frees itself (also before a fatal()) is not ours. */
int __real_archive_read_free(struct archive *a);
int __real_archive_write_free(struct archive *a);
int __wrap_archive_read_free(struct archive *a);
int __wrap_archive_write_free(struct archive *a);

int __wrap_archive_read_free(struct archive *a)
{
	if (a == made[0])
		made[0] = NULL;
	return __real_archive_read_free(a);
}

int __wrap_archive_write_free(struct archive *a)
{
	if (a == made[1])
		made[1] = NULL;
	return __real_archive_write_free(a);
}

void error_line(const char *fmt, ...)
{
	(void)fmt;
}

void fatal(const char *fmt, ...)
{
	(void)fmt;
	longjmp(on_fatal, 1);
}

static char work[64];		/* our TMPDIR, the archive file inside */
static int remove_top;

/*
 * As root, the unpacking runs as nobody (effective ids: libFuzzer, root
 * again after it, writes its corpus where it was told).
 */
static void as_nobody(int on)
{
	if (getuid() != 0)
		return;
	if (on ? setegid(65534) || seteuid(65534)
	       : seteuid(0) || setegid(0)) {
		perror("fuzz_archive: cannot change the effective ids");
		abort();
	}
}

/* Everything below work (level 0, work itself, stays: with atexit too). */
static int rm_entry(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)st; (void)type;
	if (ftw->level > 0 || remove_top)
		remove(path);
	return 0;
}

static void remove_work(void)
{
	remove_top = 1;
	nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void init(void)
{
	fz_init();
	if (work[0])
		return;
	if (getuid() == 0 && setgroups(0, NULL))
		abort();
	snprintf(work, sizeof(work), "/dev/shm/extref-fuzz-archive.XXXXXX");
	if (!mkdtemp(work)) {
		snprintf(work, sizeof(work), "/tmp/extref-fuzz-archive.XXXXXX");
		if (!mkdtemp(work))
			abort();
	}
	if (getuid() == 0 && chown(work, 65534, 65534))
		abort();
	setenv("TMPDIR", work, 1);
	atexit(remove_work);
}

static int visit(const char *path, const struct stat *st, int type,
		 struct FTW *ftw)
{
	(void)path; (void)st; (void)type; (void)ftw;
	return 0;
}

/* Unpack archive as mkfs.extref -d does; the directory, then gone. */
static void archive_run(const char *archive)
{
	static struct mkfs_opts o;	/* static: longjmp keeps it */
	static char was_open[256];
	int cwd = open(".", O_RDONLY | O_DIRECTORY), fd;

	for (fd = 0; fd < 256; fd++)
		was_open[fd] = fcntl(fd, F_GETFD) >= 0;
	memset(&o, 0, sizeof(o));
	o.source = archive;
	made[0] = made[1] = NULL;
	/* tar_unpack opens "." as nobody: there, work is nobody's. */
	if (cwd < 0 || chdir(work))
		abort();
	if (!setjmp(on_fatal)) {
		as_nobody(1);
		tar_unpack(&o);		/* frees its handles */
		nftw(o.source, visit, 16, FTW_PHYS);
		as_nobody(0);
	} else {
		as_nobody(0);
		/* What a fatal() left behind: the handles, below the
		 * descriptors and the cwd. */
		if (made[0])
			archive_read_free(made[0]);
		if (made[1])
			archive_write_free(made[1]);
	}
	if (fchdir(cwd))
		abort();
	for (fd = 0; fd < 256; fd++)
		if (!was_open[fd] && fcntl(fd, F_GETFD) >= 0)
			close(fd);
	close(cwd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[96];
	FILE *f;

	init();
	snprintf(path, sizeof(path), "%s/in.tar", work);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	archive_run(path);
	/* The unpack directories (mkfs.extref.XXXXXX) and the archive. */
	nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
