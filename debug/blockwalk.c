/*
 * blockwalk.c --- who holds a block: every in-use inode's mappings of a
 * set of physical blocks (data, extent-tree or indirect blocks, the
 * extended-attribute block), and what a block no inode maps is (group
 * metadata, free, or lost).  Shared by owners and icheck.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

struct bw_ctx {
	const blk64_t	*blocks;	/* sorted, unique */
	size_t		n;
	bown_func	func;
	void		*priv;
	ext2_ino_t	ino;
	int		stop;
};

/* Index of the first block >= b. */
static size_t lower_bound(const blk64_t *v, size_t n, blk64_t b)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Report every asked-for block in [pblk, pblk + len). */
static int bw_range(struct bw_ctx *c, blk64_t pblk, blk64_t len, blk64_t lblk,
		    enum bown_kind kind)
{
	size_t i = lower_bound(c->blocks, c->n, pblk);

	for (; i < c->n && c->blocks[i] < pblk + len; i++) {
		if (c->func(c->ino, c->blocks[i], kind,
			    lblk + (c->blocks[i] - pblk), c->priv)) {
			c->stop = 1;
			return 1;
		}
	}
	return 0;
}

static errcode_t bw_extent(const struct extref_extent *e, void *priv)
{
	struct bw_ctx *c = priv;

	if (e->index)
		return bw_range(c, e->pblk, 1, 0, BOWN_MAP) ?
			EXTREF_ITER_STOP : 0;
	if (e->len && bw_range(c, e->pblk, e->len, e->lblk, BOWN_DATA))
		return EXTREF_ITER_STOP;
	return 0;
}

/* Extent blocks and data, through the library's extent walk. */
static errcode_t bw_extents(struct bw_ctx *c, struct ext2_inode_large *inode)
{
	errcode_t err;

	err = extref_iterate_extents(sh.xfs, c->ino, (struct ext2_inode *)inode,
				     EXTREF_EXTENTS_INDEX, bw_extent, c);
	return err == EXT2_ET_NO_CURRENT_NODE ? 0 : err;
}

static int bw_block_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		       blk64_t ref_blk, int ref_offset, void *priv)
{
	struct bw_ctx *c = priv;

	(void)fs; (void)ref_blk; (void)ref_offset;
	if (bw_range(c, *blocknr, 1, blockcnt < 0 ? 0 : (blk64_t)blockcnt,
		     blockcnt < 0 ? BOWN_MAP : BOWN_DATA))
		return BLOCK_ABORT;
	return 0;
}

/* One inode's blocks; errors in one inode do not stop the scan. */
static void bw_inode(struct bw_ctx *c, struct ext2_inode_large *inode)
{
	blk64_t acl = ext2fs_file_acl_block(sh.fs, (struct ext2_inode *)inode);

	if (acl && bw_range(c, acl, 1, 0, BOWN_XATTR))
		return;
	if (!ext2fs_inode_has_valid_blocks2(sh.fs, (struct ext2_inode *)inode))
		return;
	if (inode->i_flags & EXT4_EXTENTS_FL)
		bw_extents(c, inode);
	else
		extref_block_iterate(sh.fs, c->ino, BLOCK_FLAG_READ_ONLY,
				 bw_block_cb, c);
}

errcode_t scan_block_owners(const blk64_t *blocks, size_t n, bown_func func,
			    void *priv)
{
	struct ext2_inode_large inode;
	ext2_inode_scan scan;
	struct bw_ctx c;
	errcode_t err;

	err = ext2fs_read_inode_bitmap(sh.fs);
	if (err)
		return err;
	err = ext2fs_open_inode_scan(sh.fs, 0, &scan);
	if (err)
		return err;
	memset(&c, 0, sizeof(c));
	c.blocks = blocks;
	c.n = n;
	c.func = func;
	c.priv = priv;
	while (!c.stop) {
		err = ext2fs_get_next_inode_full(scan, &c.ino,
						 (struct ext2_inode *)&inode,
						 sizeof(inode));
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
			continue;
		if (err || !c.ino)
			break;
		if (!ext2fs_test_inode_bitmap2(sh.fs->inode_map, c.ino))
			continue;
		if (!inode.i_links_count && c.ino >= EXT2_FIRST_INO(sh.fs->super))
			continue;
		bw_inode(&c, &inode);
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

static int in_run(blk64_t blk, blk64_t start, blk64_t len)
{
	return start && blk >= start && blk < start + len;
}

int block_group_meta(blk64_t blk, char *what, size_t len)
{
	ext2_filsys fs = sh.fs;
	dgrp_t g;

	if (blk < fs->super->s_first_data_block) {
		snprintf(what, len, "the boot block, before the first data block");
		return 1;
	}
	for (g = 0; g < fs->group_desc_count; g++) {
		blk64_t super = 0, old_desc = 0, new_desc = 0;
		blk_t used = 0;
		blk64_t ndesc = fs->desc_blocks;

		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		if (super == blk || (g == 0 && blk == fs->super->s_first_data_block)) {
			snprintf(what, len, "the superblock of group %u", g);
			return 1;
		}
		if (in_run(blk, old_desc, ndesc) || new_desc == blk) {
			snprintf(what, len, "the group descriptors of group %u", g);
			return 1;
		}
		if (in_run(blk, old_desc + ndesc, old_desc ?
			   fs->super->s_reserved_gdt_blocks : 0)) {
			snprintf(what, len, "the reserved GDT blocks of group %u", g);
			return 1;
		}
		if (blk == ext2fs_block_bitmap_loc(fs, g)) {
			snprintf(what, len, "the block bitmap of group %u", g);
			return 1;
		}
		if (blk == ext2fs_inode_bitmap_loc(fs, g)) {
			snprintf(what, len, "the inode bitmap of group %u", g);
			return 1;
		}
		if (in_run(blk, ext2fs_inode_table_loc(fs, g),
			   fs->inode_blocks_per_group)) {
			snprintf(what, len, "the inode table of group %u", g);
			return 1;
		}
	}
	return 0;
}
