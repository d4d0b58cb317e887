/*
 * shrink_itable.c --- fewer inodes for an image down to one group: its
 * inode table is cut to the inodes a fresh build would have.
 *
 * resize2fs never changes the inodes per group, and an image made by
 * mke2fs for a larger filesystem has one inode per 4 or 16 KiB of it:
 * after the cut the inode table can be most of the image.  With one
 * group, inode numbers are the table's slots: when every inode in use
 * lies below the new count nothing is renumbered, and the table's tail
 * becomes free blocks (for the next resize2fs to fill).  The superblock's
 * and the descriptor's counts, the inode bitmap (its padding: the bits
 * past the new count are set, as mke2fs leaves them) and its checksum are
 * rewritten; nothing else names the count.
 *
 * The writes (bitmaps, descriptor, superblock last) are not one
 * transaction: a crash between them leaves counts and bitmaps that stock
 * e2fsck -fy recomputes (pass 5) from the superblock's inode count,
 * either the old one or the new one; no inode in use is in the cut part.
 */
#include "mkfs.h"

/* The inode bitmap for the new count, with the bits of the kept slots. */
static errcode_t new_inode_map(ext2_filsys fs, __u32 ipg)
{
	ext2fs_inode_bitmap map;
	errcode_t err;

	err = ext2fs_allocate_inode_bitmap(fs, "inode bitmap", &map);
	if (err)
		return err;
	for (ext2_ino_t ino = 1; ino <= ipg; ino++)
		if (ext2fs_test_inode_bitmap2(fs->inode_map, ino))
			ext2fs_mark_inode_bitmap2(map, ino);
	ext2fs_free_inode_bitmap(fs->inode_map);
	fs->inode_map = map;
	return 0;
}

errcode_t shrink_itable(ext2_filsys fs, __u32 ipg)
{
	__u32 old = fs->super->s_inodes_per_group, cut = old - ipg, unused;
	blk64_t itable = ext2fs_inode_table_loc(fs, 0), tail;
	unsigned int new_blocks;
	ext2_ino_t ino;
	errcode_t err;

	if (fs->group_desc_count != 1 || ipg >= old)
		return EXT2_ET_INVALID_ARGUMENT;
	err = ext2fs_read_bitmaps(fs);
	if (err)
		return err;
	if (!ext2fs_find_first_set_inode_bitmap2(fs->inode_map, ipg + 1, old,
						 &ino))
		return EXT2_ET_INVALID_ARGUMENT;	/* one is in use */
	new_blocks = (ipg * EXT2_INODE_SIZE(fs->super) + fs->blocksize - 1) /
		     fs->blocksize;
	tail = fs->inode_blocks_per_group - new_blocks;

	fs->super->s_inodes_per_group = ipg;
	fs->super->s_inodes_count = ipg;
	fs->super->s_free_inodes_count -= cut;
	err = new_inode_map(fs, ipg);
	if (err)
		return err;
	ext2fs_bg_free_inodes_count_set(fs, 0,
				ext2fs_bg_free_inodes_count(fs, 0) - cut);
	unused = ext2fs_bg_itable_unused(fs, 0);
	ext2fs_bg_itable_unused_set(fs, 0, unused > cut ? unused - cut : 0);
	/* the table's tail: free blocks now */
	ext2fs_unmark_block_bitmap_range2(fs->block_map, itable + new_blocks,
					  (unsigned int)tail);
	ext2fs_bg_free_blocks_count_set(fs, 0,
				ext2fs_bg_free_blocks_count(fs, 0) + tail);
	ext2fs_free_blocks_count_add(fs->super, tail);
	fs->inode_blocks_per_group = new_blocks;
	ext2fs_group_desc_csum_set(fs, 0);
	ext2fs_mark_ib_dirty(fs);
	ext2fs_mark_bb_dirty(fs);
	ext2fs_mark_super_dirty(fs);
	return 0;
}
