/*
 * shrink_size.c --- how small --convert --shrink makes an image: the size
 * a fresh build (plan_size.c) would give what the image holds.
 *
 * What the image holds is every block in use that is not group metadata
 * (file data, directories, extent and xattr blocks, the journal, the
 * tree's nodes).  To that come the group metadata of a filesystem of the
 * new size: superblock and descriptor copies (resize2fs keeps
 * descriptors plus their reserve constant when it cuts groups), bitmaps
 * and inode tables of as many groups as the size needs; then --headroom,
 * as a fresh build adds it; and at least the room resize2fs needs to
 * move the blocks (new extent blocks for extents it has to split: one in
 * 512 blocks, and 16).  A fresh build's floor holds too: a journal under
 * half the free blocks, as mke2fs wants one.
 *
 * The inode count: a fresh build gets the entries it holds, plus
 * --headroom percent, plus 16, spread over the groups of its size;
 * shrink_ipg() gives the inodes per group that makes, and the image's
 * inode tables are laid out again for it (shrink_itable.c) before the
 * cut, so the size is computed with the inode tables of that count.
 */
#include "mkfs.h"

/* Blocks of group metadata of the first n groups of fs, with ibpg
 * inode-table blocks a group. */
static blk64_t group_meta_at(ext2_filsys fs, dgrp_t n, blk64_t ibpg)
{
	blk64_t meta = 0;

	for (dgrp_t g = 0; g < n; g++) {
		if (ext2fs_bg_has_super(fs, g))
			meta += 1 + fs->desc_blocks +
				fs->super->s_reserved_gdt_blocks;
		meta += 2 + ibpg;
	}
	return meta;
}

static blk64_t group_meta(ext2_filsys fs, dgrp_t n)
{
	return group_meta_at(fs, n, fs->inode_blocks_per_group);
}

static dgrp_t groups_for(ext2_filsys fs, blk64_t blocks)
{
	blk64_t n = blocks - fs->super->s_first_data_block;

	return (dgrp_t)((n + fs->super->s_blocks_per_group - 1) /
			fs->super->s_blocks_per_group);
}

/* The journal's blocks (0 without one). */
static blk64_t journal_blocks(ext2_filsys fs)
{
	struct ext2_inode inode;

	if (!ext2fs_has_feature_journal(fs->super) ||
	    !fs->super->s_journal_inum ||
	    ext2fs_read_inode(fs, fs->super->s_journal_inum, &inode))
		return 0;
	return EXT2_I_SIZE(&inode) / fs->blocksize;
}

/*
 * A last group too small for its metadata and 50 blocks is dropped by
 * resize2fs (and the filesystem would then be smaller than planned):
 * grow it to that.
 */
static blk64_t whole_last_group(ext2_filsys fs, blk64_t total, blk64_t ibpg)
{
	blk64_t bpg = fs->super->s_blocks_per_group;
	blk64_t rem = (total - fs->super->s_first_data_block) % bpg;
	dgrp_t n = groups_for(fs, total);
	blk64_t last = group_meta_at(fs, n, ibpg) -
		       group_meta_at(fs, n - 1, ibpg) + 64;

	if (n > 1 && rem && rem < last)
		total += last - rem;
	return total;
}

/* The target with ibpg inode-table blocks a group (the content, what
 * is in use but group metadata, stays). */
static blk64_t target_at(ext2_filsys fs, unsigned int headroom, blk64_t ibpg)
{
	blk64_t blocks = ext2fs_blocks_count(fs->super);
	blk64_t fdb = fs->super->s_first_data_block;
	blk64_t used = blocks - ext2fs_free_blocks_count(fs->super);
	blk64_t content = used - fdb - group_meta(fs, fs->group_desc_count);
	blk64_t slack = 16 + content / 512, jb = journal_blocks(fs);
	blk64_t total = content + fdb, floor;
	int i;

	for (i = 0; i < 4; i++)		/* more groups, more metadata */
		total = fdb + content +
			group_meta_at(fs, groups_for(fs, total), ibpg);
	if (total * headroom / 100 > slack)
		total += total * headroom / 100;
	else
		total += slack;
	floor = fdb + 2 * jb + 64;
	floor += group_meta_at(fs, groups_for(fs, floor), ibpg);
	if (total < floor)
		total = floor;
	total = whole_last_group(fs, total, ibpg);
	return total < blocks ? total : blocks;
}

blk64_t shrink_target(ext2_filsys fs, unsigned int headroom)
{
	return target_at(fs, headroom, fs->inode_blocks_per_group);
}

/*
 * Blocks below target that hold the bitmaps and inode tables of groups
 * at or past it (flex_bg packs them into the first groups): resize2fs
 * frees them only at its end, so it cannot move blocks into them.  A cut
 * to target + this many blocks fits; a second cut then takes them.
 */
blk64_t shrink_stuck(ext2_filsys fs, blk64_t target)
{
	blk64_t n = 0, t;

	for (dgrp_t g = groups_for(fs, target); g < fs->group_desc_count;
	     g++) {
		n += ext2fs_block_bitmap_loc(fs, g) < target;
		n += ext2fs_inode_bitmap_loc(fs, g) < target;
		t = ext2fs_inode_table_loc(fs, g);
		for (blk64_t i = 0; i < fs->inode_blocks_per_group; i++)
			n += t + i < target;
	}
	return n;
}

/* The inodes a fresh build of what fs holds would have. */
static __u32 inodes_wanted(ext2_filsys fs, unsigned int headroom)
{
	__u32 used = fs->super->s_inodes_count -
		     fs->super->s_free_inodes_count;
	__u32 entries = used > fs->super->s_first_ino ?
			used - fs->super->s_first_ino : 0;
	__u64 want = (__u64)entries + (__u64)entries * headroom / 100 + 16;

	if (want < used)
		want = used;
	if (want < fs->super->s_first_ino + 1U)
		want = fs->super->s_first_ino + 1U;
	return want > 0xffffffffULL ? 0xffffffffU : (__u32)want;
}

/* want inodes over n groups, as mke2fs lays them out: whole
 * inode-table blocks and whole bytes of the bitmap, at most what one
 * bitmap block and the descriptor's counts hold. */
static __u32 ipg_for(ext2_filsys fs, __u32 want, dgrp_t n)
{
	__u32 step = EXT2_INODES_PER_BLOCK(fs->super), ipg, top;

	while (step % 8)
		step *= 2;
	top = fs->blocksize * 8;
	if (top > 65536U - step)
		top = 65536U - step;
	top = top / step * step;
	ipg = (__u32)(((__u64)want + n - 1) / n);
	ipg = (ipg + step - 1) / step * step;
	return ipg < top ? ipg : top;
}

static blk64_t itable_blocks(ext2_filsys fs, __u32 ipg)
{
	return ((blk64_t)ipg * EXT2_INODE_SIZE(fs->super) + fs->blocksize -
		1) / fs->blocksize;
}

/*
 * The image keeps its inodes per group (without flex_bg a group's table
 * lies in the group, full of data: it cannot grow there): as many
 * groups as its inodes need, at least.
 */
static __u32 keep_ipg(ext2_filsys fs, unsigned int headroom, __u32 want,
		      blk64_t *target)
{
	__u32 ipg = fs->super->s_inodes_per_group;
	dgrp_t need = (dgrp_t)(((__u64)want + ipg - 1) / ipg);
	blk64_t t = shrink_target(fs, headroom);
	blk64_t least = fs->super->s_first_data_block +
			(blk64_t)(need - 1) * fs->super->s_blocks_per_group + 1;

	if (need > 1 && t < least) {
		t = whole_last_group(fs, least, fs->inode_blocks_per_group);
		if (t > ext2fs_blocks_count(fs->super))
			t = ext2fs_blocks_count(fs->super);
	}
	*target = t;
	return ipg;
}

blk64_t shrink_target_as_is(ext2_filsys fs, unsigned int headroom)
{
	blk64_t t;

	keep_ipg(fs, headroom, inodes_wanted(fs, headroom), &t);
	return t;
}

/*
 * The inodes per group of a fresh build of what fs holds, for the
 * groups of the size it will be cut to (which depends on the inode
 * tables: found together), and that size (*target).  With fewer groups
 * than it takes to hold the inodes at the most a group can have, or
 * tables that would grow without flex_bg, the image's own inodes per
 * group stay (keep_ipg).
 */
__u32 shrink_ipg(ext2_filsys fs, unsigned int headroom, blk64_t *target)
{
	__u32 want = inodes_wanted(fs, headroom), ipg;
	blk64_t t = shrink_target(fs, headroom);
	dgrp_t n = groups_for(fs, t);

	for (int i = 0; i < 8; i++) {
		ipg = ipg_for(fs, want, n);
		t = target_at(fs, headroom, itable_blocks(fs, ipg));
		if (groups_for(fs, t) == n)
			break;
		n = groups_for(fs, t);
	}
	ipg = ipg_for(fs, want, n);
	if ((__u64)ipg * n < want || groups_for(fs, t) != n ||
	    (ipg > fs->super->s_inodes_per_group &&
	     !ext2fs_has_feature_flex_bg(fs->super)))
		return keep_ipg(fs, headroom, want, target);
	*target = t;
	return ipg;
}
