/*
 * pmap.c --- the blocks of inode 5: logical to physical, and growth.
 */
#include <string.h>
#include "extref_int.h"

/* Room for lblks below len; the capacity doubles, never past 2^32 - 1. */
static errcode_t pmap_reserve(struct extref_tree *t, __u32 len)
{
	errcode_t err;
	__u64 cap = t->pmap_len ? t->pmap_len : 16;

	if (len <= t->pmap_len)
		return 0;
	while (cap < len)
		cap *= 2;
	if (cap > 0xffffffffULL)
		cap = 0xffffffffULL;
	err = ext2fs_resize_mem(t->pmap_len * sizeof(blk64_t),
				cap * sizeof(blk64_t), &t->pmap);
	if (!err)
		err = ext2fs_resize_mem(t->pmap_len, cap, &t->pmap_own);
	if (err)
		return err;
	memset(t->pmap + t->pmap_len, 0, (cap - t->pmap_len) * sizeof(blk64_t));
	memset(t->pmap_own + t->pmap_len, 0, cap - t->pmap_len);
	t->pmap_len = cap;
	return 0;
}

struct pmap_walk {
	struct extref_tree	*t;
	__u32			limit;
	errcode_t		err;
};

static int pmap_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		      blk64_t ref_blk, int ref_offset, void *priv)
{
	struct pmap_walk *w = priv;

	(void) ref_blk; (void) ref_offset;
	if (blockcnt < 0 || (__u64)blockcnt >= w->limit)
		return 0;
	/* A block outside the filesystem stays unmapped: reading it fails
	 * as a damaged tree, not as an I/O error. */
	if (*blocknr < fs->super->s_first_data_block ||
	    *blocknr >= ext2fs_blocks_count(fs->super))
		return 0;
	w->err = pmap_reserve(w->t, blockcnt + 1);
	if (w->err)
		return BLOCK_ABORT;
	w->t->pmap[blockcnt] = *blocknr;
	return 0;
}

/*
 * Map every block of inode 5 below the larger of its size and the
 * header's h_nblocks.  Unmapped entries stay 0: reading one is an error.
 */
errcode_t xr_pmap_load(struct extref_tree *t)
{
	struct ext2_inode inode;
	struct pmap_walk w = { .t = t };
	errcode_t err;
	__u64 isize;

	err = ext2fs_read_inode(t->fs, EXTREF_INO, &inode);
	if (err)
		return err;
	isize = EXT2_I_SIZE(&inode) / t->bs;
	w.limit = t->nblocks;
	if (isize > w.limit && isize < (__u64)t->nblocks + 65536)
		w.limit = isize;
	err = pmap_reserve(t, t->nblocks);
	if (err)
		return err;
	err = extref_block_iterate(t->fs, EXTREF_INO,
			       BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_DATA_ONLY,
			       pmap_block, &w);
	return err ? err : w.err;
}

/*
 * Make sure lblk has a physical block and that inode 5's size covers it.
 * A block inode 5 already maps there (left by an interrupted commit, or
 * put there by a hostile image) is taken only once proven the tree's
 * own (owned.c), before inode 5's size changes; otherwise a new block is
 * allocated near the previous lblk's, which is the tree's own.
 */
errcode_t xr_pmap_grow(struct extref_tree *t, __u32 lblk)
{
	struct ext2_inode inode;
	blk64_t pblk = 0;
	errcode_t err;

	err = pmap_reserve(t, lblk + 1);
	if (err)
		return err;
	err = ext2fs_read_inode(t->fs, EXTREF_INO, &inode);
	if (!err && t->pmap[lblk] == 0)
		err = ext2fs_bmap2(t->fs, EXTREF_INO, &inode, NULL, 0, lblk,
				   NULL, &pblk);
	if (err)
		return err;
	if (t->pmap[lblk] == 0 && pblk) {
		t->pmap[lblk] = pblk;
	} else if (t->pmap[lblk] == 0) {
		t->growing++;
		err = ext2fs_bmap2(t->fs, EXTREF_INO, &inode, NULL, BMAP_ALLOC,
				   lblk, NULL, &pblk);
		t->growing--;
		if (err)
			return err;
		t->pmap[lblk] = pblk;
		xr_lblk_fresh(t, lblk);
		err = ext2fs_read_inode(t->fs, EXTREF_INO, &inode);
		if (err)
			return err;
	}
	/* A block not allocated here is proven before inode 5 changes. */
	err = xr_lblk_prove(t, lblk);
	if (err)
		return err;
	if (EXT2_I_SIZE(&inode) < ((__u64)lblk + 1) * t->bs) {
		err = ext2fs_inode_size_set(t->fs, &inode,
					    ((__u64)lblk + 1) * t->bs);
		if (!err)
			err = ext2fs_write_inode(t->fs, EXTREF_INO, &inode);
	}
	return err;
}

errcode_t xr_read_lblk(struct extref_tree *t, __u32 lblk, void *buf)
{
	if (lblk >= t->pmap_len || t->pmap[lblk] == 0)
		return EXTREF_ERR_INO5_SIZE;
	return io_channel_read_blk64(t->fs->io, t->pmap[lblk], 1, buf);
}

/* Only a block proven the tree's own is ever written (owned.c). */
errcode_t xr_write_lblk(struct extref_tree *t, __u32 lblk, const void *buf)
{
	if (lblk >= t->pmap_len || t->pmap[lblk] == 0)
		return EXTREF_ERR_INO5_SIZE;
	if (!t->pmap_own[lblk])
		return EXTREF_ERR_TREE_BLOCK_FOREIGN;
	return io_channel_write_blk64(t->fs->io, t->pmap[lblk], 1, buf);
}
