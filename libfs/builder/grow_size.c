/*
 * grow_size.c --- the size an image grows to, from its own geometry as
 * resize2fs extends it: the last group filled first, then whole new
 * groups, each with its bitmaps and inode table (as many inodes as
 * every group has) and, in the groups sparse_super keeps them in, a
 * backup of the superblock and of the descriptors with their reserve.
 * The smallest size whose free blocks and inodes cover the need, then
 * headroom percent more (extref_build_plan_size's rule); a last group
 * too small for resize2fs to keep (it drops one under its metadata and
 * 50 blocks) is made big enough.
 */
#include "grow_int.h"

/* The metadata blocks of group g, added by the grow. */
static blk64_t group_meta(ext2_filsys fs, dgrp_t g)
{
	blk64_t n = 2 + fs->inode_blocks_per_group;

	if (ext2fs_bg_has_super(fs, g))
		n += 1 + fs->desc_blocks + fs->super->s_reserved_gdt_blocks;
	return n;
}

static __u64 groups_of(ext2_filsys fs, blk64_t blocks)
{
	__u64 bpg = EXT2_BLOCKS_PER_GROUP(fs->super),
	      first = fs->super->s_first_data_block;

	return (blocks - first + bpg - 1) / bpg;
}

/* Free blocks of fs grown to blocks (a new group's metadata may not
 * fit yet: below zero). */
static long long free_at(ext2_filsys fs, blk64_t blocks)
{
	__u64 old = ext2fs_blocks_count(fs->super), g;
	long long f = (long long)(ext2fs_free_blocks_count(fs->super) +
				  (blocks - old));

	for (g = fs->group_desc_count; g < groups_of(fs, blocks); g++)
		f -= (long long)group_meta(fs, (dgrp_t)g);
	return f;
}

/* The smallest count with n free inodes: whole groups past the last. */
static blk64_t for_inodes(ext2_filsys fs, __u64 n)
{
	__u64 ipg = fs->super->s_inodes_per_group,
	      have = fs->super->s_free_inodes_count, more;
	blk64_t bpg = EXT2_BLOCKS_PER_GROUP(fs->super), g;

	if (n <= have || !ipg)
		return ext2fs_blocks_count(fs->super);
	more = (n - have + ipg - 1) / ipg;
	g = fs->group_desc_count + more - 1;	/* the new last group */
	return fs->super->s_first_data_block + g * bpg +
	       group_meta(fs, (dgrp_t)g) + 64;
}

/* A last group resize2fs keeps. */
static blk64_t whole_last(ext2_filsys fs, blk64_t b)
{
	blk64_t bpg = EXT2_BLOCKS_PER_GROUP(fs->super),
		rem = (b - fs->super->s_first_data_block) % bpg,
		min;
	__u64 g = groups_of(fs, b);

	if (g <= fs->group_desc_count || !rem)
		return b;
	min = group_meta(fs, (dgrp_t)(g - 1)) + 64;
	return rem < min ? b + (min - rem) : b;
}

static errcode_t fits(ext2_filsys fs, blk64_t b)
{
	__u64 dpb = EXT2_DESC_PER_BLOCK(fs->super),
	      desc = (groups_of(fs, b) + dpb - 1) / dpb;

	if (!ext2fs_has_feature_64bit(fs->super) && b >= (1ULL << 32))
		return EXTREF_ERR_GROW_TOO_BIG;
	if (!ext2fs_has_feature_meta_bg(fs->super) &&
	    desc > fs->desc_blocks + fs->super->s_reserved_gdt_blocks)
		return EXTREF_ERR_GROW_TOO_BIG;
	return 0;
}

errcode_t xr_grow_target(ext2_filsys fs, __u64 need_blocks,
			 __u64 need_inodes, unsigned int headroom,
			 blk64_t *target)
{
	struct ext2_super_block *sb = fs->super;
	blk64_t b = ext2fs_blocks_count(sb);
	long long f;
	__u64 used_i = sb->s_inodes_count - sb->s_free_inodes_count;
	int i;

	*target = b;
	if (need_blocks <= ext2fs_free_blocks_count(sb) &&
	    need_inodes <= sb->s_free_inodes_count)
		return 0;
	if (need_inodes > sb->s_free_inodes_count)	/* and its headroom */
		b = for_inodes(fs, need_inodes +
			       (used_i + need_inodes) * headroom / 100);
	for (i = 0; i < 64 && (f = free_at(fs, b)) < (long long)need_blocks;
	     i++)
		b += (blk64_t)((long long)need_blocks - f);
	b += b * headroom / 100;
	b = whole_last(fs, b);
	*target = b;
	return fits(fs, b);
}
