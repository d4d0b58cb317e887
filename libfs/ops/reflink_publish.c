/*
 * reflink_publish.c --- does the one commit of a recursive reflink fit
 * the journal?
 *
 * A recursive reflink is one transaction whatever its size: the blocks it
 * allocates (the new directories', extent trees', symlinks' blocks) are
 * written in place before the commit (txn/txn_split.c), and the commit
 * journals what was in use before: the inode table blocks of the new
 * inodes, the bitmaps and descriptors of their groups, the superblock,
 * the parent directory's block and the tree's header and reused nodes.
 * Their number is known before anything changes, from the number of new
 * inodes; a copy whose commit cannot fit is refused then, with the image
 * untouched.  The estimate is a lower bound: a commit that still
 * outgrows the journal fails at its end with the same error and is
 * rolled back, the image exactly as before.
 */
#include "tree/extref_int.h"
#include "extref_ops_int.h"
#include "txn/xr_txio.h"

static blk64_t div_up(__u64 a, __u64 b)
{
	return (a + b - 1) / b;
}

blk64_t xr_publish_estimate(extref_fs_t xfs, __u64 inodes)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	extref_tree_t t = extref_fs_tree(xfs);
	__u64 per_block = fs->blocksize / EXT2_INODE_SIZE(fs->super);
	__u64 groups = div_up(inodes, EXT2_INODES_PER_GROUP(fs->super));

	return div_up(inodes, per_block)	/* the new inodes */
	       + 2 * groups			/* their bitmaps */
	       + div_up(groups, EXT2_DESC_PER_BLOCK(fs->super))
	       + 1				/* the superblock */
	       + 2				/* the parent's block, inode */
	       + 1 + (t ? t->depth : 0);	/* tree header and a path */
}

errcode_t xr_publish_check(extref_fs_t xfs, __u64 inodes)
{
	return xr_tx_fits(xfs, xr_publish_estimate(xfs, inodes));
}
