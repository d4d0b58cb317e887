/*
 * fz_archive.c --- what the archive targets share: an empty image made
 * once by the stock mke2fs with the target's options, and one populate
 * run (extref_populate_archive, libfs/builder/populate_archive.c) of the
 * input, handed over in a memory file as mkfs.extref -d hands over the
 * archive's descriptor, into a fresh copy of it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fz.h"
#include "extref_builder.h"

static char empty[64];		/* the template image */

static void remove_empty(void)
{
	unlink(empty);
}

static void make_empty(const char *mke2fs_opts)
{
	char cmd[512];
	int fd;

	snprintf(empty, sizeof(empty), "/dev/shm/extref-fuzz-archive.XXXXXX");
	fd = mkstemp(empty);
	if (fd < 0) {
		snprintf(empty, sizeof(empty), "/tmp/extref-fuzz-archive.XXXXXX");
		fd = mkstemp(empty);
	}
	if (fd < 0)
		abort();
	close(fd);
	atexit(remove_empty);
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext4 -b 1024 %s "
		 "-E lazy_itable_init=1 %s 8M >/dev/null 2>&1", mke2fs_opts,
		 empty);
	if (system(cmd))
		abort();
}

void fz_archive_run(const uint8_t *data, size_t size,
		    const char *mke2fs_opts, int recompute_quota)
{
	struct extref_populate p;
	struct fz_image img;
	extref_fs_t xfs;
	errcode_t err;
	int fd;

	fz_init();
	if (!empty[0])
		make_empty(mke2fs_opts);
	fz_image_copy(empty, &img);
	fd = memfd_create("archive", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	err = extref_fs_open(img.path, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			     &xfs, NULL);
	if (err)
		abort();	/* the template, not the input */
	memset(&p, 0, sizeof(p));
	err = extref_populate_archive(xfs, fd, &p);
	fz_report("populate", err);
	/* quotas are the caller's, as mkfs.extref -d does them */
	if (!err && recompute_quota)
		err = extref_quota_recompute(xfs);
	if (!err)
		err = extref_fs_close(xfs);
	else
		extref_fs_abort(xfs);
	fz_report("close", err);
	extref_populate_free(&p);
	close(fd);
}
