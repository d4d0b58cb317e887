/*
 * fsck_plain.c --- is this an extref image at all?  A plain ext2/3/4
 * image (no shared_blocks, no tree of ours in inode 5) is e2fsck's
 * alone: blocks it maps twice are cross-links, which stock e2fsck
 * clones; nothing here turns them into shares.  One with shared_blocks
 * and an unused inode 5 is an extref image whose tree was never built
 * (fsck_adopt.c).
 */
#include <string.h>
#include "extref_fsck.h"

/* Whether inode 5 is a regular extent file whose first block starts with
 * the tree header's magic: a tree of ours, whatever its state. */
static int ino5_holds_header(ext2_filsys fs)
{
	struct ext2_inode inode;
	blk64_t pblk = 0;
	__u32 magic;
	char *buf;
	int ours = 0;

	if (!ext2fs_has_feature_extents(fs->super) ||
	    ext2fs_read_inode(fs, EXTREF_INO, &inode) ||
	    !LINUX_S_ISREG(inode.i_mode) || !(inode.i_flags & EXT4_EXTENTS_FL))
		return 0;
	if (ext2fs_bmap2(fs, EXTREF_INO, &inode, NULL, 0, 0, NULL, &pblk) ||
	    pblk < fs->super->s_first_data_block ||
	    pblk >= ext2fs_blocks_count(fs->super))
		return 0;
	if (ext2fs_get_mem(fs->blocksize, &buf))
		return 0;
	if (!io_channel_read_blk64(fs->io, pblk, 1, buf)) {
		memcpy(&magic, buf, sizeof(magic));
		ours = ext2fs_le32_to_cpu(magic) == EXTREF_HDR_MAGIC;
	}
	ext2fs_free_mem(&buf);
	return ours;
}

/* Without extents there is no tree (inode 5 is one extent file), and
 * shared_blocks alone (set by hand) makes it no extref image. */
int extref_fsck_is_extref(ext2_filsys fs)
{
	return ext2fs_has_feature_extents(fs->super) &&
	       (ext2fs_has_feature_shared_blocks(fs->super) ||
		ino5_holds_header(fs));
}

/* Inode 5 as mke2fs leaves it: no mode, no blocks, no size. */
static int ino5_unused(ext2_filsys fs)
{
	struct ext2_inode inode;

	return !ext2fs_read_inode(fs, EXTREF_INO, &inode) &&
	       inode.i_mode == 0 && ext2fs_get_stat_i_blocks(fs, &inode) == 0 &&
	       EXT2_I_SIZE(&inode) == 0;
}

errcode_t extref_fsck_unbuilt(ext2_filsys fs)
{
	if (!extref_fsck_is_extref(fs))
		return EXTREF_ERR_PLAIN_IMAGE;
	if (ext2fs_has_feature_shared_blocks(fs->super) && ino5_unused(fs))
		return EXTREF_ERR_TREE_UNBUILT;
	return 0;
}
