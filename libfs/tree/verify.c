/*
 * verify.c --- pure validators of the tree's blocks and nodes.
 *
 * Each validator looks at one object, changes nothing, and returns 0 or
 * the EXTREF_ERR_* code of the first check that failed.  Callers decide
 * how to report: the library refuses the tree, fsck prints a problem.
 */
#include <string.h>
#include "extref_int.h"

/*
 * max_nblocks is the most lblks the tree file can hold (tree_open.c: what
 * inode 5's size and block count allow, and never more than the
 * filesystem's blocks): nothing is allocated for a larger h_nblocks.
 */
errcode_t xr_check_header(const void *block, unsigned int bs, __u32 seed,
			  const __u8 *uuid, __u64 max_nblocks)
{
	struct extref_tree_hdr h;

	extref_tree_hdr_decode(&h, block);
	if (h.h_magic != EXTREF_HDR_MAGIC)
		return EXTREF_ERR_HDR_MAGIC;
	if (h.h_checksum != ext2fs_crc32c_le(seed, block,
					     EXTREF_HDR_CSUM_OFFSET))
		return EXTREF_ERR_HDR_CSUM;
	if (h.h_version != EXTREF_VERSION)
		return EXTREF_ERR_HDR_VERSION;
	if (h.h_incompat & ~EXTREF_FEATURE_INCOMPAT_SUPP)
		return EXTREF_ERR_HDR_INCOMPAT;
	if (h.h_blocksize != bs)
		return EXTREF_ERR_HDR_BLOCKSIZE;
	if (memcmp(h.h_uuid, uuid, sizeof(h.h_uuid)) != 0)
		return EXTREF_ERR_HDR_UUID;
	if (h.h_nblocks > max_nblocks)
		return EXTREF_ERR_HDR_NBLOCKS;
	if (h.h_nblocks == 0 || h.h_depth > EXTREF_MAX_DEPTH ||
	    (h.h_root == 0) != (h.h_depth == 0) ||
	    h.h_root >= h.h_nblocks || h.h_free_head >= h.h_nblocks ||
	    h.h_free_count >= h.h_nblocks ||
	    (h.h_free_head == 0) != (h.h_free_count == 0))
		return EXTREF_ERR_HDR_GEOMETRY;
	if ((h.h_root == 0 && h.h_nrecords != 0) ||
	    h.h_nrecords > (__u64)(h.h_nblocks - 1) * EXTREF_NODE_CAPACITY(bs))
		return EXTREF_ERR_HDR_NRECORDS;
	return 0;
}

static errcode_t check_node_hdr(const void *block, unsigned int bs,
				__u32 seed, __u32 lblk, __u32 magic)
{
	struct extref_node_hdr h;

	extref_node_hdr_decode(&h, block);
	if (h.n_magic != magic)
		return magic == EXTREF_FREE_MAGIC ? EXTREF_ERR_FREE_LIST :
			EXTREF_ERR_NODE_MAGIC;
	if (h.n_checksum !=
	    xr_block_csum(seed, block, bs, EXTREF_NODE_CSUM_OFFSET))
		return EXTREF_ERR_NODE_CSUM;
	if (h.n_blkno != lblk)
		return EXTREF_ERR_NODE_BLKNO;
	return 0;
}

/* A tree node's block: magic, checksum, own block number, entry count. */
errcode_t xr_check_node_block(const void *block, unsigned int bs,
			      __u32 seed, __u32 lblk)
{
	struct extref_node_hdr h;
	errcode_t err;

	err = check_node_hdr(block, bs, seed, lblk, EXTREF_NODE_MAGIC);
	if (err)
		return err;
	extref_node_hdr_decode(&h, block);
	if (h.n_nr == 0 || h.n_nr > EXTREF_NODE_CAPACITY(bs))
		return EXTREF_ERR_NODE_NR;
	if (h.n_level >= EXTREF_MAX_DEPTH)
		return EXTREF_ERR_NODE_LEVEL;
	return 0;
}

/* A free node's block: magic, checksum, own number, link in range. */
errcode_t xr_check_free_block(const void *block, unsigned int bs,
			      __u32 seed, __u32 lblk, __u32 nblocks)
{
	struct extref_node_hdr h;
	errcode_t err;

	err = check_node_hdr(block, bs, seed, lblk, EXTREF_FREE_MAGIC);
	if (err)
		return err == EXTREF_ERR_FREE_LIST ? err : EXTREF_ERR_FREE_LIST;
	extref_node_hdr_decode(&h, block);
	if (h.n_next >= nblocks)
		return EXTREF_ERR_FREE_LIST;
	return 0;
}

/* One record: non-empty, count >= 2, inside the filesystem. */
errcode_t xr_check_rec(const struct extref_rec *r, blk64_t first_data,
		       blk64_t fs_blocks)
{
	if (r->len == 0 || r->len > EXTREF_MAX_REC_LEN ||
	    r->start < first_data || r->start >= fs_blocks ||
	    r->len > fs_blocks - r->start)
		return EXTREF_ERR_REC_LEN;
	if (r->count < 2)
		return EXTREF_ERR_REC_COUNT;
	return 0;
}

static int in_bounds(blk64_t key, const struct xr_bounds *b)
{
	return key >= b->lo && (b->hi == 0 || key < b->hi);
}

static errcode_t check_leaf(const struct extref_tree *t,
			    const struct xr_node *n, const struct xr_bounds *b)
{
	const struct extref_rec *r = n->u.recs;
	ext2_filsys fs = t->fs;
	errcode_t err;
	int i;

	for (i = 0; i < n->nr; i++) {
		err = xr_check_rec(&r[i], fs->super->s_first_data_block,
				   ext2fs_blocks_count(fs->super));
		if (err)
			return err;
		if (!in_bounds(r[i].start, b))
			return EXTREF_ERR_NODE_BOUNDS;
		if (i == 0)
			continue;
		if (r[i - 1].start + r[i - 1].len > r[i].start)
			return EXTREF_ERR_NODE_ORDER;
		if (r[i - 1].start + r[i - 1].len == r[i].start &&
		    r[i - 1].count == r[i].count &&
		    r[i - 1].len + r[i].len <= EXTREF_MAX_REC_LEN)
			return EXTREF_ERR_REC_UNMERGED;
	}
	return 0;
}

static errcode_t check_interior(const struct extref_tree *t,
				const struct xr_node *n,
				const struct xr_bounds *b)
{
	const struct xr_key *k = n->u.keys;
	int i;

	for (i = 0; i < n->nr; i++) {
		if (!in_bounds(k[i].key, b))
			return EXTREF_ERR_NODE_BOUNDS;
		if (i > 0 && k[i - 1].key >= k[i].key)
			return EXTREF_ERR_NODE_ORDER;
		if (k[i].ptr == NULL &&
		    (k[i].child == 0 || k[i].child >= t->nblocks))
			return EXTREF_ERR_NODE_CHILD;
	}
	return 0;
}

/*
 * A decoded node: its level, entry count, order, key bounds and records.
 * Children are checked when they are read.
 */
errcode_t xr_check_node(const struct extref_tree *t, const struct xr_node *n,
			int level, const struct xr_bounds *b)
{
	if (n->level != level)
		return EXTREF_ERR_NODE_LEVEL;
	if (n->nr <= 0 || (unsigned int)n->nr > t->disk_cap)
		return EXTREF_ERR_NODE_NR;
	if (b->exact && xr_node_low_key(n, 0) != b->lo)
		return EXTREF_ERR_NODE_BOUNDS;
	if (level == 0)
		return check_leaf(t, n, b);
	return check_interior(t, n, b);
}
