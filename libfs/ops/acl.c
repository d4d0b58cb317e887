/*
 * acl.c --- a directory's default POSIX ACL given to what an identity
 * makes in it, as the kernel's posix_acl_create: the new inode's mode is
 * masked by the default ACL instead of the umask; it gets the default
 * ACL, masked by the mode asked for, as its access ACL (when that is
 * more than the mode says) and, a directory, the default ACL itself.
 * Symlinks get none.  Values are the kernel's xattr form (libext2fs
 * converts them to ext4's on-disk form): a 4-byte version, then 8-byte
 * entries (tag, perm, id).
 */
#include <string.h>
#include "extref_ops_int.h"

#define ACL_DEFAULT_NAME	"system.posix_acl_default"
#define ACL_ACCESS_NAME		"system.posix_acl_access"

/* dir's default ACL (*val NULL when it has none). */
static errcode_t inheritable_acl(ext2_filsys fs, ext2_ino_t dir, void **val,
			     size_t *len)
{
	struct ext2_xattr_handle *h;
	errcode_t err;

	*val = NULL;
	err = ext2fs_xattrs_open(fs, dir, &h);
	if (err == EXT2_ET_MISSING_EA_FEATURE)
		return 0;
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_get(h, ACL_DEFAULT_NAME, val, len);
	ext2fs_xattrs_close(&h);
	if (err == EXT2_ET_EA_KEY_NOT_FOUND || err == EXT2_ET_NO_INLINE_DATA)
		err = 0;
	if (!err && *val && (*len < 4 || (*len - 4) % ACL_ENTRY_SIZE)) {
		ext2fs_free_mem(val);
		err = EXT2_ET_EA_BAD_VALUE_SIZE;
	}
	return err;
}

/*
 * posix_acl_create_masq: the entries (changed in place) and *mode
 * masked by each other; 1 when the ACL says more than the mode.
 */
static int create_masq(unsigned char *v, size_t len, __u16 *mode)
{
	unsigned char *e, *group_obj = NULL, *mask_obj = NULL, *obj;
	unsigned m = *mode & 0777;
	int not_equiv = 0;

	for (e = v + 4; e + ACL_ENTRY_SIZE <= v + len; e += ACL_ENTRY_SIZE) {
		switch (e[0] | e[1] << 8) {
		case ACL_USER_OBJ:
			e[2] &= (m >> 6) & 7;
			m &= (e[2] << 6) | ~0700u;
			break;
		case ACL_USER:
		case ACL_GROUP:
			not_equiv = 1;
			break;
		case ACL_GROUP_OBJ:
			group_obj = e;
			break;
		case ACL_MASK:
			mask_obj = e;
			not_equiv = 1;
			break;
		case ACL_OTHER:
			e[2] &= m & 7;
			m &= e[2] | ~07u;
			break;
		}
	}
	obj = mask_obj ? mask_obj : group_obj;
	if (obj) {
		obj[2] &= (m >> 3) & 7;
		m &= (obj[2] << 3) | ~070u;
	}
	*mode = (*mode & ~0777) | (m & 0777);
	return not_equiv;
}

/*
 * The mode of a new inode in dir asked for as *mode: masked by dir's
 * default ACL when it has one (*inherit set), else left for the umask.
 */
errcode_t xr_acl_create_mode(extref_fs_t xfs, ext2_ino_t dir, __u16 *mode,
			     int *inherit)
{
	void *val;
	size_t len;
	errcode_t err;

	*inherit = 0;
	if (LINUX_S_ISLNK(*mode))
		return 0;
	err = inheritable_acl(extref_fs_ext2(xfs), dir, &val, &len);
	if (err || !val)
		return err;
	create_masq(val, len, mode);
	*inherit = 1;
	ext2fs_free_mem(&val);
	return 0;
}

/* Give ino, just made in dir with its final mode, dir's default ACL. */
errcode_t xr_acl_inherit(extref_fs_t xfs, ext2_ino_t dir, ext2_ino_t ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_xattr_handle *h;
	struct ext2_inode inode;
	void *val, *acc = NULL;
	size_t len;
	__u16 mode;
	errcode_t err, err2;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (err || LINUX_S_ISLNK(inode.i_mode))
		return err;
	err = inheritable_acl(fs, dir, &val, &len);
	if (err || !val)
		return err;
	mode = inode.i_mode;
	err = ext2fs_get_mem(len, &acc);
	if (!err)
		err = ext2fs_xattrs_open(fs, ino, &h);
	if (err)
		goto out;
	memcpy(acc, val, len);
	err = ext2fs_xattrs_read(h);
	if (!err && create_masq(acc, len, &mode))
		err = ext2fs_xattr_set(h, ACL_ACCESS_NAME, acc, len);
	if (!err && LINUX_S_ISDIR(inode.i_mode))
		err = ext2fs_xattr_set(h, ACL_DEFAULT_NAME, val, len);
	err2 = ext2fs_xattrs_close(&h);
	if (!err)
		err = err2;
out:
	ext2fs_free_mem(&acc);
	ext2fs_free_mem(&val);
	return err;
}
