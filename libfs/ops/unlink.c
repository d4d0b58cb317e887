/*
 * unlink.c --- remove a name; when the last link goes, every mapping
 * leaves through the counts before the inode is freed (nlink.c).
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

static errcode_t unlink_op(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			int flags)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode inode;
	ext2_ino_t ino;
	int isdir;
	errcode_t err;

	err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = xr_perm_parent(xfs, dir);
	if (!err)
		err = xr_lookup(fs, dir, name, &ino);
	if (!err)
		err = xr_may_delete(xfs, dir, ino);
	if (!err)
		err = extref_check_modifiable(xfs, ino);
	if (!err)
		err = xr_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (flags & ~(EXTREF_UNLINK_DIR | EXTREF_UNLINK_KEEP |
		      EXTREF_UNLINK_KEEP_TIMES))
		return EXTREF_ERR_BAD_FLAGS;
	isdir = LINUX_S_ISDIR(inode.i_mode);
	if (isdir && !(flags & EXTREF_UNLINK_DIR))
		return EXTREF_ERR_IS_DIR;
	if (!isdir && (flags & EXTREF_UNLINK_DIR))
		return EXTREF_ERR_NOT_DIR;
	if (isdir && (err = xr_dir_empty(fs, ino)))
		return err;
	/* The mappings to remove must be readable before the name goes. */
	err = xr_drop_check(fs, ino, &inode);
	if (!err)
		err = xr_unlink_name(fs, dir, name, ino);
	/* the directory's times, as the kernel's unlink and rmdir set them */
	if (!err && (flags & EXTREF_UNLINK_KEEP_TIMES))
		err = xr_dir_count(fs, dir, isdir ? -1 : 0);
	else if (!err)
		err = xr_dir_changed(fs, dir, isdir ? -1 : 0);
	if (!err)
		err = xr_drop_link(xfs, ino, &inode,
				   flags & EXTREF_UNLINK_KEEP);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_unlink(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			int flags)
{
	ext2_ino_t inos[2] = { 0, dir };	/* the file, then its directory */
	errcode_t err;

	xr_damage_clear(xfs);
	/* looked up first: inside a caller's batch the name stays gone
	 * until the batch rolls back */
	(void)xr_lookup(extref_fs_ext2(xfs), dir, name, &inos[0]);
	err = xr_tx_begin(xfs);
	if (err)
		return err;
	err = xr_tx_end(xfs, unlink_op(xfs, dir, name, flags));
	return xr_damage_result(xfs, inos, 2, err);
}
