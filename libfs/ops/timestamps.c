/*
 * timestamps.c --- an inode written with its change (and modification)
 * time set to now (xr_now: the image's clock, SOURCE_DATE_EPOCH).
 */
#include <string.h>
#include "extref_ops_int.h"

/*
 * Write inode with its change time (and, with XR_TIME_MTIME, its
 * modification time) set to now: seconds and nanoseconds together, so
 * that a time set here never keeps the nanoseconds of an older one.
 */
errcode_t xr_write_inode_times(ext2_filsys fs, ext2_ino_t ino,
			       struct ext2_inode *inode, int which)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode_large *full = NULL;
	__u32 now = xr_now(fs);
	errcode_t err;

	inode->i_ctime = now;
	if (which & XR_TIME_MTIME)
		inode->i_mtime = now;
	if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
		return ext2fs_write_inode(fs, ino, inode);
	err = ext2fs_get_memzero(isz, &full);
	if (!err)
		err = ext2fs_read_inode_full(fs, ino,
					     (struct ext2_inode *)full, isz);
	if (!err) {
		memcpy(full, inode, sizeof(*inode));
		if (full->i_extra_isize >= 8) {
			full->i_ctime_extra = 0;
			if (which & XR_TIME_MTIME)
				full->i_mtime_extra = 0;
		}
		err = ext2fs_write_inode_full(fs, ino,
					      (struct ext2_inode *)full, isz);
	}
	ext2fs_free_mem(&full);
	return err;
}
