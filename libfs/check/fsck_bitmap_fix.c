/*
 * fsck_bitmap_fix.c --- blocks in use that the bitmap calls free (0x0103,
 * 0x0104), marked in use as e2fsck's pass 5 repairs them: the bits set,
 * then each group's free count, and the superblock's, made to agree
 * with its bitmap.  A stock tool may have freed the bits with the counts
 * (set_block_bitmap -c) or without them (stock debugfs freeb): counting
 * again is right after either.
 */
#include "extref_fsck_int.h"
#include "txn/xr_txio.h"

/* The free blocks of group g, as its bitmap says. */
static blk64_t group_free(ext2_filsys fs, dgrp_t g)
{
	blk64_t s = ext2fs_group_first_block2(fs, g);
	blk64_t last = ext2fs_group_last_block2(fs, g), f, n, free = 0;

	while (s <= last &&
	       !ext2fs_find_first_zero_block_bitmap2(fs->block_map, s, last,
						     &f)) {
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, f, last,
							&n))
			n = last + 1;
		free += n - f;
		s = n;
	}
	return free;
}

/*
 * [f, f + n) in use, through the transaction's accounting (it notes the
 * groups whose bitmaps and descriptors the commit writes); then the
 * counts of the groups it meets, and the superblock's, as their bitmaps
 * say.
 */
void xr_fsck_mark_in_use(struct xr_fsck *c, blk64_t f, blk64_t n)
{
	ext2_filsys fs = c->fs;
	dgrp_t g = ext2fs_group_of_blk2(fs, f);
	dgrp_t end = ext2fs_group_of_blk2(fs, f + n - 1);
	blk64_t sb_free, old, now;

	xr_block_alloc_stats_range(fs, f, (blk_t)n, +1);
	sb_free = ext2fs_free_blocks_count(fs->super);
	for (; g <= end; g++) {
		old = ext2fs_bg_free_blocks_count(fs, g);
		now = group_free(fs, g);
		if (now == old)
			continue;
		ext2fs_bg_free_blocks_count_set(fs, g, now);
		ext2fs_group_desc_csum_set(fs, g);
		sb_free = sb_free + now >= old ? sb_free + now - old : 0;
	}
	ext2fs_free_blocks_count_set(fs->super, sb_free);
	ext2fs_mark_super_dirty(fs);
	c->res->changed = 1;
}
