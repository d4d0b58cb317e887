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
 * untouched, and the journal grown to hold it (extref_journal_fit,
 * txn/journal_grow.c: when the free space holds the growth besides the
 * copy's blocks) before the copy runs, as one transaction still.  The
 * estimate is a lower bound: a commit that still outgrows the journal
 * fails at its end with the same error, is rolled back, the image exactly
 * as before, and the journal grows to what the commit measured and the
 * copy runs again; a few times at most.
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

errcode_t xr_publish_check(extref_fs_t xfs, __u64 inodes, blk64_t blocks)
{
	return xr_tx_fits(xfs, xr_publish_estimate(xfs, inodes), blocks);
}

#define FIT_TRIES	3

/*
 * After a recursive reflink ended with err (outside any caller's
 * transaction, rolled back): 1 when it was too big for the journal and
 * the journal grew to hold it (run it again), else 0 with *err the
 * growth's refusal (EXTREF_ERR_TXN_TOO_BIG without room, nothing
 * changed) or as it was.
 */
int xr_publish_grow(extref_fs_t xfs, errcode_t *err, int *tries)
{
	errcode_t e;

	if (*err != EXTREF_ERR_TXN_TOO_BIG || *tries >= FIT_TRIES ||
	    !xr_tx_journal(xfs))
		return 0;
	(*tries)++;
	e = extref_journal_fit(xfs);
	if (e) {
		*err = e;
		return 0;
	}
	return 1;
}
