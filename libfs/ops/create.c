/*
 * create.c --- new inodes and directory entries for the operations.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

void xr_set_owner(struct ext2_inode *inode, __u32 uid, __u32 gid)
{
	inode->i_uid = uid & 0xffff;
	ext2fs_set_i_uid_high(*inode, uid >> 16);
	inode->i_gid = gid & 0xffff;
	ext2fs_set_i_gid_high(*inode, gid >> 16);
}

/* NAME must not exist in DIR. */
errcode_t xr_name_free(ext2_filsys fs, ext2_ino_t dir, const char *name)
{
	ext2_ino_t ino;
	errcode_t err;

	if (!*name || strchr(name, '/') || strlen(name) > EXT2_NAME_LEN)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_lookup(fs, dir, name, &ino);
	if (err == EXT2_ET_FILE_NOT_FOUND)
		return 0;
	return err ? err : EXTREF_ERR_EXISTS;
}

/*
 * NAME into DIR: -> ino by ext2fs_link, or with ino 0 a new inode by
 * ext2fs_symlink (to target) or ext2fs_mkdir (target NULL).  The blocks
 * a split of an indexed DIR wrote are then cleaned (dirclean.c).
 */
static errcode_t add_name(ext2_filsys fs, ext2_ino_t dir, const char *name,
			  ext2_ino_t ino, int ftype, const char *target)
{
	struct xr_dx_path path;
	errcode_t err = xr_dx_path(fs, dir, name, &path);

	if (!err)
		err = ino ? ext2fs_link(fs, dir, name, ino, ftype)
		      : target ? ext2fs_symlink(fs, dir, 0, name, target)
			       : ext2fs_mkdir(fs, dir, 0, name);
	return err ? err : xr_dx_clean(fs, dir, &path);
}

/*
 * Add NAME to DIR (add_name's arguments), which must not hold NAME yet
 * (EXTREF_ERR_EXISTS: libext2fs would add a second entry of the name,
 * which e2fsck reports as "Duplicate entry").  A full directory of one
 * block becomes indexed (htree.c), as the kernel makes it, and libext2fs
 * then inserts through the index; other full linear directories get one
 * more block.
 */
static errcode_t add_name_grow(ext2_filsys fs, ext2_ino_t dir,
			       const char *name, ext2_ino_t ino, int ftype,
			       const char *target)
{
	/* ext2fs_mkdir and ext2fs_symlink look the name up themselves */
	errcode_t err = ino ? xr_name_free(fs, dir, name) : 0;

	if (!err)
		err = add_name(fs, dir, name, ino, ftype, target);

	if (err != EXT2_ET_DIR_NO_SPACE)
		return err;
	err = xr_dx_make_indexed(fs, dir);
	if (err == EXT2_ET_DIR_NO_SPACE)
		err = ext2fs_expand_dir(fs, dir);
	return err ? err : add_name(fs, dir, name, ino, ftype, target);
}

/* Add NAME -> ino to DIR. */
errcode_t xr_link(ext2_filsys fs, ext2_ino_t dir, const char *name,
		  ext2_ino_t ino, int ftype)
{
	return add_name_grow(fs, dir, name, ino, ftype, NULL);
}

/*
 * Allocate an inode near DIR and write it from inode (whose i_block gets
 * an empty extent tree when extents is set).  The inode is counted in
 * use; it is not linked anywhere yet.
 */
errcode_t xr_new_inode(ext2_filsys fs, ext2_ino_t dir,
		       struct ext2_inode *inode, int extents, ext2_ino_t *ret)
{
	ext2_extent_handle_t h;
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_new_inode(fs, dir, inode->i_mode, 0, &ino);
	if (err)
		return err;
	if (extents) {
		memset(inode->i_block, 0, sizeof(inode->i_block));
		inode->i_flags &= ~EXT4_INLINE_DATA_FL;
		err = ext2fs_extent_open2(fs, ino, inode, &h);
		if (err)
			return err;
		ext2fs_extent_free(h);
	}
	err = ext2fs_write_new_inode(fs, ino, inode);
	if (!err)
		err = xr_inherit_project(fs, dir, ino);
	if (err)
		return err;
	ext2fs_inode_alloc_stats2(fs, ino, +1, LINUX_S_ISDIR(inode->i_mode));
	xr_tx_note_inode(fs, ino);
	*ret = ino;
	return 0;
}

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

/* The directory-entry file type of an inode mode. */
int xr_file_type(__u16 mode)
{
	if (LINUX_S_ISREG(mode))
		return EXT2_FT_REG_FILE;
	if (LINUX_S_ISDIR(mode))
		return EXT2_FT_DIR;
	if (LINUX_S_ISCHR(mode))
		return EXT2_FT_CHRDEV;
	if (LINUX_S_ISBLK(mode))
		return EXT2_FT_BLKDEV;
	if (LINUX_S_ISLNK(mode))
		return EXT2_FT_SYMLINK;
	if (LINUX_S_ISFIFO(mode))
		return EXT2_FT_FIFO;
	if (LINUX_S_ISSOCK(mode))
		return EXT2_FT_SOCK;
	return EXT2_FT_UNKNOWN;
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
		err = add_name_grow(fs, dir, name, 0, 0, target);
	if (!err)
		err = xr_lookup(fs, dir, name, &ino);
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
