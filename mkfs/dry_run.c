/*
 * dry_run.c --- mkfs.extref -n: what mke2fs would lay out, nothing
 * written, as mke2fs -n.
 *
 * Every option, the size and the source (measured when the size is to
 * come from it) are checked as for a real run; then mke2fs runs with -n
 * and its report is printed.  For an image that does not exist yet it
 * runs on a sparse memory file of the planned size (memfd, which the
 * child opens through /proc/self/fd): no file is made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mkfs.h"

int dry_run(const struct mkfs_opts *o, const struct mkfs_target *t)
{
	struct mkfs_opts copy = *o;
	char path[64];
	int fd, rc;

	if (t->exists)
		return run_mke2fs(o, t) ? 1 : 0;
	fd = memfd_create("mkfs.extref.dry-run", 0);	/* the child's too */
	if (fd < 0 || ftruncate(fd, (off_t)t->fs_bytes) < 0) {
		error_line("%s: -n on a new image: cannot make a memory file "
			   "of %llu bytes: %s", o->image,
			   (unsigned long long)t->fs_bytes, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	copy.image = path;
	rc = run_mke2fs(&copy, t) ? 1 : 0;
	close(fd);
	return rc;
}
