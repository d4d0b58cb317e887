/*
 * mknod.c --- extref_mknod: a new inode of any type but a symlink (a
 * regular file, a directory, a FIFO, a socket, a character or block
 * device) in a directory, its mode, owner, group and device number as
 * the kernel gives them (vfs_mknod, inode_init_owner, ext4's device
 * encoding).
 */
#include <string.h>
#include <sys/sysmacros.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/* The device numbers ext4 can hold: 12 bits of major, 20 of minor. */
#define MAJOR_MAX	0xfffU
#define MINOR_MAX	0xfffffU

/*
 * rdev into a device inode's i_block as ext4 keeps it: both numbers
 * below 256 in the old 16-bit form in i_block[0]; else i_block[0] 0 and
 * the new 32-bit form (minor's low byte, major, minor's high bits) in
 * i_block[1].
 */
static errcode_t encode_dev(__u64 rdev, struct ext2_inode *inode)
{
	__u32 ma = major(rdev), mi = minor(rdev);

	if ((__u64)major(rdev) > MAJOR_MAX || (__u64)minor(rdev) > MINOR_MAX ||
	    rdev != makedev(ma, mi))
		return EXTREF_ERR_BAD_DEV;
	memset(inode->i_block, 0, sizeof(inode->i_block));
	if (ma < 256 && mi < 256)
		inode->i_block[0] = ma << 8 | mi;
	else
		inode->i_block[1] = (mi & 0xff) | ma << 8 | (mi & ~0xffU) << 12;
	return 0;
}

/* The type of mode: 0 makes a regular file; a symlink needs a target. */
static errcode_t node_type(__u32 *mode)
{
	switch (*mode & LINUX_S_IFMT) {
	case 0:
		*mode |= LINUX_S_IFREG;
		return 0;
	case LINUX_S_IFREG:
	case LINUX_S_IFDIR:
	case LINUX_S_IFCHR:
	case LINUX_S_IFBLK:
	case LINUX_S_IFIFO:
	case LINUX_S_IFSOCK:
		return 0;
	default:
		return EXTREF_ERR_BAD_TYPE;
	}
}

/*
 * The new inode's mode and owner: without an identity cred's (its umask
 * applied, DIR's group and a directory's setgid bit inherited from a
 * setgid DIR, as inode_init_owner); with one, the identity's (perm.c).
 */
static errcode_t node_owner(extref_fs_t xfs, ext2_ino_t dir,
			    const struct extref_cred *cred,
			    struct ext2_inode *inode)
{
	struct ext2_inode d;
	__u32 uid, gid;
	errcode_t err;

	inode->i_mode &= LINUX_S_IFMT | (07777 & ~(cred->umask & 0777));
	if (xr_actor(xfs))
		return xr_new_owner(xfs, dir, cred, inode);
	err = xr_read_inode(extref_fs_ext2(xfs), dir, &d);
	if (err)
		return err;
	xr_init_owner(cred, &d, &inode->i_mode, &uid, &gid);
	xr_set_owner(inode, uid, gid);
	return 0;
}

/* A directory NAME in DIR (libext2fs's, "." and ".."), given inode's
 * mode and owner. */
static errcode_t make_dir(ext2_filsys fs, ext2_ino_t dir, const char *name,
			  const struct ext2_inode *want, ext2_ino_t *ino)
{
	struct ext2_inode in;
	errcode_t err = xr_add_name(fs, dir, name, 0, 0, NULL);

	if (!err)
		err = xr_lookup(fs, dir, name, ino);
	if (!err)
		err = ext2fs_read_inode(fs, *ino, &in);
	if (err)
		return err;
	in.i_mode = want->i_mode;
	xr_set_owner(&in, inode_uid(*want), inode_gid(*want));
	err = xr_write_inode_times(fs, *ino, &in, XR_TIME_MTIME | XR_TIME_ATIME);
	return err ? err : xr_inherit_project(fs, dir, *ino);
}

/* Any other type: an inode of its own, then its name. */
static errcode_t make_node(ext2_filsys fs, ext2_ino_t dir, const char *name,
			   struct ext2_inode *inode, ext2_ino_t *ino)
{
	errcode_t err;

	inode->i_links_count = 1;
	inode->i_atime = inode->i_ctime = inode->i_mtime = xr_now(fs);
	err = xr_new_inode(fs, dir, inode, LINUX_S_ISREG(inode->i_mode), ino);
	return err ? err : xr_link(fs, dir, name, *ino,
				   xr_file_type(inode->i_mode));
}

/* vfs_mknod's refusals: the type, a device's number and CAP_MKNOD. */
static errcode_t node_rules(extref_fs_t xfs, __u32 *mode, __u64 rdev,
			    struct ext2_inode *inode)
{
	int dev = LINUX_S_ISCHR(*mode) || LINUX_S_ISBLK(*mode);
	errcode_t err = node_type(mode);

	if (err)
		return err;
	if (dev && !xr_capable(xr_actor(xfs), EXTREF_CAP_MKNOD))
		return EXTREF_ERR_PERM;
	memset(inode, 0, sizeof(*inode));
	inode->i_mode = *mode;
	return dev ? encode_dev(rdev, inode) : 0;
}

static errcode_t mknod_op(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			  __u32 mode, __u64 rdev,
			  const struct extref_cred *cred, ext2_ino_t *ret_ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct extref_cred me;
	struct ext2_inode inode;
	__u32 projid;
	ext2_ino_t ino;
	errcode_t err;

	err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = xr_may_create_name(xfs, dir, name);
	if (!err)
		err = node_rules(xfs, &mode, rdev, &inode);
	if (err)
		return err;
	if (!cred) {
		extref_cred_current(&me);
		cred = &me;
	}
	err = node_owner(xfs, dir, cred, &inode);
	if (!err)
		err = xr_inherited_projid(fs, dir, &projid);
	if (!err)
		err = xr_quota_check(xfs, (const __u32[XR_QTYPES]){
				     inode_uid(inode), inode_gid(inode),
				     projid }, LINUX_S_ISDIR(mode) ?
				     fs->blocksize : 0, 1);
	if (!err && LINUX_S_ISDIR(mode))
		err = make_dir(fs, dir, name, &inode, &ino);
	else if (!err)
		err = make_node(fs, dir, name, &inode, &ino);
	if (!err && xr_actor(xfs))
		err = xr_acl_inherit(xfs, dir, ino);
	if (!err)
		err = xr_dir_changed(fs, dir, 0);
	if (!err && ret_ino)
		*ret_ino = ino;
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_mknod(extref_fs_t xfs, ext2_ino_t dir, const char *name,
		       __u32 mode, __u64 rdev,
		       const struct extref_cred *cred, ext2_ino_t *ret_ino)
{
	errcode_t err;

	if (!name)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_tx_begin(xfs);
	return err ? err : xr_tx_end(xfs, mknod_op(xfs, dir, name, mode, rdev,
						   cred, ret_ino));
}
