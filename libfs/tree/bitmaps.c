/*
 * bitmaps.c --- read the block and inode bitmaps, skipping the groups
 * whose bitmaps are not initialised.
 *
 * ext2fs_read_bitmaps() hands every group's bitmap to the in-memory map,
 * a zeroed buffer for a BLOCK_UNINIT or INODE_UNINIT group.  For a flat
 * bit array that is a copy; for a red-black tree it is a scan of every
 * byte (4 KiB a group, 8,192 groups at 1 TiB), most of mkfs's time on a
 * large new image, where nearly every group is uninitialised.  The maps
 * start cleared, so an uninitialised group's zeros need not be handed
 * over: this reader does what rw_bitmaps.c does (the same checks, the
 * same checksum verification, the same marking of an uninitialised
 * group's own metadata) and leaves those groups out.  The maps are the
 * same bit for bit.  Image files (e2image) and bigalloc, where the
 * block map counts clusters, go through ext2fs_read_bitmaps() unchanged.
 */
#include <string.h>
#include "extref_int.h"

/* A group whose bitmap of this kind is not on disk, as rw_bitmaps.c
 * decides it: flagged uninitialised with a good descriptor checksum, or
 * the bitmap's block past the end. */
static int skip_group(ext2_filsys fs, dgrp_t g, __u16 uninit, blk64_t loc)
{
	return (ext2fs_has_group_desc_csum(fs) &&
		ext2fs_bg_flags_test(fs, g, uninit) &&
		ext2fs_group_desc_csum_verify(fs, g)) ||
	       loc >= ext2fs_blocks_count(fs->super);
}

/* The bytes of a bitmap block past the group's bits are all ones. */
static int tail_ok(const unsigned char *buf, unsigned int nbytes,
		   unsigned int blocksize)
{
	for (unsigned int i = nbytes; i < blocksize; i++)
		if (buf[i] != 0xff)
			return 0;
	return 1;
}

static errcode_t read_block_group(ext2_filsys fs, dgrp_t g, char *buf,
				  int *tail)
{
	unsigned int nbytes = EXT2_CLUSTERS_PER_GROUP(fs->super) / 8;
	blk64_t loc = ext2fs_block_bitmap_loc(fs, g);
	blk64_t first = fs->super->s_first_data_block +
			(blk64_t)g * (nbytes << 3);

	if (skip_group(fs, g, EXT2_BG_BLOCK_UNINIT, loc))
		return 0;
	if (io_channel_read_blk64(fs->io, loc, 1, buf))
		return EXT2_ET_BLOCK_BITMAP_READ;
	if (!(fs->flags & EXT2_FLAG_IGNORE_CSUM_ERRORS) &&
	    !ext2fs_block_bitmap_csum_verify(fs, g, buf, nbytes))
		return EXT2_ET_BLOCK_BITMAP_CSUM_INVALID;
	if (!tail_ok((unsigned char *)buf, nbytes, fs->blocksize))
		*tail |= EXT2_FLAG_BBITMAP_TAIL_PROBLEM;
	return ext2fs_set_block_bitmap_range2(fs->block_map, first,
					      nbytes << 3, buf);
}

static errcode_t read_inode_group(ext2_filsys fs, dgrp_t g, char *buf,
				  int *tail)
{
	unsigned int nbytes = EXT2_INODES_PER_GROUP(fs->super) / 8;
	blk64_t loc = ext2fs_inode_bitmap_loc(fs, g);
	ext2_ino_t first = 1 + (ext2_ino_t)g * (nbytes << 3);

	if (skip_group(fs, g, EXT2_BG_INODE_UNINIT, loc))
		return 0;
	if (io_channel_read_blk64(fs->io, loc, 1, buf))
		return EXT2_ET_INODE_BITMAP_READ;
	if (!(fs->flags & EXT2_FLAG_IGNORE_CSUM_ERRORS) &&
	    !ext2fs_inode_bitmap_csum_verify(fs, g, buf, nbytes))
		return EXT2_ET_INODE_BITMAP_CSUM_INVALID;
	if (!tail_ok((unsigned char *)buf, nbytes, fs->blocksize))
		*tail |= EXT2_FLAG_IBITMAP_TAIL_PROBLEM;
	return ext2fs_set_inode_bitmap_range2(fs->inode_map, first,
					      nbytes << 3, buf);
}

/* An uninitialised group's superblock, descriptors, bitmaps and inode
 * table are in use all the same (rw_bitmaps.c's
 * mark_uninit_bg_group_blocks). */
static void mark_uninit_meta(ext2_filsys fs, dgrp_t g)
{
	ext2fs_block_bitmap map = fs->block_map;
	blk64_t total = ext2fs_blocks_count(fs->super);
	blk64_t b;

	ext2fs_reserve_super_and_bgd(fs, g, map);
	b = ext2fs_inode_table_loc(fs, g);
	if (b)
		ext2fs_mark_block_bitmap_range2(map, b,
						fs->inode_blocks_per_group);
	b = ext2fs_block_bitmap_loc(fs, g);
	if (b && b < total)
		ext2fs_mark_block_bitmap2(map, b);
	b = ext2fs_inode_bitmap_loc(fs, g);
	if (b && b < total)
		ext2fs_mark_block_bitmap2(map, b);
}

static errcode_t read_groups(ext2_filsys fs, int *tail)
{
	char *bbuf = NULL, *ibuf = NULL;
	errcode_t err;
	dgrp_t g;

	err = io_channel_alloc_buf(fs->io, 0, &bbuf);
	if (!err)
		err = io_channel_alloc_buf(fs->io, 0, &ibuf);
	for (g = 0; !err && g < fs->group_desc_count; g++) {
		err = read_block_group(fs, g, bbuf, tail);
		if (!err)
			err = read_inode_group(fs, g, ibuf, tail);
	}
	for (g = 0; !err && g < fs->group_desc_count; g++)
		if (ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT))
			mark_uninit_meta(fs, g);
	ext2fs_free_mem(&bbuf);
	ext2fs_free_mem(&ibuf);
	return err;
}

static errcode_t alloc_maps(ext2_filsys fs)
{
	errcode_t err;

	err = ext2fs_allocate_block_bitmap(fs, "block bitmap",
					   &fs->block_map);
	if (!err)
		err = ext2fs_allocate_inode_bitmap(fs, "inode bitmap",
						   &fs->inode_map);
	return err;
}

static void free_maps(ext2_filsys fs)
{
	ext2fs_free_block_bitmap(fs->block_map);
	ext2fs_free_inode_bitmap(fs->inode_map);
	fs->block_map = NULL;
	fs->inode_map = NULL;
}

/*
 * Load fs->block_map and fs->inode_map, in the representation
 * fs->default_bitmap_type names.  On error neither is loaded.  When one
 * is loaded already, ext2fs_read_bitmaps() reads the other.
 */
errcode_t xr_read_bitmaps(ext2_filsys fs)
{
	int tail = 0;
	errcode_t err;

	if (fs->block_map || fs->inode_map ||
	    (fs->flags & EXT2_FLAG_IMAGE_FILE) ||
	    EXT2FS_CLUSTER_RATIO(fs) > 1 ||
	    EXT2_CLUSTERS_PER_GROUP(fs->super) / 8 > fs->blocksize ||
	    EXT2_INODES_PER_GROUP(fs->super) / 8 > fs->blocksize)
		return ext2fs_read_bitmaps(fs);
	fs->write_bitmaps = ext2fs_write_bitmaps;
	err = alloc_maps(fs);
	if (!err)
		err = read_groups(fs, &tail);
	if (err) {
		free_maps(fs);
		return err;
	}
	fs->flags &= ~(EXT2_FLAG_BBITMAP_TAIL_PROBLEM |
		       EXT2_FLAG_IBITMAP_TAIL_PROBLEM);
	fs->flags |= tail;
	return 0;
}
