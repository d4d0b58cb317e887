/*
 * link.c --- extref_link: one more name for an inode (a hard link), with
 * the kernel's checks in its order (do_linkat, may_linkat, vfs_link,
 * ext4_link).
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

#define S_ISUID_	04000
#define S_ISGID_	02000
#define S_IXGRP_	00010

/*
 * may_linkat with fs.protected_hardlinks = 1 (the default of systemd
 * and most distributions): a caller that neither owns the inode nor
 * holds CAP_FOWNER may link only a regular file that is neither setuid
 * nor setgid-executable and that it may read and write; else EPERM.
 */
static errcode_t may_linkat(extref_fs_t xfs, ext2_ino_t ino,
			    const struct ext2_inode *inode)
{
	const struct extref_cred *c = xr_actor(xfs);
	__u16 mode = inode->i_mode;

	if (xr_owner_or_capable(c, inode))
		return 0;
	if (LINUX_S_ISREG(mode) && !(mode & S_ISUID_) &&
	    (mode & (S_ISGID_ | S_IXGRP_)) != (S_ISGID_ | S_IXGRP_) &&
	    !xr_permission(extref_fs_ext2(xfs), c, ino, inode,
			   XR_MAY_READ | XR_MAY_WRITE))
		return 0;
	return EXTREF_ERR_PERM;
}

/* vfs_link and ext4_link's refusals, after may_create. */
static errcode_t link_rules(extref_fs_t xfs, ext2_ino_t ino,
			    const struct ext2_inode *inode, ext2_ino_t dir)
{
	if (xr_actor(xfs) &&
	    (inode->i_flags & (EXT2_APPEND_FL | EXT2_IMMUTABLE_FL)))
		return EXTREF_ERR_PERM;
	if (LINUX_S_ISDIR(inode->i_mode))
		return EXTREF_ERR_PERM;
	if (xr_may_link(inode))
		return EXTREF_ERR_MLINK;
	return xr_project_check(extref_fs_ext2(xfs), dir, ino);
}

static errcode_t link_op(extref_fs_t xfs, ext2_ino_t ino, ext2_ino_t dir,
			 const char *name)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode inode;
	errcode_t err;

	err = extref_check_modifiable(xfs, ino);
	if (!err)
		err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = xr_read_inode(fs, ino, &inode);
	if (!err)
		err = xr_perm_parent(xfs, dir);
	if (!err)
		err = xr_name_free(fs, dir, name);
	if (!err)
		err = may_linkat(xfs, ino, &inode);
	if (!err)
		err = xr_may_create(xfs, dir);
	if (!err)
		err = link_rules(xfs, ino, &inode, dir);
	if (err)
		return err;
	inode.i_links_count++;
	err = xr_write_inode_times(fs, ino, &inode, XR_TIME_CTIME);
	if (!err)
		err = xr_link(fs, dir, name, ino, xr_file_type(inode.i_mode));
	if (!err)
		err = xr_dir_changed(fs, dir, 0);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_link(extref_fs_t xfs, ext2_ino_t ino, ext2_ino_t newdir,
		      const char *newname)
{
	errcode_t err;

	if (!newname)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_tx_begin(xfs);
	return err ? err : xr_tx_end(xfs, link_op(xfs, ino, newdir, newname));
}
