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
 * The shape is the kernel's when it appends: every node full but the
 * last of its level (libext2fs's append leaves one entry fewer in each).
 * A node's block is allocated as libext2fs allocates a split's: from
 * the goal one block before the first block its left neighbour (or, for
 * the first node of a level, the node itself) points to.  No block is
 * written before all of the tree's blocks are allocated, and on an
 * error the blocks taken are given back and the inode is not written.
 */
#include <string.h>
#include "tree/extref_vec.h"
#include "extref_ops_int.h"
#include <ext2fs/ext3_extents.h>
#include "extent_raw.h"

/* Entries of one level: the extents of the leaves, or the index entries
 * of the level above them (both are 12 bytes; ee_block and ei_block
 * first). */
struct bulk_level {
	void		*v;		/* struct ext3_extent or _idx */
	size_t		n, cap;
};

#define ROOT_ENTRIES	4	/* (sizeof(i_block) - header) / 12 */

static errcode_t level_push(struct bulk_level *l, const void *e)
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
static blk64_t room_after(const struct bulk_level *l, blk64_t lblk,
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
static errcode_t add_map(struct bulk_level *l, const struct xr_map *m,
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
static blk64_t entry_target(const struct bulk_level *l, size_t i, int leaf)
{
	if (leaf)
		return xr_extent_start((struct ext3_extent *)l->v + i);
	return xr_extent_idx_child((struct ext3_extent_idx *)l->v + i);
}

struct bulk {
	ext2_filsys		fs;
	ext2_ino_t		ino;
	struct xr_prange_vec	taken;		/* the tree's blocks */
	blk64_t			nodes;		/* how many */
	char			*buf;
	size_t			per;		/* entries a block holds */
};

/* A block for a node, from goal on; libext2fs's allocator and stats. */
static errcode_t alloc_node(struct bulk *b, blk64_t goal, blk64_t *blk)
{
	errcode_t err;

	if (goal <= b->fs->super->s_first_data_block ||
	    goal >= ext2fs_blocks_count(b->fs->super))
		goal = b->fs->super->s_first_data_block;
	err = ext2fs_new_block2(b->fs, goal, NULL, blk);
	if (err)
		return err;
	err = xr_prange_push(&b->taken, *blk, 1);
	if (err)
		return err;
	ext2fs_block_alloc_stats2(b->fs, *blk, +1);
	b->nodes++;
	return 0;
}

/*
 * Allocate a block for every node that holds entries of l (b->per a
 * node), and give up an index entry for each.
 */
static errcode_t alloc_level(struct bulk *b, const struct bulk_level *l,
			     int leaf, struct bulk_level *up)
{
	size_t i, prev = 0;
	errcode_t err = 0;

	for (i = 0; !err && i < l->n; i += b->per) {
		struct ext3_extent_idx ix;
		blk64_t blk;

		err = alloc_node(b, entry_target(l, prev, leaf) - 1, &blk);
		if (err)
			break;
		prev = i;
		ix.ei_block = ((struct ext3_extent *)l->v + i)->ee_block;
		ix.ei_leaf = ext2fs_cpu_to_le32(blk & 0xffffffff);
		ix.ei_leaf_hi = ext2fs_cpu_to_le16(blk >> 32);
		ix.ei_unused = 0;
		err = level_push(up, &ix);
	}
	return err;
}

/* Write the nodes of level l (depth: theirs) to the blocks up names. */
static errcode_t write_level(struct bulk *b, const struct bulk_level *l,
			     int depth, const struct bulk_level *up)
{
	struct ext3_extent_header *eh = (void *)b->buf;
	size_t k, i, cnt;
	errcode_t err = 0;

	for (k = 0; !err && k < up->n; k++) {
		i = k * b->per;
		cnt = l->n - i < b->per ? l->n - i : b->per;
		memset(b->buf, 0, b->fs->blocksize);
		eh->eh_magic = ext2fs_cpu_to_le16(EXT3_EXT_MAGIC);
		eh->eh_entries = ext2fs_cpu_to_le16(cnt);
		eh->eh_max = ext2fs_cpu_to_le16(b->per);
		eh->eh_depth = ext2fs_cpu_to_le16(depth);
		memcpy(eh + 1, (char *)l->v + 12 * i, 12 * cnt);
		err = ext2fs_extent_block_csum_set(b->fs, b->ino, eh);
		if (!err)
			err = io_channel_write_blk64(b->fs->io,
				xr_extent_idx_child(
					(struct ext3_extent_idx *)up->v + k),
				1, b->buf);
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
static void set_root(struct ext2_inode *inode, const struct bulk_level *l,
		     int depth)
{
	struct ext3_extent_header *eh = (void *)inode->i_block;

	memset(inode->i_block, 0, sizeof(inode->i_block));
	eh->eh_magic = ext2fs_cpu_to_le16(EXT3_EXT_MAGIC);
	eh->eh_entries = ext2fs_cpu_to_le16(l->n);
	eh->eh_max = ext2fs_cpu_to_le16(ROOT_ENTRIES);
	eh->eh_depth = ext2fs_cpu_to_le16(depth);
	memcpy(eh + 1, l->v, 12 * l->n);
}

/*
 * Build the levels from the leaves up, each node written once; *depth
 * gets the root's depth and *top the entries the root holds.
 */
static errcode_t build_levels(struct bulk *b, struct bulk_level *lv,
			      int *depth, struct bulk_level **top)
{
	struct bulk_level *cur = &lv[0];
	errcode_t err = 0;
	int d = 0;

	while (!err && cur->n > ROOT_ENTRIES) {
		if (d >= XR_EXT_MAX_DEPTH)
			return EXT2_ET_CANT_INSERT_EXTENT;
		err = alloc_level(b, cur, d == 0, &lv[d + 1]);
		if (!err)
			err = write_level(b, cur, d, &lv[d + 1]);
		cur = &lv[++d];
	}
	*depth = d;
	*top = cur;
	return err;
}

static void give_back(ext2_filsys fs, const struct xr_prange_vec *v)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		ext2fs_block_alloc_stats_range(fs, v->v[i].pblk, v->v[i].len,
					       -1);
}

/*
 * Map m[0..n) (in file order, not overlapping) into the empty extent
 * tree of ino: i_blocks grows by the mapped blocks and the tree's own,
 * and the inode is written once, after every node.
 */
errcode_t xr_extent_build(ext2_filsys fs, ext2_ino_t ino,
			  struct ext2_inode *inode, const struct xr_map *m,
			  size_t n)
{
	struct bulk_level lv[XR_EXT_MAX_DEPTH + 2], *top = NULL;
	struct bulk b = { .fs = fs, .ino = ino };
	blk64_t end = 0, data = 0;
	size_t i;
	int depth = 0;
	errcode_t err = 0;

	if (!xr_extent_tree_empty(inode))
		return EXT2_ET_OP_NOT_SUPPORTED;
	memset(lv, 0, sizeof(lv));
	b.per = (fs->blocksize - sizeof(struct ext3_extent_header)) /
		sizeof(struct ext3_extent);
	for (i = 0; !err && i < n; i++) {
		err = add_map(&lv[0], &m[i], &end);
		data += m[i].len;
	}
	if (!err)
		err = ext2fs_get_mem(fs->blocksize, &b.buf);
	if (!err)
		err = build_levels(&b, lv, &depth, &top);
	/* i_blocks and the root on a copy: the caller's inode changes
	 * only once the tree is whole */
	if (!err) {
		struct ext2_inode in = *inode;

		err = ext2fs_iblk_add_blocks(fs, &in, data + b.nodes);
		if (!err) {
			set_root(&in, top, depth);
			err = ext2fs_write_inode(fs, ino, &in);
		}
		if (!err)
			*inode = in;
	}
	if (err)
		give_back(fs, &b.taken);
	for (i = 0; i < sizeof(lv) / sizeof(lv[0]); i++)
		ext2fs_free_mem(&lv[i].v);
	xr_prange_vec_free(&b.taken);
	ext2fs_free_mem(&b.buf);
	return err;
}
