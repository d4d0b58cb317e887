/*
 * data.c --- a file's data: open and create (the handle: handle.c),
 * read, write (copy-on-write: extref_pwrite gives shared blocks new
 * ones), flush and fsync.
 *
 * Durability: every request is a step of the mount's batch (loop.c),
 * atomic on its own; fsync and fsyncdir commit the batch, so that what
 * they cover (and every request before) is on disk when they return.
 * flush (a close) commits nothing, as on ext4.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include "xfuse.h"

/* The kernel's __FMODE_EXEC: execve(2) opens the file with it, having
 * checked execute permission only (a mode of 0111 runs). */
#define XF_FMODE_EXEC	0x20

/* What open(2)'s access mode asks of the file. */
static int may_of(int flags)
{
	if ((flags & XF_FMODE_EXEC) && (flags & O_ACCMODE) == O_RDONLY)
		return EXTREF_MAY_EXEC;
	switch (flags & O_ACCMODE) {
	case O_WRONLY:
		return EXTREF_MAY_WRITE;
	case O_RDWR:
		return EXTREF_MAY_READ | EXTREF_MAY_WRITE;
	}
	/* O_TRUNC asks write permission whatever the mode (open(2)) */
	return EXTREF_MAY_READ | (flags & O_TRUNC ? EXTREF_MAY_WRITE : 0);
}

int xf_open(const char *path, struct fuse_file_info *fi)
{
	struct ext2_inode_large in;
	ext2_ino_t ino;
	int res = xf_ino(path, &ino);

	if (!res)
		res = xf_read_inode(ino, &in);
	if (res)
		return res;
	if (LINUX_S_ISDIR(in.i_mode) && (fi->flags & O_ACCMODE) != O_RDONLY)
		return -EISDIR;
	/* may_open's rule for an append-only file, which the kernel cannot
	 * apply itself (it does not know the flag) */
	if ((in.i_flags & EXT2_APPEND_FL) && (fi->flags & O_TRUNC ||
	    ((fi->flags & O_ACCMODE) != O_RDONLY && !(fi->flags & O_APPEND))))
		return -EPERM;
	res = xf_err(extref_access(xf.xfs, ino, may_of(fi->flags)));
	/* libfuse asks the kernel for atomic O_TRUNC: the open truncates */
	if (!res && (fi->flags & O_TRUNC) && LINUX_S_ISREG(in.i_mode))
		res = xf_err(extref_truncate(xf.xfs, ino, 0));
	return res ? res : xf_handle_new(ino, fi);
}

int xf_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct extref_cred c;
	const char *name;
	ext2_ino_t dir, ino;
	int res = xf_parent(path, &dir, &name);

	if (res)
		return res;
	/* the identity's owner and groups; its umask is applied by the
	 * library where no default ACL decides */
	c = *extref_identity(xf.xfs);
	c.umask = 0;
	res = xf_err(extref_create_file(xf.xfs, dir, name, mode & 07777, &c,
					&ino));
	return res ? res : xf_handle_new(ino, fi);
}

int xf_read(const char *path, char *buf, size_t size, off_t off,
	    struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	__u64 got = 0;
	int res;

	ino = xf_fh_ino(path, fi, &res);
	if (!res)
		res = xf_err(extref_pread(xf.xfs, ino, off, buf, size, &got));
	return res ? res : (int)got;
}

int xf_write(const char *path, const char *buf, size_t size, off_t off,
	     struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	int res;

	if (size > INT_MAX)
		size = INT_MAX & ~4095;
	ino = xf_fh_ino(path, fi, &res);
	if (!res)
		res = xf_err(extref_pwrite(xf.xfs, ino, off, buf, size));
	return res ? res : (int)size;
}

int xf_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path, (void)fi;
	return 0;	/* committed with the batch */
}

int xf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return xf_commit();
}

int xf_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return xf_commit();
}

/* fallocate(2): the mode bits are the kernel's FALLOC_FL_* (the
 * library's EXTREF_FALLOC_*), checked there; the VFS has refused a
 * descriptor not open for writing (EBADF) before it asks. */
int xf_fallocate(const char *path, int mode, off_t off, off_t len,
		 struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	int res;

	if (off < 0 || len <= 0)
		return -EINVAL;
	ino = xf_fh_ino(path, fi, &res);
	return res ? res : xf_err(extref_fallocate(xf.xfs, ino, mode,
						   (__u64)off, (__u64)len));
}
