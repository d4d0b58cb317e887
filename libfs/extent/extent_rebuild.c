/*
 * extent_rebuild.c --- replace the mappings of a logical range by many
 * new ones: the whole extent tree built again (extent_bulk.c) into new
 * blocks, the inode written once, then the old tree's blocks freed.
 *
 * Cloning a long range into a file that already has mappings would,
 * entry by entry, walk from the root (every node on the way read and
 * its checksum verified), insert and rewrite the nodes and the inode for
 * each mapping.  Here the file's mappings are read once, the range's
 * taken out and the new ones merged in, and the tree is built afresh
 * into blocks not in use: until the inode is written the old tree is
 * whole on disk, after it the new one is, so an interruption leaves
 * the old mappings or the new ones (as extent_splice.c does for one
 * leaf).  The old tree's blocks are freed only after the inode write.
 */
#include <string.h>
#include "base/extref_vec.h"
#include "extent/xr_extent.h"
#include "txn/xr_txio.h"

/* Below this many new mappings the entry-by-entry path is cheaper. */
#define XR_REBUILD_MIN	32

struct old_tree {
	struct xr_map_vec	maps;		/* every leaf mapping */
	struct xr_prange_vec	nodes;		/* the tree's own blocks */
	blk64_t			data;		/* blocks mapped */
};

static errcode_t collect(const struct ext2fs_extent *e, void *priv)
{
	struct old_tree *o = priv;
	struct xr_map m;

	if (!(e->e_flags & EXT2_EXTENT_FLAGS_LEAF))
		return xr_prange_push(&o->nodes, e->e_pblk, 1);
	m.lblk = e->e_lblk;
	m.pblk = e->e_pblk;
	m.len = e->e_len;
	m.uninit = (e->e_flags & EXT2_EXTENT_FLAGS_UNINIT) != 0;
	o->data += m.len;
	return xr_map_push(&o->maps, &m);
}

static blk64_t nblocks(const struct xr_prange_vec *v)
{
	blk64_t n = 0;
	size_t i;

	for (i = 0; i < v->n; i++)
		n += v->v[i].len;
	return n;
}

/* The part of old mapping m before lstart, or after lend, if any. */
static errcode_t keep_outside(struct xr_map_vec *out, const struct xr_map *m,
			      blk64_t lstart, blk64_t lend, int after)
{
	struct xr_map k = *m;
	blk64_t end = m->lblk + m->len;

	if (!after) {
		if (m->lblk >= lstart)
			return 0;
		k.len = (end < lstart ? end : lstart) - m->lblk;
	} else {
		if (end <= lend)
			return 0;
		if (m->lblk < lend) {
			k.lblk = lend;
			k.pblk = m->pblk + (lend - m->lblk);
		}
		k.len = end - k.lblk;
	}
	return xr_map_push(out, &k);
}

/* What of old mapping m lies in [lstart, lend): it loses its mapping. */
static errcode_t drop_inside(struct xr_prange_vec *removed,
			     const struct xr_map *m, blk64_t lstart,
			     blk64_t lend)
{
	blk64_t s = m->lblk > lstart ? m->lblk : lstart;
	blk64_t e = m->lblk + m->len < lend ? m->lblk + m->len : lend;

	return s < e ? xr_prange_push(removed, m->pblk + (s - m->lblk), e - s)
		     : 0;
}

/*
 * The file's mappings with [lstart, lend) replaced by nm (all inside
 * it, in file order), in file order; what was mapped there goes to gone.
 */
static errcode_t merge(const struct old_tree *o, blk64_t lstart,
		       blk64_t lend, const struct xr_map *nm, size_t nnew,
		       struct xr_map_vec *out, struct xr_prange_vec *gone)
{
	size_t i, k;
	errcode_t err = 0;

	for (k = 0; k < nnew; k++)
		if (nm[k].lblk < lstart || nm[k].lblk + nm[k].len > lend ||
		    (k && nm[k].lblk < nm[k - 1].lblk + nm[k - 1].len))
			return EXT2_ET_OP_NOT_SUPPORTED;
	for (i = 0; !err && i < o->maps.n; i++) {
		err = keep_outside(out, &o->maps.v[i], lstart, lend, 0);
		if (!err)
			err = drop_inside(gone, &o->maps.v[i], lstart, lend);
	}
	for (k = 0; !err && k < nnew; k++)
		err = xr_map_push(out, &nm[k]);
	for (i = 0; !err && i < o->maps.n; i++)
		err = keep_outside(out, &o->maps.v[i], lstart, lend, 1);
	return err;
}

/* Build the plan into inode: on a copy whose tree is emptied and whose
 * i_blocks lost the old mappings and nodes; the inode written once. */
static errcode_t swap_tree(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, const struct old_tree *o,
			   struct xr_extent_plan *plan)
{
	struct ext2_inode in = *inode;
	ext2_extent_handle_t h;
	errcode_t err;
	size_t i;

	memset(in.i_block, 0, sizeof(in.i_block));
	err = ext2fs_iblk_sub_blocks(fs, &in, o->data + nblocks(&o->nodes));
	/* an empty root header, as libext2fs writes it */
	if (!err)
		err = ext2fs_extent_open2(fs, ino, &in, &h);
	if (err)
		return err;
	ext2fs_extent_free(h);
	err = xr_extent_plan_build(fs, ino, &in, plan);
	if (err)
		return err;
	*inode = in;
	for (i = 0; i < o->nodes.n; i++)
		xr_block_alloc_stats_range(fs, o->nodes.v[i].pblk,
					   o->nodes.v[i].len, -1);
	return 0;
}

/*
 * Replace the mappings of [lstart, lend) by nm[0..nnew) (in file order,
 * inside the range), rebuilding the tree.  EXT2_ET_OP_NOT_SUPPORTED
 * (nothing changed) when it is not worth it: too few new mappings.
 */
errcode_t xr_extent_rebuild(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode *inode, blk64_t lstart,
			    blk64_t lend, const struct xr_map *nm, size_t nnew,
			    struct xr_prange_vec *removed)
{
	struct old_tree o = { { 0 }, { 0 }, 0 };
	struct xr_map_vec all = { 0 };
	struct xr_prange_vec gone = { 0 };
	struct xr_extent_plan plan = { 0 };
	errcode_t err;
	size_t k;

	if (nnew < XR_REBUILD_MIN || !(inode->i_flags & EXT4_EXTENTS_FL))
		return EXT2_ET_OP_NOT_SUPPORTED;
	err = xr_extent_walk(fs, ino, inode, XR_WALK_INDEX, collect, &o);
	if (!err)
		err = merge(&o, lstart, lend, nm, nnew, &all, &gone);
	/* planned before any change: memory and room for the new tree */
	if (!err)
		err = xr_extent_plan(fs, all.v, all.n, &plan);
	/* before the swap: no memory is needed after it (on an error the
	 * caller leaves the counts high and drops removed) */
	for (k = 0; !err && k < gone.n; k++)
		err = xr_prange_push(removed, gone.v[k].pblk, gone.v[k].len);
	if (!err)
		err = swap_tree(fs, ino, inode, &o, &plan);
	xr_extent_plan_free(&plan);
	xr_prange_vec_free(&gone);
	xr_map_vec_free(&all);
	xr_map_vec_free(&o.maps);
	xr_prange_vec_free(&o.nodes);
	return err;
}
