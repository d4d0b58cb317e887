/*
 * xfuse.h --- extref-fuse: the state of a mount and the request handlers,
 * by file (main.c: options and the mount; ctx.c: who asks, paths and
 * errors; pathcache.c: paths' inodes remembered; loop.c: the request
 * loop and the commits; inval.c: the
 * kernel's caches dropped from a thread of their own; attr.c, dir.c, data.c, seek.c, copy.c, ioctl.c, xattr.c,
 * acl.c: the requests; handle.c: open files; nospace.c: a request
 * run again after a commit when it ran out of space).
 *
 * The server is single-threaded (-s): one request at a time, so the
 * handlers share the one image handle without locking.
 */
#ifndef XFUSE_H
#define XFUSE_H

#define FUSE_USE_VERSION 31
#include <fuse.h>
#include <et/com_err.h>
#include "extref_ops.h"

#define PROG_NAME "extref-fuse"

/* The mounted image. */
struct xfuse {
	extref_fs_t	xfs;
	ext2_filsys	fs;
	const char	*image;		/* absolute path */
	int		ro;		/* -o ro: opened read-only */
	unsigned int	commit;		/* -o commit=SECONDS (loop.c) */
	int		batch;		/* requests are steps of a batch */
};
extern struct xfuse xf;

/* pathcache.c */
int xf_pathcache_get(const char *path, ext2_ino_t *ino);
void xf_pathcache_put(const char *path, ext2_ino_t ino);
void xf_pathcache_forget(void);

/* inval.c */
void xf_inval_start(struct fuse *f);
void xf_inval_stop(void);
void xf_inval(const char *path);

/* loop.c */
int xf_commit(void);
int xf_loop(struct fuse_session *se);

/* ctx.c */
void xf_identity(void);
void xf_identity_caps(__u32 caps);
int xf_err(errcode_t err);
int xf_ino(const char *path, ext2_ino_t *ino);
int xf_parent(const char *path, ext2_ino_t *dir, const char **name);
int xf_read_inode(ext2_ino_t ino, struct ext2_inode_large *in);
ext2_ino_t xf_fh_ino(const char *path, struct fuse_file_info *fi,
		     int *res);

/* handle.c */
int xf_handle_new(ext2_ino_t ino, struct fuse_file_info *fi);
int xf_handle_ino(struct fuse_file_info *fi, ext2_ino_t *ino);
void xf_handle_gone(ext2_ino_t ino);
int xf_handle_is_open(ext2_ino_t ino);
void xf_handle_orphaned(ext2_ino_t ino);
int xf_release(const char *path, struct fuse_file_info *fi);

/* attr.c */
int xf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi);
int xf_access(const char *path, int mask);
int xf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int xf_chown(const char *path, uid_t uid, gid_t gid,
	     struct fuse_file_info *fi);
int xf_truncate(const char *path, off_t size, struct fuse_file_info *fi);
int xf_utimens(const char *path, const struct timespec tv[2],
	       struct fuse_file_info *fi);
int xf_statfs(const char *path, struct statvfs *sv);
void xf_stat_of(ext2_ino_t ino, const struct ext2_inode_large *in,
		struct stat *st);

/* dir.c */
int xf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
	       struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int xf_mkdir(const char *path, mode_t mode);
int xf_symlink(const char *target, const char *path);
int xf_readlink(const char *path, char *buf, size_t size);
int xf_unlink(const char *path);
int xf_rmdir(const char *path);
int xf_rename(const char *from, const char *to, unsigned int flags);
int xf_link(const char *from, const char *to);
int xf_mknod(const char *path, mode_t mode, dev_t rdev);

/* data.c */
int xf_open(const char *path, struct fuse_file_info *fi);
int xf_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int xf_read(const char *path, char *buf, size_t size, off_t off,
	    struct fuse_file_info *fi);
int xf_write(const char *path, const char *buf, size_t size, off_t off,
	     struct fuse_file_info *fi);
int xf_flush(const char *path, struct fuse_file_info *fi);
int xf_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int xf_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);
int xf_fallocate(const char *path, int mode, off_t off, off_t len,
		 struct fuse_file_info *fi);

/* seek.c */
off_t xf_lseek(const char *path, off_t off, int whence,
	       struct fuse_file_info *fi);

/* copy.c */
ssize_t xf_copy_file_range(const char *path_in, struct fuse_file_info *fi_in,
			   off_t off_in, const char *path_out,
			   struct fuse_file_info *fi_out, off_t off_out,
			   size_t len, int flags);

/* ioctl.c: the private ioctls of xfuse_ioctl.h */
int xf_ioctl(const char *path, int cmd, void *arg,
	     struct fuse_file_info *fi, unsigned int flags, void *data);

/* acl.c */
int xf_acl_set_access(ext2_ino_t ino, const void *value, size_t size);
errcode_t xf_acl_chmod(ext2_ino_t ino, mode_t mode);

/* xattr.c */
int xf_setxattr(const char *path, const char *name, const char *value,
		size_t size, int flags);
int xf_getxattr(const char *path, const char *name, char *value,
		size_t size);
int xf_listxattr(const char *path, char *list, size_t size);
int xf_removexattr(const char *path, const char *name);

/* nospace.c: the handlers that allocate, run once more after a commit
 * when they met ENOSPC while the batch held freed blocks */
int xf_mknod_r(const char *path, mode_t mode, dev_t rdev);
int xf_mkdir_r(const char *path, mode_t mode);
int xf_symlink_r(const char *target, const char *path);
int xf_rename_r(const char *from, const char *to, unsigned int flags);
int xf_link_r(const char *from, const char *to);
int xf_truncate_r(const char *path, off_t size, struct fuse_file_info *fi);
int xf_open_r(const char *path, struct fuse_file_info *fi);
int xf_create_r(const char *path, mode_t mode, struct fuse_file_info *fi);
int xf_write_r(const char *path, const char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi);
int xf_fallocate_r(const char *path, int mode, off_t off, off_t len,
		   struct fuse_file_info *fi);
ssize_t xf_copy_file_range_r(const char *path_in,
			     struct fuse_file_info *fi_in, off_t off_in,
			     const char *path_out,
			     struct fuse_file_info *fi_out, off_t off_out,
			     size_t len, int flags);
int xf_ioctl_r(const char *path, int cmd, void *arg,
	       struct fuse_file_info *fi, unsigned int flags, void *data);
int xf_setxattr_r(const char *path, const char *name, const char *value,
		  size_t size, int flags);

#endif /* XFUSE_H */
