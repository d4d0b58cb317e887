/*
 * lean.c --- give a new filesystem its tree without reading every bitmap.
 *
 * The empty tree takes one block, which libext2fs allocates from the first
 * block of the flex group of inode 5: group 0, the first group with room.
 * Reading every bitmap for that (ext2fs_read_bitmaps) costs most of the
 * time at 1 TiB: 8192 groups turned into red-black trees, and closing
 * then writes every bitmap and every copy of the descriptors again (some
 * 10 MiB, flushed once more).  Here:
 *
 * - xr_lean_begin() loads only the bitmap of the group the allocator will
 *   take the block from (the first group with room, from group 0 on,
 *   whose bitmap is on disk); every other block is marked in use, so the
 *   allocator can take nothing else;
 * - xr_lean_end() writes that group's bitmap, and each descriptor block that
 *   changed at every place ext2fs_flush would write it (the primary and
 *   each backup); the close then writes only the superblocks.
 *
 * The image is byte for byte the one the full path makes, but for the
 * superblock's count of bytes ever written (s_kbytes_written, "Lifetime
 * writes"), which libext2fs keeps from what it actually writes: less
 * here.  The blocks not written hold, on a filesystem mke2fs has just
 * made, what the full path would write there again.  When the geometry is
 * one this does not cover (bigalloc, no room before a group whose bitmap
 * is not on disk), xr_lean_begin() declines and the caller reads the bitmaps.
 */
#include <string.h>

#include <ext2fs/ext2fs.h>

#include "extref.h"
#include "build_int.h"

/* The group libext2fs starts looking in for inode 5's first block. */
static dgrp_t goal_group(ext2_filsys fs)
{
	dgrp_t g = ext2fs_group_of_ino(fs, EXTREF_INO);
	unsigned int log_flex = fs->super->s_log_groups_per_flex;

	/* as ext2fs_find_inode_goal() for an inode with no block */
	if (log_flex && log_flex < 32)
		g &= ~((1U << log_flex) - 1);
	return g;
}

/* Blocks of group g that are inside the filesystem. */
static blk64_t group_len(ext2_filsys fs, dgrp_t g)
{
	return ext2fs_group_last_block2(fs, g) -
	       ext2fs_group_first_block2(fs, g) + 1;
}

/*
 * The first group from the goal on with a free block and its bitmap on
 * disk; -1 when a group without a bitmap on disk (BLOCK_UNINIT) or the
 * end of the filesystem comes first.
 */
static long pick_group(ext2_filsys fs)
{
	int csum = ext2fs_has_group_desc_csum(fs);

	for (dgrp_t g = goal_group(fs); g < fs->group_desc_count; g++) {
		if (csum && ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT))
			return -1;
		if (ext2fs_bg_free_blocks_count(fs, g))
			return (long)g;
	}
	return -1;
}

/* Group g's bitmap from disk into the block bitmap, checksum verified. */
static errcode_t load_group(ext2_filsys fs, dgrp_t g, char *buf)
{
	int nbytes = EXT2_CLUSTERS_PER_GROUP(fs->super) / 8;
	errcode_t err;

	err = io_channel_read_blk64(fs->io, ext2fs_block_bitmap_loc(fs, g), 1,
				    buf);
	if (err)
		return err;
	if (!ext2fs_block_bitmap_csum_verify(fs, g, buf, nbytes))
		return EXT2_ET_BLOCK_BITMAP_CSUM_INVALID;
	return ext2fs_set_block_bitmap_range2(fs->block_map,
					      ext2fs_group_first_block2(fs, g),
					      group_len(fs, g), buf);
}

/* Blocks [start, start + len) in use, in pieces the call can count. */
static void mark_range(ext2fs_block_bitmap map, blk64_t start, blk64_t len)
{
	while (len) {
		unsigned int n = len > 0x40000000U ? 0x40000000U :
			(unsigned int)len;

		ext2fs_mark_block_bitmap_range2(map, start, n);
		start += n;
		len -= n;
	}
}

/* Every block in use but those of group g, which are as on disk. */
static errcode_t partial_bitmap(ext2_filsys fs, dgrp_t g, char *buf)
{
	blk64_t first = fs->super->s_first_data_block;
	blk64_t end = ext2fs_blocks_count(fs->super);
	blk64_t gs = ext2fs_group_first_block2(fs, g);
	blk64_t ge = gs + group_len(fs, g);
	errcode_t err;

	err = ext2fs_allocate_block_bitmap(fs, "lean block bitmap",
					   &fs->block_map);
	if (err)
		return err;
	mark_range(fs->block_map, first, gs - first);
	mark_range(fs->block_map, ge, end - ge);
	err = load_group(fs, g, buf);
	if (err) {
		ext2fs_free_block_bitmap(fs->block_map);
		fs->block_map = NULL;
	}
	return err;
}

int xr_lean_begin(ext2_filsys fs, struct xr_lean *l)
{
	size_t gd_size = (size_t)fs->desc_blocks * fs->blocksize;
	long g;

	memset(l, 0, sizeof(*l));
	if (ext2fs_has_feature_bigalloc(fs->super) || fs->block_map ||
	    (g = pick_group(fs)) < 0)
		return -1;
	l->group = (dgrp_t)g;
	if (ext2fs_get_mem(fs->blocksize, &l->buf))
		return -1;
	if (ext2fs_get_mem(gd_size, &l->gd)) {
		ext2fs_free_mem(&l->buf);
		return -1;
	}
	memcpy(l->gd, fs->group_desc, gd_size);
	if (partial_bitmap(fs, l->group, l->buf)) {
		xr_lean_free(l);
		return -1;
	}
	l->active = 1;
	return 0;
}

/*
 * Group g's bitmap as ext2fs_write_bitmaps lays it out (the bits past
 * the filesystem set in the last group), its checksums, and the write.
 */
static errcode_t put_bitmap(ext2_filsys fs, dgrp_t g, char *buf)
{
	int nbytes = EXT2_CLUSTERS_PER_GROUP(fs->super) / 8;
	blk64_t len = group_len(fs, g);
	errcode_t err;

	memset(buf, 0xff, fs->blocksize);
	err = ext2fs_get_block_bitmap_range2(fs->block_map,
					     ext2fs_group_first_block2(fs, g),
					     len, buf);
	for (blk64_t j = len; !err && j < (blk64_t)nbytes * 8; j++)
		ext2fs_set_bit64(j, buf);
	if (!err)
		err = ext2fs_block_bitmap_csum_set(fs, g, buf, nbytes);
	if (err)
		return err;
	ext2fs_group_desc_csum_set(fs, g);
	return io_channel_write_blk64(fs->io, ext2fs_block_bitmap_loc(fs, g),
				      1, buf);
}

/* Descriptor block b at every place ext2fs_flush writes it. */
static errcode_t put_desc_block(ext2_filsys fs, blk64_t b)
{
	dgrp_t per = EXT2_DESC_PER_BLOCK(fs->super);
	blk64_t old_blocks = fs->desc_blocks;
	char *src = (char *)fs->group_desc + b * fs->blocksize;
	errcode_t err = 0;

	if (ext2fs_has_feature_meta_bg(fs->super) &&
	    fs->super->s_first_meta_bg < old_blocks)
		old_blocks = fs->super->s_first_meta_bg;
	for (dgrp_t i = 0; !err && i < fs->group_desc_count; i++) {
		blk64_t super_blk, old_desc, new_desc;

		ext2fs_super_and_bgd_loc2(fs, i, &super_blk, &old_desc,
					  &new_desc, 0);
		if (old_desc && b < old_blocks &&
		    (!(fs->flags & EXT2_FLAG_MASTER_SB_ONLY) || i == 0))
			err = io_channel_write_blk64(fs->io, old_desc + b, 1,
						     src);
		if (!err && new_desc && i / per == b)
			err = io_channel_write_blk64(fs->io, new_desc, 1, src);
	}
	return err;
}

errcode_t xr_lean_end(ext2_filsys fs, struct xr_lean *l)
{
	errcode_t err = 0;

	if (!l->active)
		return 0;
	if (ext2fs_test_bb_dirty(fs))
		err = put_bitmap(fs, l->group, l->buf);
	for (blk64_t b = 0; !err && b < fs->desc_blocks; b++)
		if (memcmp((char *)l->gd + b * fs->blocksize,
			   (char *)fs->group_desc + b * fs->blocksize,
			   fs->blocksize))
			err = put_desc_block(fs, b);
	if (err)
		return err;
	/* nothing left for the close but the superblocks */
	fs->flags &= ~EXT2_FLAG_BB_DIRTY;
	fs->flags |= EXT2_FLAG_SUPER_ONLY | EXT2_FLAG_DIRTY;
	return 0;
}

void xr_lean_free(struct xr_lean *l)
{
	ext2fs_free_mem(&l->buf);
	ext2fs_free_mem(&l->gd);
	l->active = 0;
}
