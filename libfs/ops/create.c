/*
 * create.c --- extref_create_file, extref_mkdir and extref_symlink: a new
 * file, directory or symlink in a directory, its owner, project and
 * default ACL as the kernel gives them (the new inode: inode_alloc.c;
 * its name: dirent.c; the directory's times: nlink.c).
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

static errcode_t create_file_op(extref_fs_t xfs, ext2_ino_t dir,
			     const char *name, __u32 mode,
			     const struct extref_cred *cred,
			     ext2_ino_t *ret_ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct extref_cred me;
	struct ext2_inode inode;
	ext2_ino_t ino;
	__u32 projid;
	errcode_t err;

	err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = xr_may_create_name(xfs, dir, name);
	if (err)
		return err;
	if (!cred) {
		extref_cred_current(&me);
		cred = &me;
	}
	memset(&inode, 0, sizeof(inode));
	inode.i_mode = LINUX_S_IFREG | (mode & 07777 & ~cred->umask);
	inode.i_links_count = 1;
	inode.i_atime = inode.i_ctime = inode.i_mtime = xr_now(fs);
	err = xr_new_owner(xfs, dir, cred, &inode);
	if (!err)
		err = xr_inherited_projid(fs, dir, &projid);
	if (!err)
		err = xr_quota_check(xfs, (const __u32[XR_QTYPES]){
				     inode_uid(inode), inode_gid(inode),
				     projid }, 0, 1);
	if (err)
		return err;
	err = xr_new_inode(fs, dir, &inode, 1, &ino);
	if (!err)
		err = xr_link(fs, dir, name, ino, EXT2_FT_REG_FILE);
	if (!err)
		err = xr_dir_changed(fs, dir, 0);
	if (!err && xr_actor(xfs))
		err = xr_acl_inherit(xfs, dir, ino);
	if (!err && ret_ino)
		*ret_ino = ino;
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_create_file(extref_fs_t xfs, ext2_ino_t dir,
			     const char *name, __u32 mode,
			     const struct extref_cred *cred,
			     ext2_ino_t *ret_ino)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, create_file_op(xfs, dir, name, mode, cred, ret_ino));
}

/* A directory or symlink libext2fs made (root's, its umask) made the
 * identity's, as the kernel makes it (perm.c: xr_new_owner). */
static errcode_t identity_owns(extref_fs_t xfs, ext2_ino_t dir,
			       ext2_ino_t ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(fs, ino, &in);

	if (!err && LINUX_S_ISDIR(in.i_mode))
		in.i_mode = LINUX_S_IFDIR | 0777;
	if (!err)
		err = xr_new_owner(xfs, dir, NULL, &in);
	if (!err)
		err = ext2fs_write_inode(fs, ino, &in);
	return err ? err : xr_acl_inherit(xfs, dir, ino);
}

/* The owner a new directory or symlink ends with, for its quota: 0:0
 * (libext2fs's), or the identity's (identity_owns). */
static errcode_t entry_owner(extref_fs_t xfs, ext2_ino_t dir, int symlink,
			     __u32 id[XR_QTYPES])
{
	struct ext2_inode in;
	errcode_t err;

	memset(id, 0, XR_QTYPES * sizeof(*id));
	err = xr_inherited_projid(extref_fs_ext2(xfs), dir, &id[2]);
	if (err || !xr_actor(xfs))
		return err;
	memset(&in, 0, sizeof(in));
	in.i_mode = (symlink ? LINUX_S_IFLNK : LINUX_S_IFDIR) | 0777;
	err = xr_new_owner(xfs, dir, NULL, &in);
	id[0] = inode_uid(in);
	id[1] = inode_gid(in);
	return err;
}

/* Retry a directory-entry creation once DIR has grown by a block. */
static errcode_t make_entry(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			    const char *target, ext2_ino_t *ret_ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	__u32 id[XR_QTYPES];
	ext2_ino_t ino;
	errcode_t err;

	err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = xr_may_create_name(xfs, dir, name);
	/* libext2fs makes them owned by 0:0, an identity's then its own:
	 * charged to the owner they end with */
	if (!err)
		err = entry_owner(xfs, dir, target != NULL, id);
	if (!err)
		err = xr_quota_check(xfs, id, fs->blocksize, 1);
	if (!err)
		err = xr_add_name(fs, dir, name, 0, 0, target);
	if (!err)
		err = xr_dir_changed(fs, dir, 0);
	if (!err)
		err = xr_lookup(fs, dir, name, &ino);
	if (!err)
		err = xr_inode_times_now(fs, ino);
	if (!err)
		err = xr_inherit_project(fs, dir, ino);
	if (!err && xr_actor(xfs))
		err = identity_owns(xfs, dir, ino);
	if (!err && ret_ino)
		*ret_ino = ino;
	return xr_quota_end(xfs, err);
}

static errcode_t mkdir_op(extref_fs_t xfs, ext2_ino_t dir, const char *name,
		       ext2_ino_t *ret_ino)
{
	return make_entry(xfs, dir, name, NULL, ret_ino);
}

/* One transaction (txn.c). */
errcode_t extref_mkdir(extref_fs_t xfs, ext2_ino_t dir, const char *name,
		       ext2_ino_t *ret_ino)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, mkdir_op(xfs, dir, name, ret_ino));
}

static errcode_t symlink_op(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			 const char *target, ext2_ino_t *ret_ino)
{
	return make_entry(xfs, dir, name, target, ret_ino);
}

/* One transaction (txn.c). */
errcode_t extref_symlink(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			 const char *target, ext2_ino_t *ret_ino)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, symlink_op(xfs, dir, name, target, ret_ino));
}
