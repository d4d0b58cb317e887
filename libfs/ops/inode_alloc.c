/*
 * inode_alloc.c --- a new inode: allocated near its directory, written,
 * its project inherited, counted in use and noted in the transaction;
 * not linked anywhere yet (dirent.c links it).
 */
#include <string.h>
#include "extref_ops_int.h"
#include "txn/xr_txio.h"

/*
 * Allocate an inode near DIR and write it from inode (whose i_block gets
 * an empty extent tree when extents is set), its access, change and
 * modification times now (to the nanosecond).  The inode is counted in
 * use; it is not linked anywhere yet.
 */
errcode_t xr_new_inode(ext2_filsys fs, ext2_ino_t dir,
		       struct ext2_inode *inode, int extents, ext2_ino_t *ret)
{
	ext2_extent_handle_t h;
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_new_inode(fs, dir, inode->i_mode, 0, &ino);
	if (err)
		return err;
	if (extents) {
		memset(inode->i_block, 0, sizeof(inode->i_block));
		inode->i_flags &= ~EXT4_INLINE_DATA_FL;
		err = ext2fs_extent_open2(fs, ino, inode, &h);
		if (err)
			return err;
		ext2fs_extent_free(h);
	}
	err = ext2fs_write_new_inode(fs, ino, inode);
	if (!err)
		err = xr_write_inode_times(fs, ino, inode,
					   XR_TIME_MTIME | XR_TIME_ATIME);
	if (!err)
		err = xr_inherit_project(fs, dir, ino);
	if (err)
		return err;
	ext2fs_inode_alloc_stats2(fs, ino, +1, LINUX_S_ISDIR(inode->i_mode));
	xr_tx_note_inode(fs, ino);
	*ret = ino;
	return 0;
}
