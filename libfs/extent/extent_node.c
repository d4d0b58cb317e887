/*
 * extent_node.c --- the one reader of raw extent nodes.
 *
 * Code that parses an inode's extent nodes itself (extent_splice.c, the
 * checker's walk in fsck_extents.c) reads them through here, so that a
 * node is used only after its header was checked as the kernel checks
 * it: the magic, eh_max matching the space the node has, eh_entries at
 * most eh_max, the depth (a block's is one less than its parent's; the
 * root's at most the kernel's EXT4_MAX_EXTENT_DEPTH) and, when asked,
 * the checksum in the block's tail (metadata_csum).  A block whose
 * checksum fails is never rewritten with a fresh one: the caller stops.
 */
#include "extent/xr_extent.h"
#include <ext2fs/ext3_extents.h>
#include "extent_raw.h"
#include "txn/xr_zone.h"

/*
 * Check the node at eh, size bytes (the inode's i_block or one block).
 * depth: the depth it must have, or XR_EXT_ANY_DEPTH (a root).
 * flags: XR_EXT_CSUM checks a block's tail checksum too.
 */
errcode_t xr_extent_node_check(ext2_filsys fs, ext2_ino_t ino,
			       const void *eh, int size, int depth, int flags)
{
	const struct ext3_extent_header *h = eh;
	int d;

	/* libext2fs's check: magic, eh_entries <= eh_max, eh_max vs size. */
	if (ext2fs_extent_header_verify((void *)eh, size))
		return EXT2_ET_EXTENT_HEADER_BAD;
	d = ext2fs_le16_to_cpu(h->eh_depth);
	if (d > XR_EXT_MAX_DEPTH ||
	    (depth != XR_EXT_ANY_DEPTH && d != depth))
		return EXT2_ET_EXTENT_HEADER_BAD;
	if ((flags & XR_EXT_CSUM) && size == (int)fs->blocksize &&
	    !ext2fs_extent_block_csum_verify(fs, ino, (void *)eh))
		return EXT2_ET_EXTENT_CSUM_INVALID;
	return 0;
}

/* Read the extent block pblk of ino, at depth, into buf, checked. */
errcode_t xr_extent_block_read(ext2_filsys fs, ext2_ino_t ino, blk64_t pblk,
			       int depth, void *buf)
{
	errcode_t err;

	if (pblk < fs->super->s_first_data_block ||
	    pblk >= ext2fs_blocks_count(fs->super))
		return EXT2_ET_EXTENT_INDEX_BAD;
	err = io_channel_read_blk64(fs->io, pblk, 1, buf);
	if (!err)
		err = xr_extent_node_check(fs, ino, buf, fs->blocksize, depth,
					   XR_EXT_CSUM);
	return err;
}

/*
 * A leaf's extents as the kernel's ext4_valid_extent_entries() takes
 * them: none empty, each after the one before (logical blocks in order,
 * none overlapping), none past the last logical block; and each against
 * the system zone (txn/zone.c, z when the image is open for writing).
 * libext2fs's own walk of a leaf out of order fails half-way
 * ("Extent not found"), after an operation may have written.
 */
static errcode_t check_leaf(const struct xr_zone *z,
			    const struct ext3_extent_header *eh)
{
	const struct ext3_extent *ex = EXT_FIRST_EXTENT(eh);
	int i, n = ext2fs_le16_to_cpu(eh->eh_entries);
	__u64 next = 0, lblk;
	errcode_t err = 0;

	for (i = 0; !err && i < n; i++) {
		unsigned int len = xr_extent_len(&ex[i], NULL);

		lblk = ext2fs_le32_to_cpu(ex[i].ee_block);
		if (!len || lblk < next || lblk + len > (1ULL << 32))
			return EXT2_ET_EXTENT_LEAF_BAD;
		next = lblk + len;
		if (z)
			err = xr_zone_check_mapped(z, xr_extent_start(&ex[i]),
						   len);
	}
	return err;
}

/* An index node's entries: logical blocks strictly in order. */
static errcode_t check_index(const struct ext3_extent_header *eh)
{
	const struct ext3_extent_idx *ix = EXT_FIRST_INDEX(eh);
	int i, n = ext2fs_le16_to_cpu(eh->eh_entries);

	for (i = 1; i < n; i++)
		if (ext2fs_le32_to_cpu(ix[i].ei_block) <=
		    ext2fs_le32_to_cpu(ix[i - 1].ei_block))
			return EXT2_ET_EXTENT_INDEX_BAD;
	return 0;
}

/*
 * The nodes below eh.  *left: blocks the walk may still read (the
 * file's i_blocks), so that index entries that all name one block
 * cannot make it read that block without end.  Every node block and
 * every leaf extent must lie outside the system zone and be in use in
 * the block bitmap (z, when the image is open for writing).
 */
static errcode_t check_subtree(ext2_filsys fs, ext2_ino_t ino,
			       const struct xr_zone *z,
			       const struct ext3_extent_header *eh, int depth,
			       char *bufs, blk64_t *left)
{
	const struct ext3_extent_idx *ix = EXT_FIRST_INDEX(eh);
	int i, n = ext2fs_le16_to_cpu(eh->eh_entries);
	errcode_t err = 0;

	if (depth == 0)
		return check_leaf(z, eh);
	err = check_index(eh);
	for (i = 0; !err && i < n; i++) {
		blk64_t p = xr_extent_idx_child(&ix[i]);

		if (*left == 0)
			return EXT2_ET_EXTENT_INDEX_BAD;
		(*left)--;
		err = xr_zone_check_mapped(z, p, 1);
		if (!err)
			err = xr_extent_block_read(fs, ino, p, depth - 1, bufs);
		if (!err)
			err = check_subtree(fs, ino, z, (void *)bufs, depth - 1,
					    bufs + fs->blocksize, left);
	}
	return err;
}

static int all_zero(const struct ext2_inode *inode)
{
	int i;

	for (i = 0; i < EXT2_N_BLOCKS; i++)
		if (inode->i_block[i])
			return 0;
	return 1;
}

/*
 * Every node of an extent-mapped inode's tree, checked with its
 * checksum and its entries in order, and every block it maps checked
 * against the system zone:
 * done before an operation's first write, so that a tree the operation
 * would stop in the middle of, or whose data is metadata, is refused up
 * front.  *nodes
 * (if not NULL) gets the number of blocks below the inode.
 */
errcode_t xr_extent_tree_verify(ext2_filsys fs, ext2_ino_t ino,
				const struct ext2_inode *inode,
				blk64_t *nodes)
{
	const struct ext3_extent_header *eh = (const void *)inode->i_block;
	char *bufs = NULL;
	blk64_t left, max;
	int depth;
	errcode_t err;

	if (nodes)
		*nodes = 0;
	if (!(inode->i_flags & EXT4_EXTENTS_FL) || all_zero(inode))
		return 0;	/* libext2fs reads all zeros as an empty tree */
	err = xr_extent_node_check(fs, ino, eh, sizeof(inode->i_block),
				   XR_EXT_ANY_DEPTH, 0);
	if (err)
		return err;
	depth = ext2fs_le16_to_cpu(eh->eh_depth);
	if (!depth)
		return check_leaf(ino == EXTREF_INO ? NULL : xr_zone_of(fs),
				  eh);
	/* one block of scratch per level below the root */
	max = left = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)inode) /
		     (fs->blocksize / 512);
	if (max > ext2fs_blocks_count(fs->super))	/* i_blocks: 48 bits */
		max = left = ext2fs_blocks_count(fs->super);
	err = ext2fs_get_array(depth, fs->blocksize, &bufs);
	if (!err)
		err = check_subtree(fs, ino, ino == EXTREF_INO ? NULL :
				    xr_zone_of(fs), eh, depth, bufs, &left);
	if (!err && nodes)
		*nodes = max - left;
	ext2fs_free_mem(&bufs);
	return err;
}
