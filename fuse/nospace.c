/*
 * nospace.c --- a request that ran out of space runs once more after the
 * batch is committed.
 *
 * Blocks a batch frees (a file removed, truncated, rewritten copy-on-write)
 * stay in use until the batch commits: given to another file before, a
 * crash would leave the committed file reading that file's bytes.  So a
 * request can meet ENOSPC while the batch holds the space it needs (rm of
 * a large file, then a write as large: fstests generic/213).  The kernel's
 * ext4 commits its journal and tries again (ext4_should_retry_alloc); so
 * do these wrappers of the handlers that allocate: the failing request was
 * rolled back alone, the batch is committed, and the request runs again.
 */
#include <errno.h>
#include "xfuse.h"

/* After -ENOSPC: 1 when a commit freed what the batch held. */
static int committed_for_space(int res)
{
	return res == -ENOSPC && xf.batch && extref_tx_pending(xf.xfs) &&
	       xf_commit() == 0;
}

#define AGAIN(type, call)				\
	do {						\
		type r_ = (call);			\
		if (committed_for_space((int)r_))	\
			r_ = (call);			\
		return r_;				\
	} while (0)

int xf_mknod_r(const char *path, mode_t mode, dev_t rdev)
{
	AGAIN(int, xf_mknod(path, mode, rdev));
}

int xf_mkdir_r(const char *path, mode_t mode)
{
	AGAIN(int, xf_mkdir(path, mode));
}

int xf_symlink_r(const char *target, const char *path)
{
	AGAIN(int, xf_symlink(target, path));
}

int xf_rename_r(const char *from, const char *to, unsigned int flags)
{
	AGAIN(int, xf_rename(from, to, flags));
}

int xf_link_r(const char *from, const char *to)
{
	AGAIN(int, xf_link(from, to));
}

int xf_truncate_r(const char *path, off_t size, struct fuse_file_info *fi)
{
	AGAIN(int, xf_truncate(path, size, fi));
}

int xf_open_r(const char *path, struct fuse_file_info *fi)
{
	AGAIN(int, xf_open(path, fi));
}

int xf_create_r(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	AGAIN(int, xf_create(path, mode, fi));
}

int xf_write_r(const char *path, const char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	AGAIN(int, xf_write(path, buf, size, off, fi));
}

int xf_fallocate_r(const char *path, int mode, off_t off, off_t len,
		   struct fuse_file_info *fi)
{
	AGAIN(int, xf_fallocate(path, mode, off, len, fi));
}

ssize_t xf_copy_file_range_r(const char *path_in,
			     struct fuse_file_info *fi_in, off_t off_in,
			     const char *path_out,
			     struct fuse_file_info *fi_out, off_t off_out,
			     size_t len, int flags)
{
	AGAIN(ssize_t, xf_copy_file_range(path_in, fi_in, off_in, path_out,
					  fi_out, off_out, len, flags));
}

int xf_ioctl_r(const char *path, int cmd, void *arg,
	       struct fuse_file_info *fi, unsigned int flags, void *data)
{
	AGAIN(int, xf_ioctl(path, cmd, arg, fi, flags, data));
}

int xf_setxattr_r(const char *path, const char *name, const char *value,
		  size_t size, int flags)
{
	AGAIN(int, xf_setxattr(path, name, value, size, flags));
}
