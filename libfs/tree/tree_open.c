/*
 * tree_open.c --- load the tree from inode 5, free it, report figures.
 */
#include <string.h>
#include "extref_int.h"

errcode_t xr_tree_init(ext2_filsys fs, int flags, struct extref_tree **ret)
{
	struct extref_tree *t;
	errcode_t err;

	err = ext2fs_get_memzero(sizeof(*t), &t);
	if (err)
		return err;
	t->fs = fs;
	t->flags = flags;
	t->seed = extref_csum_seed(fs);
	t->bs = fs->blocksize;
	t->disk_cap = EXTREF_NODE_CAPACITY(t->bs);
	t->cap = t->disk_cap;
	err = ext2fs_get_mem(t->bs, &t->buf);
	if (err) {
		ext2fs_free_mem(&t);
		return err;
	}
	*ret = t;
	return 0;
}

void extref_tree_free(extref_tree_t t)
{
	if (!t)
		return;
	xr_subtree_free_mem(t->root);
	ext2fs_free_mem(&t->pmap);
	ext2fs_free_mem(&t->pmap_own);
	xr_owned_free(t);
	ext2fs_free_mem(&t->free.v);
	ext2fs_free_mem(&t->pending.v);
	ext2fs_free_mem(&t->buf);
	ext2fs_free_mem(&t);
}

/*
 * The most lblks the tree file can hold: no more than inode 5's size or
 * its block count (i_blocks, index blocks included) say, nor than the
 * filesystem has.  A header counting more is refused before anything is
 * allocated for it.
 */
__u64 xr_ino5_max_blocks(ext2_filsys fs, struct ext2_inode *inode)
{
	__u64 max = ext2fs_blocks_count(fs->super);
	__u64 size = (EXT2_I_SIZE(inode) + fs->blocksize - 1) / fs->blocksize;
	__u64 held = ext2fs_get_stat_i_blocks(fs, inode) /
		     (fs->blocksize / 512);

	if (size < max)
		max = size;
	if (held < max)
		max = held;
	return max;
}

/* Inode 5 must be a regular file with extents whose block 0 is mapped. */
static errcode_t header_block(ext2_filsys fs, blk64_t *pblk, __u64 *max)
{
	struct ext2_inode inode;
	errcode_t err;

	if (!ext2fs_has_feature_shared_blocks(fs->super))
		return EXTREF_ERR_NO_FEATURE;
	err = ext2fs_read_inode(fs, EXTREF_INO, &inode);
	if (err)
		return err;
	if (inode.i_mode == 0 && ext2fs_get_stat_i_blocks(fs, &inode) == 0)
		return EXTREF_ERR_NO_TREE;
	if (!LINUX_S_ISREG(inode.i_mode) ||
	    !(inode.i_flags & EXT4_EXTENTS_FL))
		return EXTREF_ERR_INO5_MODE;
	*max = xr_ino5_max_blocks(fs, &inode);
	*pblk = 0;
	err = ext2fs_bmap2(fs, EXTREF_INO, &inode, NULL, 0, 0, NULL, pblk);
	if (err)
		return err;
	if (*pblk && (*pblk < fs->super->s_first_data_block ||
		      *pblk >= ext2fs_blocks_count(fs->super)))
		return EXTREF_ERR_INO5_MAP;
	return *pblk ? 0 : EXTREF_ERR_NO_TREE;
}

/* Read and validate the header into t. */
static errcode_t load_header(struct extref_tree *t)
{
	blk64_t pblk;
	__u64 max;
	errcode_t err;

	err = header_block(t->fs, &pblk, &max);
	if (!err)
		err = io_channel_read_blk64(t->fs->io, pblk, 1, t->buf);
	if (!err)
		err = xr_check_header(t->buf, t->bs, t->seed,
				      t->fs->super->s_uuid, max);
	if (err)
		return err;
	extref_tree_hdr_decode(&t->hdr, (const void *)t->buf);
	if ((t->flags & EXTREF_TREE_RW) &&
	    (t->hdr.h_ro_compat & ~EXTREF_FEATURE_RO_COMPAT_SUPP))
		return EXTREF_ERR_HDR_RO_COMPAT;
	t->depth = t->hdr.h_depth;
	t->nrecords = t->hdr.h_nrecords;
	t->nblocks = t->hdr.h_nblocks;
	t->open_nblocks = t->nblocks;
	t->generation = t->hdr.h_generation;
	t->stamp = t->hdr.h_stamp;
	return 0;
}

/* The header and block map only: enough to walk the tree from disk. */
errcode_t xr_tree_open_header(ext2_filsys fs, struct extref_tree **ret)
{
	struct extref_tree *t;
	errcode_t err;

	err = xr_tree_init(fs, 0, &t);
	if (err)
		return err;
	err = load_header(t);
	if (!err)
		err = xr_pmap_load(t);
	if (err) {
		extref_tree_free(t);
		return err;
	}
	*ret = t;
	return 0;
}

errcode_t extref_tree_open(ext2_filsys fs, int flags, extref_tree_t *ret)
{
	static const struct xr_bounds all = { 0, 0, 0 };
	struct extref_tree *t;
	__u32 root;
	errcode_t err;

	if ((flags & EXTREF_TREE_RW) && !(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = xr_tree_init(fs, flags, &t);
	if (err)
		return err;
	err = load_header(t);
	if (!err)
		err = xr_pmap_load(t);
	root = t->hdr.h_root;
	if (!err && root) {
		err = xr_node_read(t, root, t->depth - 1, &all, &t->root);
		if (!err && t->nrecords == 0)
			err = EXTREF_ERR_HDR_NRECORDS;
	}
	if (!err)
		err = xr_free_load(t);
	if (err) {
		extref_tree_free(t);
		return err;
	}
	*ret = t;
	return 0;
}

errcode_t extref_tree_close(extref_tree_t t)
{
	errcode_t err = 0;

	if (!t)
		return 0;
	if (t->flags & EXTREF_TREE_RW)
		err = extref_tree_commit(t);
	extref_tree_free(t);
	return err;
}

void extref_tree_set_fanout(extref_tree_t t, unsigned int max_entries)
{
	if (max_entries == 0 || max_entries > t->disk_cap)
		max_entries = t->disk_cap;
	if (max_entries < 4)
		max_entries = 4;
	t->cap = max_entries;
}

static errcode_t count_nodes(struct extref_tree *t, struct xr_node *n,
			     const struct xr_bounds *b,
			     struct extref_tree_stats *st)
{
	struct xr_bounds cb;
	errcode_t err;
	int i;

	st->nodes++;
	if (n->level == 0) {
		st->leaves++;
		return 0;
	}
	for (i = 0; i < n->nr; i++) {
		struct xr_node *child;

		err = xr_child(t, n, i, b, &child);
		if (err)
			return err;
		xr_child_bounds(n, i, b, &cb);
		err = count_nodes(t, child, &cb, st);
		if (err)
			return err;
	}
	return 0;
}

/* Figures of the tree as it stands in memory (reads every node). */
errcode_t extref_tree_get_stats(extref_tree_t t, struct extref_tree_stats *st)
{
	static const struct xr_bounds all = { 0, 0, 0 };

	memset(st, 0, sizeof(*st));
	st->records = t->nrecords;
	st->depth = t->depth;
	st->free_nodes = t->free.n;
	st->file_blocks = t->nblocks;
	st->capacity = t->cap;
	st->generation = t->generation;
	if (t->broken)
		return t->broken;
	return t->root ? count_nodes(t, t->root, &all, st) : 0;
}
