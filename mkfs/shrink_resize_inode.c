/*
 * shrink_resize_inode.c --- --shrink drops the resize inode of an image
 * of 1 KiB blocks.
 *
 * e2fsprogs 1.47.0's resize2fs fails under its own undo file (-z) on
 * such images once they have a few dozen groups ("Resize inode is
 * corrupt"; the same run without -z goes through), and --shrink never
 * runs it without one.  The resize inode (7) only reserves descriptor
 * blocks for growing the filesystem while mounted, which an image cut
 * to its content does not need: its blocks (the reserved descriptor
 * blocks, primary and backups, and its double-indirect block) are
 * freed, the inode cleared, the feature and s_reserved_gdt_blocks
 * dropped.  It runs inside --shrink's first step, through the undo io
 * manager; stock e2fsck -fn checks the result before the cut.
 */
#include <string.h>

#include "mkfs.h"
#include "shrink_int.h"

errcode_t shrink_free_inode(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode *inode)
{
	errcode_t err = ext2fs_read_bitmaps(fs);

	if (!err)
		err = ext2fs_punch(fs, ino, inode, NULL, 0, ~0ULL);
	if (err)
		return err;
	memset(inode, 0, sizeof(*inode));
	return ext2fs_write_inode(fs, ino, inode);
}

int shrink_drop_resize_inode_wanted(ext2_filsys fs)
{
	return fs->blocksize == 1024 &&
	       ext2fs_has_feature_resize_inode(fs->super);
}

errcode_t shrink_drop_resize_inode(ext2_filsys fs)
{
	struct ext2_inode inode;
	errcode_t err;

	/* every block it maps: the reserved descriptor blocks and the
	 * blocks that list them */
	err = ext2fs_read_inode(fs, EXT2_RESIZE_INO, &inode);
	if (!err)
		err = shrink_free_inode(fs, EXT2_RESIZE_INO, &inode);
	if (err)
		return err;
	ext2fs_clear_feature_resize_inode(fs->super);
	fs->super->s_reserved_gdt_blocks = 0;
	for (dgrp_t g = 0; g < fs->group_desc_count; g++)
		ext2fs_group_desc_csum_set(fs, g);
	ext2fs_mark_super_dirty(fs);
	ext2fs_mark_bb_dirty(fs);
	return 0;
}
