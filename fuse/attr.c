/*
 * attr.c --- an inode's attributes: getattr (read through libext2fs),
 * access, chmod, chown and truncate (library calls, one transaction
 * each), statfs.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "xfuse.h"

/* The inode carries the field (its extra part is at least that long). */
#define HAS_EXTRA(in, field) \
	((size_t)EXT2_GOOD_OLD_INODE_SIZE + (in)->i_extra_isize >= \
	 offsetof(struct ext2_inode_large, field) + sizeof((in)->field))

/* A time with its extra word: nanoseconds and two more epoch bits. */
static struct timespec ts_of(__u32 sec, __u32 extra, int has_extra)
{
	struct timespec t;

	t.tv_sec = (__s32)sec;
	t.tv_nsec = 0;
	if (has_extra) {
		t.tv_sec += (time_t)(extra & 3) << 32;
		t.tv_nsec = extra >> 2;
	}
	return t;
}

/* A device's number: the old 16-bit encoding in i_block[0], else the
 * new one in i_block[1]. */
static dev_t rdev_of(const struct ext2_inode_large *in)
{
	__u32 old = in->i_block[0], nw = in->i_block[1];

	if (old)
		return makedev((old >> 8) & 0xff, old & 0xff);
	return makedev((nw & 0xfff00) >> 8, (nw & 0xff) | ((nw >> 12) & 0xfff00));
}

void xf_stat_of(ext2_ino_t ino, const struct ext2_inode_large *in,
		struct stat *st)
{
	int big = EXT2_INODE_SIZE(xf.fs->super) > EXT2_GOOD_OLD_INODE_SIZE;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = in->i_mode;
	st->st_nlink = in->i_links_count;
	st->st_uid = inode_uid(*in);
	st->st_gid = inode_gid(*in);
	st->st_size = EXT2_I_SIZE(in);
	st->st_blksize = xf.fs->blocksize;
	st->st_blocks = ext2fs_get_stat_i_blocks(xf.fs,
						 (struct ext2_inode *)in);
	if (LINUX_S_ISCHR(in->i_mode) || LINUX_S_ISBLK(in->i_mode))
		st->st_rdev = rdev_of(in);
	st->st_atim = ts_of(in->i_atime, in->i_atime_extra,
			    big && HAS_EXTRA(in, i_atime_extra));
	st->st_mtim = ts_of(in->i_mtime, in->i_mtime_extra,
			    big && HAS_EXTRA(in, i_mtime_extra));
	st->st_ctim = ts_of(in->i_ctime, in->i_ctime_extra,
			    big && HAS_EXTRA(in, i_ctime_extra));
}

int xf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct ext2_inode_large in;
	ext2_ino_t ino;
	int res;

	ino = xf_fh_ino(path, fi, &res);
	if (!res)
		res = xf_read_inode(ino, &in);
	if (!res)
		xf_stat_of(ino, &in, st);
	return res;
}

/* The mode, and an access ACL's entries with it (acl.c): one
 * transaction. */
int xf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	errcode_t err;
	int res;

	ino = xf_fh_ino(path, fi, &res);
	if (res)
		return res;
	err = extref_tx_begin(xf.xfs);
	if (!err) {
		errcode_t e = extref_chmod(xf.xfs, ino, mode & 07777);

		if (!e)
			e = xf_acl_chmod(ino, mode);
		err = extref_tx_end(xf.xfs, e);
	}
	return xf_err(err);
}

/* (uid_t)-1 and (gid_t)-1 keep the field, as chown(2) does. */
int xf_chown(const char *path, uid_t uid, gid_t gid,
	     struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	int res;

	ino = xf_fh_ino(path, fi, &res);
	return res ? res : xf_err(extref_chown(xf.xfs, ino,
				(__u32)uid, (__u32)gid));
}

int xf_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	int res;

	if (size < 0)
		return -EINVAL;
	ino = xf_fh_ino(path, fi, &res);
	if (!res && !fi)
		res = xf_err(extref_access(xf.xfs, ino, EXTREF_MAY_WRITE));
	return res ? res : xf_err(extref_truncate(xf.xfs, ino, size));
}

/* access(2): the kernel asks unless default_permissions (R_OK, W_OK and
 * X_OK are EXTREF_MAY_READ, _WRITE and _EXEC). */
int xf_access(const char *path, int mask)
{
	ext2_ino_t ino;
	int res = xf_ino(path, &ino);

	mask &= R_OK | W_OK | X_OK;
	return res || !mask ? res : xf_err(extref_access(xf.xfs, ino, mask));
}

/* utimensat(2): UTIME_NOW and UTIME_OMIT are the library's values. */
int xf_utimens(const char *path, const struct timespec tv[2],
	       struct fuse_file_info *fi)
{
	ext2_ino_t ino;
	int res;

	ino = xf_fh_ino(path, fi, &res);
	return res ? res : xf_err(extref_set_times(xf.xfs, ino,
						   tv ? &tv[0] : NULL,
						   tv ? &tv[1] : NULL));
}

int xf_statfs(const char *path, struct statvfs *sv)
{
	struct ext2_super_block *sb = xf.fs->super;
	blk64_t free = ext2fs_free_blocks_count(sb);
	blk64_t resv = ext2fs_r_blocks_count(sb);

	(void)path;
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = sv->f_frsize = xf.fs->blocksize;
	sv->f_blocks = ext2fs_blocks_count(sb) - sb->s_first_data_block;
	sv->f_bfree = free;
	sv->f_bavail = free > resv ? free - resv : 0;
	sv->f_files = sb->s_inodes_count;
	sv->f_ffree = sv->f_favail = sb->s_free_inodes_count;
	sv->f_namemax = EXT2_NAME_LEN;
	return 0;
}
