/*
 * extent_bulk.c --- build an empty inode's extent tree from its mappings
 * in one pass, a node at a time.
 *
 * Mapping a file of N extents one entry at a time (extent_map.c) costs,
 * for every entry, a walk from the root, an insert, the parents fixed,
 * each block it touches checksummed and written again, and the inode
 * written: N times over.  A whole-file reflink, or a clone into a file
 * that has no mappings yet, knows every mapping before it writes, in
 * file order: here the leaves are filled in order, each checksummed and
 * written once, then the index blocks above them likewise, then the
 * root in the inode, written once.
 *
 * The shape is nearly the kernel's when it appends (every node full but
 * the last of its level; libext2fs's append leaves a leaf one entry
 * short): every index node full but the last, every leaf two entries
 * short but the last (per_node below).
 * A node's block is allocated as libext2fs allocates a split's: from
 * the goal one block before the first block its left neighbour (or, for
 * the first node of a level, the node itself) points to.
 *
 * Two steps: the plan (every entry decoded, every array the build needs
 * allocated, the room for the tree's blocks checked) is made before the
 * caller changes anything; the build then allocates and writes and
 * needs no memory, so that a reflink that raised its counts does not
 * fail half-way for want of it.  On an error the build gives back the
 * blocks it took and does not write the inode.
 */
#include <string.h>
#include "base/extref_vec.h"
#include "extent/xr_extent.h"
#include <ext2fs/ext3_extents.h>
#include "extent_raw.h"

#define ROOT_ENTRIES	4	/* (sizeof(i_block) - header) / 12 */

static errcode_t level_push(struct xr_ext_level *l, const void *e)
{
	errcode_t err = xr_grow(&l->v, &l->cap, l->n, 12);

	if (!err)
		memcpy((char *)l->v + 12 * l->n++, e, 12);
	return err;
}

static blk64_t max_len(int uninit)
{
	return uninit ? EXT_UNINIT_MAX_LEN : EXT_INIT_MAX_LEN;
}

/* Room left in the last leaf entry for blocks continuing it at (lblk,
 * pblk) with the same state; 0 when they do not continue it. */
static blk64_t room_after(const struct xr_ext_level *l, blk64_t lblk,
			  blk64_t pblk, int uninit)
{
	const struct ext3_extent *last;
	unsigned int len;
	int un;

	if (!l->n)
		return 0;
	last = (const struct ext3_extent *)l->v + l->n - 1;
	len = xr_extent_len(last, &un);
	if (ext2fs_le32_to_cpu(last->ee_block) + len != lblk ||
	    xr_extent_start(last) + len != pblk || un != uninit)
		return 0;
	return max_len(un) - len;
}

/* Append mapping m to the leaf entries, merged with the last one when it
 * continues it, cut in pieces of at most the largest extent length. */
static errcode_t add_map(struct xr_ext_level *l, const struct xr_map *m,
			 blk64_t *end)
{
	blk64_t lblk = m->lblk, pblk = m->pblk, left = m->len;
	errcode_t err = 0;

	if (lblk < *end || lblk + left > (1ULL << 32) || lblk + left < lblk)
		return EXTREF_ERR_RANGE;	/* unsorted, or past 2^32 */
	*end = lblk + left;
	while (!err && left) {
		blk64_t room = room_after(l, lblk, pblk, m->uninit);
		blk64_t part = room ? room : max_len(m->uninit);
		struct ext3_extent e, *last;

		if (part > left)
			part = left;
		if (room) {
			last = (struct ext3_extent *)l->v + l->n - 1;
			last->ee_len = ext2fs_cpu_to_le16(
				ext2fs_le16_to_cpu(last->ee_len) + part);
		} else {
			e.ee_block = ext2fs_cpu_to_le32(lblk);
			e.ee_len = ext2fs_cpu_to_le16(part +
				(m->uninit ? EXT_INIT_MAX_LEN : 0));
			e.ee_start_hi = ext2fs_cpu_to_le16(pblk >> 32);
			e.ee_start = ext2fs_cpu_to_le32(pblk & 0xffffffff);
			err = level_push(l, &e);
		}
		lblk += part;
		pblk += part;
		left -= part;
	}
	return err;
}

/* The first block entry i of a level points to (data or a node). */
static blk64_t entry_target(const struct xr_ext_level *l, size_t i, int leaf)
{
	if (leaf)
		return xr_extent_start((struct ext3_extent *)l->v + i);
	return xr_extent_idx_child((struct ext3_extent_idx *)l->v + i);
}

/* Entries a block node holds (eh_max). */
static size_t per_block(ext2_filsys fs)
{
	return (fs->blocksize - sizeof(struct ext3_extent_header)) /
	       sizeof(struct ext3_extent);
}

/*
 * Entries put in each node of level d: a leaf is left LEAF_SLACK short,
 * so that the first copy-on-write into it, which cuts an extent in three,
 * still fits and is one rewrite of the leaf (extent_splice.c) rather
 * than libext2fs's split, which is not atomic.
 */
#define LEAF_SLACK	2
static size_t per_node(ext2_filsys fs, int d)
{
	return d ? per_block(fs) : per_block(fs) - LEAF_SLACK;
}

void xr_extent_plan_free(struct xr_extent_plan *p)
{
	size_t i;

	for (i = 0; i < sizeof(p->lv) / sizeof(p->lv[0]); i++)
		ext2fs_free_mem(&p->lv[i].v);
	ext2fs_free_mem(&p->taken);
	ext2fs_free_mem(&p->buf);
	memset(p, 0, sizeof(*p));
}

/* The levels above the leaves, their arrays allocated to size. */
static errcode_t plan_levels(ext2_filsys fs, struct xr_extent_plan *p)
{
	size_t cnt = p->lv[0].n, per;
	errcode_t err = 0;
	int d = 0;

	while (!err && cnt > ROOT_ENTRIES) {
		if (d >= XR_EXT_MAX_DEPTH)
			return EXT2_ET_CANT_INSERT_EXTENT;
		per = per_node(fs, d);
		cnt = (cnt + per - 1) / per;
		p->nodes += cnt;
		err = ext2fs_get_array(cnt, sizeof(struct ext3_extent_idx),
				       &p->lv[++d].v);
		p->lv[d].cap = cnt;
	}
	p->depth = d;
	return err;
}

/*
 * Plan the tree of m[0..n) (in file order, not overlapping): refused
 * with EXT2_ET_BLOCK_ALLOC_FAIL when the filesystem has fewer free
 * blocks than the tree needs.  Free with xr_extent_plan_free.
 */
errcode_t xr_extent_plan(ext2_filsys fs, const struct xr_map *m, size_t n,
			 struct xr_extent_plan *p)
{
	blk64_t end = 0;
	size_t i;
	errcode_t err = 0;

	memset(p, 0, sizeof(*p));
	for (i = 0; !err && i < n; i++) {
		err = add_map(&p->lv[0], &m[i], &end);
		p->data += m[i].len;
	}
	if (!err)
		err = plan_levels(fs, p);
	if (!err)
		err = ext2fs_get_array(p->nodes ? p->nodes : 1,
				       sizeof(*p->taken), &p->taken);
	if (!err)
		err = ext2fs_get_mem(fs->blocksize, &p->buf);
	if (!err && p->nodes > ext2fs_free_blocks_count(fs->super))
		err = EXT2_ET_BLOCK_ALLOC_FAIL;
	if (err)
		xr_extent_plan_free(p);
	return err;
}

/* A block for a node, from goal on: libext2fs's allocator and stats. */
static errcode_t alloc_node(ext2_filsys fs, struct xr_extent_plan *p,
			    blk64_t goal, blk64_t *blk)
{
	errcode_t err;

	if (goal <= fs->super->s_first_data_block ||
	    goal >= ext2fs_blocks_count(fs->super))
		goal = fs->super->s_first_data_block;
	err = ext2fs_new_block2(fs, goal, NULL, blk);
	if (err)
		return err;
	ext2fs_block_alloc_stats2(fs, *blk, +1);
	p->taken[p->ntaken++] = *blk;
	return 0;
}

/*
 * Allocate a block for every node that holds entries of level d (per a
 * node), and fill level d + 1 with an index entry for each.
 */
static errcode_t alloc_level(ext2_filsys fs, struct xr_extent_plan *p, int d)
{
	const struct xr_ext_level *l = &p->lv[d];
	struct xr_ext_level *up = &p->lv[d + 1];
	size_t i, prev = 0, per = per_node(fs, d);
	errcode_t err = 0;

	for (i = 0; !err && i < l->n; i += per) {
		struct ext3_extent_idx *ix = (struct ext3_extent_idx *)up->v +
					     up->n;
		blk64_t blk;

		err = alloc_node(fs, p, entry_target(l, prev, d == 0) - 1, &blk);
		if (err)
			break;
		prev = i;
		ix->ei_block = ((struct ext3_extent *)l->v + i)->ee_block;
		ix->ei_leaf = ext2fs_cpu_to_le32(blk & 0xffffffff);
		ix->ei_leaf_hi = ext2fs_cpu_to_le16(blk >> 32);
		ix->ei_unused = 0;
		up->n++;
	}
	return err;
}

/* Write the nodes of level d, each to the block level d + 1 names. */
static errcode_t write_level(ext2_filsys fs, ext2_ino_t ino,
			     struct xr_extent_plan *p, int d)
{
	const struct xr_ext_level *l = &p->lv[d], *up = &p->lv[d + 1];
	struct ext3_extent_header *eh = (void *)p->buf;
	size_t k, i, cnt, per = per_node(fs, d);
	errcode_t err = 0;

	for (k = 0; !err && k < up->n; k++) {
		i = k * per;
		cnt = l->n - i < per ? l->n - i : per;
		memset(p->buf, 0, fs->blocksize);
		eh->eh_magic = ext2fs_cpu_to_le16(EXT3_EXT_MAGIC);
		eh->eh_entries = ext2fs_cpu_to_le16(cnt);
		eh->eh_max = ext2fs_cpu_to_le16(per_block(fs));
		eh->eh_depth = ext2fs_cpu_to_le16(d);
		memcpy(eh + 1, (char *)l->v + 12 * i, 12 * cnt);
		err = ext2fs_extent_block_csum_set(fs, ino, eh);
		if (!err)
			err = io_channel_write_blk64(fs->io,
				xr_extent_idx_child(
					(struct ext3_extent_idx *)up->v + k),
				1, p->buf);
	}
	return err;
}

/* Whether inode has an extent tree with nothing in it. */
int xr_extent_tree_empty(const struct ext2_inode *inode)
{
	const struct ext3_extent_header *eh = (const void *)inode->i_block;

	if (!(inode->i_flags & EXT4_EXTENTS_FL))
		return 0;
	if (ext2fs_le16_to_cpu(eh->eh_magic) != EXT3_EXT_MAGIC)
		return 0;
	return ext2fs_le16_to_cpu(eh->eh_entries) == 0;
}

/* Put the top level's entries (at most ROOT_ENTRIES) in the inode. */
static void set_root(struct ext2_inode *inode, const struct xr_ext_level *l,
		     int depth)
{
	struct ext3_extent_header *eh = (void *)inode->i_block;

	memset(inode->i_block, 0, sizeof(inode->i_block));
	eh->eh_magic = ext2fs_cpu_to_le16(EXT3_EXT_MAGIC);
	eh->eh_entries = ext2fs_cpu_to_le16(l->n);
	eh->eh_max = ext2fs_cpu_to_le16(ROOT_ENTRIES);
	eh->eh_depth = ext2fs_cpu_to_le16(depth);
	if (l->n)	/* nothing mapped: no array at all */
		memcpy(eh + 1, l->v, 12 * l->n);
}

/*
 * Build the planned tree into the empty extent tree of ino, the levels
 * from the leaves up, each node written once; then i_blocks grows by
 * the mapped blocks and the tree's own and the inode is written, once.
 * A plan is built once.
 */
errcode_t xr_extent_plan_build(ext2_filsys fs, ext2_ino_t ino,
			       struct ext2_inode *inode,
			       struct xr_extent_plan *p)
{
	struct ext2_inode in = *inode;
	errcode_t err = 0;
	size_t i;
	int d;

	if (!xr_extent_tree_empty(inode) || p->ntaken || p->lv[1].n)
		return EXT2_ET_OP_NOT_SUPPORTED;
	for (d = 0; !err && d < p->depth; d++) {
		err = alloc_level(fs, p, d);
		if (!err)
			err = write_level(fs, ino, p, d);
	}
	/* i_blocks and the root on a copy: the caller's inode changes
	 * only once the tree is whole */
	if (!err)
		err = ext2fs_iblk_add_blocks(fs, &in, p->data + p->nodes);
	/* the nodes reach the disk before the inode that names them (a
	 * power cut on an image without a journal; with one, the flush
	 * waits for the commit) */
	if (!err && p->depth)
		err = io_channel_flush(fs->io);
	if (!err) {
		set_root(&in, &p->lv[p->depth], p->depth);
		err = ext2fs_write_inode(fs, ino, &in);
	}
	if (!err) {
		*inode = in;
		return 0;
	}
	for (i = 0; i < p->ntaken; i++)
		ext2fs_block_alloc_stats2(fs, p->taken[i], -1);
	return err;
}

errcode_t xr_extent_build(ext2_filsys fs, ext2_ino_t ino,
			  struct ext2_inode *inode, const struct xr_map *m,
			  size_t n)
{
	struct xr_extent_plan p;
	errcode_t err;

	if (!xr_extent_tree_empty(inode))
		return EXT2_ET_OP_NOT_SUPPORTED;
	err = xr_extent_plan(fs, m, n, &p);
	if (err)
		return err;
	err = xr_extent_plan_build(fs, ino, inode, &p);
	xr_extent_plan_free(&p);
	return err;
}
