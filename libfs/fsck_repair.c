/*
 * fsck_repair.c --- rebuild the tree from the expected counts.
 *
 * The old tree's blocks are released (they are metadata of inode 5,
 * never data), inode 5 gets a fresh empty tree, and the expected records
 * are loaded in order and committed.  A crash in the middle leaves a tree
 * that the next run rebuilds again: nothing is derived from it.
 */
#include <string.h>
#include "extref_fsck_int.h"

/* Free every block of inode 5 that no data mapping uses, then empty it. */
static errcode_t clear_ino5(struct xr_fsck *c)
{
	ext2_filsys fs = c->fs;
	struct ext2_inode inode;
	errcode_t err;

	err = ext2fs_read_inode(fs, EXTREF_INO, &inode);
	if (err)
		return err;
	if (LINUX_S_ISREG(inode.i_mode) && (inode.i_flags & EXT4_EXTENTS_FL) &&
	    ext2fs_inode_has_valid_blocks2(fs, &inode))
		err = ext2fs_punch(fs, EXTREF_INO, &inode, NULL, 0, ~0ULL);
	/* A tree too damaged to walk: its blocks leak to e2fsck's pass 5. */
	memset(&inode, 0, sizeof(inode));
	return ext2fs_write_inode(fs, EXTREF_INO, &inode);
}

static errcode_t load_one(const struct extref_rec *r, void *priv)
{
	return xr_insert(priv, r);
}

errcode_t xr_fsck_rebuild(struct xr_fsck *c)
{
	ext2_filsys fs = c->fs;
	extref_tree_t t;
	errcode_t err;

	if (!fs->block_map && (err = ext2fs_read_bitmaps(fs)))
		return err;
	err = clear_ino5(c);
	if (!err)
		err = extref_format(fs);
	if (!err)
		err = extref_tree_open(fs, EXTREF_TREE_RW, &t);
	if (err)
		return err;
	err = xr_fsck_sweep(c, load_one, t);
	if (!err)
		err = extref_tree_close(t);
	else
		extref_tree_free(t);
	c->res->changed = 1;
	return err;
}
