/*
 * timestamps.c --- an inode written with its change (and modification)
 * time set to now (xr_now_ts: the image's clock to the nanosecond, or
 * SOURCE_DATE_EPOCH).
 */
#include <stddef.h>
#include <string.h>
#include "extref_ops_int.h"

/* The large inode has room for field (i_extra_isize says so). */
#define HAS(in, f) (offsetof(struct ext2_inode_large, f) + sizeof((in)->f) <= \
		    EXT2_GOOD_OLD_INODE_SIZE + (size_t)(in)->i_extra_isize)

/* The _extra words of the times which names, where the inode has them. */
static void set_extra(struct ext2_inode_large *full, int which, __u32 extra)
{
	if (HAS(full, i_ctime_extra))
		full->i_ctime_extra = extra;
	if ((which & XR_TIME_MTIME) && HAS(full, i_mtime_extra))
		full->i_mtime_extra = extra;
	if ((which & XR_TIME_ATIME) && HAS(full, i_atime_extra))
		full->i_atime_extra = extra;
}

/*
 * Write inode with its change time (and, with XR_TIME_MTIME and
 * XR_TIME_ATIME, its modification and access times) set to now: seconds
 * and nanoseconds together, so that a time set here never keeps the
 * nanoseconds of an older one.
 */
errcode_t xr_write_inode_times(ext2_filsys fs, ext2_ino_t ino,
			       struct ext2_inode *inode, int which)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode_large *full = NULL;
	struct timespec now;
	errcode_t err;

	xr_now_ts(fs, &now);
	inode->i_ctime = (__u32)now.tv_sec;
	if (which & XR_TIME_MTIME)
		inode->i_mtime = (__u32)now.tv_sec;
	if (which & XR_TIME_ATIME)
		inode->i_atime = (__u32)now.tv_sec;
	if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
		return ext2fs_write_inode(fs, ino, inode);
	err = ext2fs_get_memzero(isz, &full);
	if (!err)
		err = ext2fs_read_inode_full(fs, ino,
					     (struct ext2_inode *)full, isz);
	if (!err) {
		memcpy(full, inode, sizeof(*inode));
		set_extra(full, which, xr_time_extra(&now));
		err = ext2fs_write_inode_full(fs, ino,
					      (struct ext2_inode *)full, isz);
	}
	ext2fs_free_mem(&full);
	return err;
}
