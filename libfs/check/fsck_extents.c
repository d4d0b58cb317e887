/*
 * fsck_extents.c --- pass 1's walk of the files' extent trees, a level
 * at a time, with the blocks of each level read in physical order and
 * in runs.
 *
 * Reading one extent block per inode through ext2fs_extent_get costs a
 * system call a block and an allocated handle an inode.  Instead the
 * roots in the inodes are read as the inode scan meets them, and every
 * index entry queues its child; each level's queue is then sorted by
 * block and read in runs of nearby blocks (one read for many files'
 * leaves, as e2fsck's and xfs_repair's prefetching do).
 *
 * Each node is checked as the kernel checks it (magic, entry counts,
 * depth one less than its parent's), by the library's one extent-node
 * check (extent/extent_node.c), without the checksum: a node with a stale
 * checksum still maps its blocks, and e2fsck, not this walk, repairs
 * the checksum; a bad node is reported against its
 * inode and skipped with its subtree, and the rest is kept.  A block
 * that two index entries of one level point to is read once: an index
 * block belongs to one parent, and reading it again could multiply the
 * work of a corrupt tree without bound.
 */
#include <string.h>
#include "extref_fsck_int.h"
#include "ops/extref_ops_int.h"
#include <ext2fs/ext3_extents.h>
#include "extent/extent_raw.h"

#define RUN_MAX_BLOCKS	256	/* largest single read */
#define RUN_MAX_GAP	8	/* unwanted blocks read to join two runs */

/* Whether [pblk, pblk + len) is a non-empty range inside the fs. */
int xr_fsck_in_fs(const struct xr_fsck *c, blk64_t pblk, blk64_t len)
{
	return len && pblk >= c->first_block && pblk < c->nblocks &&
	       len <= c->nblocks - pblk;
}

static errcode_t queue_node(struct xr_fsck *c, blk64_t pblk, ext2_ino_t ino,
			    int depth)
{
	struct xr_node_ref *r;
	errcode_t err;

	err = xr_grow(&c->nodes, &c->capnodes, c->nnodes, sizeof(*c->nodes));
	if (err)
		return err;
	r = &c->nodes[c->nnodes++];
	r->pblk = pblk;
	r->ino = ino;
	r->depth = depth;
	r->pad = 0;
	return 0;
}

/*
 * The entries of one checked node (root or block) of ino at depth:
 * leaves become mappings, index entries queue their children.
 * Returns the error that stops this node, the mappings before it kept.
 */
static errcode_t walk_node(struct xr_fsck *c, ext2_ino_t ino,
			   const struct ext3_extent_header *eh, int depth,
			   errcode_t *bad)
{
	int i, n = ext2fs_le16_to_cpu(eh->eh_entries);
	errcode_t err = 0;

	if (depth == 0) {
		const struct ext3_extent *ex = (const void *)(eh + 1);

		for (i = 0; !err && i < n; i++, ex++) {
			blk64_t p = xr_extent_start(ex);
			unsigned len = xr_extent_len(ex, NULL);

			if (!xr_fsck_in_fs(c, p, len)) {
				*bad = EXT2_ET_EXTENT_LEAF_BAD;
				break;
			}
			err = xr_fsck_map(c, p, len, ino);
		}
	} else {
		const struct ext3_extent_idx *ix = (const void *)(eh + 1);

		for (i = 0; !err && i < n; i++, ix++) {
			blk64_t p = xr_extent_idx_child(ix);

			if (!xr_fsck_in_fs(c, p, 1)) {
				*bad = EXT2_ET_EXTENT_INDEX_BAD;
				break;
			}
			err = xr_fsck_add_meta(c, p, 1, ino, XR_META_INDEX);
			if (!err)
				err = queue_node(c, p, ino, depth - 1);
		}
	}
	return err;
}

/* Noted now, reported after the scan, when paths can be found. */
errcode_t xr_fsck_scan_bad(struct xr_fsck *c, ext2_ino_t ino, errcode_t why,
			   ext2_ino_t other, blk64_t blk)
{
	struct xr_scan_bad *b;
	errcode_t err = xr_grow(&c->bad, &c->capbad, c->nbad,
				sizeof(*c->bad));

	if (err)
		return err;
	b = &c->bad[c->nbad++];
	b->ino = ino;
	b->why = why;
	b->other = other;
	b->blk = blk;
	return 0;
}

/* The root in an extent-mapped inode's i_block. */
errcode_t xr_fsck_extent_root(struct xr_fsck *c, ext2_ino_t ino,
			      const struct ext2_inode *inode)
{
	const struct ext3_extent_header *eh = (const void *)inode->i_block;
	__u32 blk[EXT2_N_BLOCKS];
	errcode_t bad = 0, err;
	int i, depth;

	memcpy(blk, inode->i_block, sizeof(blk));
	for (i = 0; i < EXT2_N_BLOCKS && !blk[i]; i++)
		;
	if (i == EXT2_N_BLOCKS)
		return 0;	/* libext2fs reads this as an empty tree */
	bad = xr_extent_node_check(c->fs, ino, blk, sizeof(blk),
				   XR_EXT_ANY_DEPTH, 0);
	depth = ext2fs_le16_to_cpu(eh->eh_depth);
	err = bad ? 0 : walk_node(c, ino, eh, depth, &bad);
	if (!err && bad)
		err = xr_fsck_scan_bad(c, ino, bad, 0, 0);
	return err;
}

static errcode_t walk_block(struct xr_fsck *c, const struct xr_node_ref *r,
			    void *buf)
{
	const struct ext3_extent_header *eh = buf;
	errcode_t bad, err = 0;

	bad = xr_extent_node_check(c->fs, r->ino, buf, c->fs->blocksize,
				   r->depth, 0);
	if (!bad)
		err = walk_node(c, r->ino, eh, r->depth, &bad);
	if (!err && bad)
		err = xr_fsck_scan_bad(c, r->ino, bad, 0, 0);
	return err;
}

/* End (exclusive) of the run of queued blocks read together from i. */
static size_t run_end(const struct xr_node_ref *q, size_t n, size_t i)
{
	blk64_t first = q[i].pblk;
	size_t j = i + 1;

	while (j < n && q[j].pblk - q[j - 1].pblk <= RUN_MAX_GAP + 1 &&
	       q[j].pblk - first < RUN_MAX_BLOCKS)
		j++;
	return j;
}

/* Read and walk the nodes q[i..j), one read, or a block at a time. */
static errcode_t walk_run(struct xr_fsck *c, const struct xr_node_ref *q,
			  size_t i, size_t j, char *buf)
{
	ext2_filsys fs = c->fs;
	blk64_t first = q[i].pblk;
	int whole;
	errcode_t err = 0, rerr;
	size_t k;

	whole = !io_channel_read_blk64(fs->io, first,
				       q[j - 1].pblk - first + 1, buf);
	for (k = i; !err && k < j; k++) {
		char *b = buf + (q[k].pblk - first) * fs->blocksize;

		if (k > i && q[k].pblk == q[k - 1].pblk)
			err = xr_fsck_scan_bad(c, q[k].ino, 0, q[k - 1].ino,
					       q[k].pblk);
		else if (!whole &&
			 (rerr = io_channel_read_blk64(fs->io, q[k].pblk, 1,
						       b)))
			err = xr_fsck_scan_bad(c, q[k].ino, rerr, 0, 0);
		else
			err = walk_block(c, &q[k], b);
	}
	return err;
}

/*
 * Pass 1's second half (the first is the inode scan's groups): how many
 * levels there are is known only at the end, so each level fills half
 * of what is left, from *base, and the end fills the rest.  Told when it
 * moves by a group's worth.
 */
static void progress(struct xr_fsck *c, __u64 base, size_t done, size_t n,
		     __u64 *last)
{
	__u64 g = c->fs->group_desc_count;
	__u64 at = base + (2 * g - base) / 2 * done / (n ? n : 1);

	if (at != *last)
		xr_fsck_progress(c, 1, at, 2 * g);
	*last = at;
}

/* Every queued node, a level at a time, until no level is left. */
errcode_t xr_fsck_extent_nodes(struct xr_fsck *c)
{
	struct xr_node_ref *q = NULL;
	size_t n, i, j;
	__u64 base = c->fs->group_desc_count, last = 0;
	char *buf = NULL;
	errcode_t err;

	err = ext2fs_get_array(RUN_MAX_BLOCKS, c->fs->blocksize, &buf);
	while (!err && c->nnodes) {
		/* this level's queue; walking it fills the next one */
		q = c->nodes;
		n = c->nnodes;
		c->nodes = NULL;
		c->nnodes = c->capnodes = 0;
		xr_sort_nodes(q, n);
		for (i = 0; !err && i < n; i = j) {
			j = run_end(q, n, i);
			err = walk_run(c, q, i, j, buf);
			progress(c, base, j, n, &last);
		}
		ext2fs_free_mem(&q);
		base = last;
	}
	progress(c, 2 * c->fs->group_desc_count, 0, 0, &last);
	ext2fs_free_mem(&buf);
	return err;
}
