/*
 * update_verify.c --- the image's extent trees checked before an update
 * changes anything.  The update reads every regular file (update_index.c
 * hashes their blocks), writes into the directories it walks, and
 * replaces or removes files; an extent tree it met damaged half-way
 * would stop it after new data had gone into free blocks, rolled back
 * but the image's bytes changed.  So, when the open's proof did not
 * read every extent tree (a matching stamp: xr_fs_verified says no),
 * every in-use inode's tree is checked first as an operation checks its
 * own file's (xr_extent_tree_verify: headers, checksums, entries in
 * order, mapped blocks outside the system zone and in use): one inode
 * scan and the extent blocks, less than the index's read of every data
 * block.  A refusal names the inode.
 */
#include <stdio.h>
#include "update_int.h"
#include "extent/xr_extent.h"
#include "txn/xr_handle.h"

/* The inodes an update may read or change: in use, not the reserved
 * ones but the root (inode 5 is the tree's, checked by xr_op_begin). */
static int in_scope(ext2_filsys fs, ext2_ino_t ino,
		    const struct ext2_inode *inode)
{
	return (ino == EXT2_ROOT_INO || ino >= EXT2_FIRST_INO(fs->super)) &&
	       inode->i_links_count && !inode->i_dtime &&
	       (inode->i_flags & EXT4_EXTENTS_FL) &&
	       !(inode->i_flags & EXT4_INLINE_DATA_FL);
}

static void name_inode(struct xr_upd *up, ext2_ino_t ino)
{
	char where[48];

	snprintf(where, sizeof(where), "inode %u of the image", ino);
	xr_pop_fail(&up->p, where, NULL);
}

errcode_t xr_upd_verify(struct xr_upd *up)
{
	ext2_inode_scan scan = NULL;
	struct ext2_inode inode;
	ext2_ino_t ino = 0;
	errcode_t err;

	if (xr_fs_verified(up->xfs))
		return 0;	/* the full proof read every extent tree */
	err = ext2fs_open_inode_scan(up->fs, 0, &scan);
	while (!err) {
		err = ext2fs_get_next_inode(scan, &ino, &inode);
		if (err || !ino)
			break;
		if (in_scope(up->fs, ino, &inode))
			err = xr_extent_tree_verify(up->fs, ino, &inode, NULL);
	}
	if (scan)
		ext2fs_close_inode_scan(scan);
	if (err && ino)
		name_inode(up, ino);
	return err;
}
