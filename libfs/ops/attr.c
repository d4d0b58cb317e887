/*
 * attr.c --- chmod, chown, setxattr and removexattr, with the kernel's
 * rules for the acting identity (perm.c).
 *
 *   Every one: EPERM on an immutable or append-only inode.
 *   chmod: the owner or CAP_FOWNER, else EPERM; the setgid bit is
 *     dropped when the caller is not in the file's group and lacks
 *     CAP_FSETID (setattr_prepare).
 *   chown: a new owner needs CAP_CHOWN (the owner may "change" it to
 *     itself); a new group needs CAP_CHOWN, or the owner changing it to
 *     one of its groups; else EPERM.  A non-directory then loses setuid,
 *     setgid when group-executable (or when the caller is neither in the
 *     group nor holds CAP_FSETID) and security.capability, for every
 *     caller, root included.
 *   setxattr, removexattr (xattr_permission, commoncap): trusted.* and
 *     security.* need CAP_SYS_ADMIN, security.capability CAP_SETFCAP
 *     (a kernel without an LSM policy: offline there is none);
 *     system.posix_acl_* the owner or CAP_FOWNER; user.* only on regular
 *     files and directories, only the owner (or CAP_FOWNER) on a sticky
 *     directory, and write permission (EACCES).
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

#define PFX(name, p)	(strncmp(name, p, sizeof(p) - 1) == 0)

static int has_flag(const struct ext2_inode *inode, __u32 fl)
{
	return (inode->i_flags & fl) != 0;
}

/* Read ino for an attribute change; EPERM when it may not change. */
static errcode_t attr_begin(extref_fs_t xfs, ext2_ino_t ino,
			    struct ext2_inode *inode)
{
	errcode_t err = extref_check_modifiable(xfs, ino);

	if (!err)
		err = xr_read_inode(extref_fs_ext2(xfs), ino, inode);
	if (!err && xr_actor(xfs) &&
	    has_flag(inode, EXT2_IMMUTABLE_FL | EXT2_APPEND_FL))
		err = EXTREF_ERR_PERM;
	return err;
}

static errcode_t chmod_op(extref_fs_t xfs, ext2_ino_t ino, __u32 mode)
{
	const struct extref_cred *c = xr_actor(xfs);
	struct ext2_inode inode;
	errcode_t err = attr_begin(xfs, ino, &inode);

	if (err)
		return err;
	if (!xr_owner_or_capable(c, &inode))
		return EXTREF_ERR_PERM;
	mode &= 07777;
	if (!xr_in_group(c, inode_gid(inode)) &&
	    !xr_capable(c, EXTREF_CAP_FSETID))
		mode &= ~02000;
	inode.i_mode = (inode.i_mode & LINUX_S_IFMT) | mode;
	return xr_write_inode_times(extref_fs_ext2(xfs), ino, &inode,
				    XR_TIME_CTIME);
}

/* One transaction (txn.c). */
errcode_t extref_chmod(extref_fs_t xfs, ext2_ino_t ino, __u32 mode)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, chmod_op(xfs, ino, mode));
}

/* chown_ok and chgrp_ok of fs/attr.c. */
static errcode_t chown_allowed(const struct extref_cred *c,
			       const struct ext2_inode *inode, __u32 uid,
			       __u32 gid)
{
	int owner;

	if (!c || xr_capable(c, EXTREF_CAP_CHOWN))
		return 0;
	owner = c->uid == inode_uid(*inode);
	if (uid != EXTREF_ID_UNCHANGED && !(owner && uid == inode_uid(*inode)))
		return EXTREF_ERR_PERM;
	if (gid != EXTREF_ID_UNCHANGED &&
	    !(owner && (xr_in_group(c, gid) || gid == inode_gid(*inode))))
		return EXTREF_ERR_PERM;
	return 0;
}

static errcode_t chown_op(extref_fs_t xfs, ext2_ino_t ino, __u32 uid, __u32 gid)
{
	struct ext2_inode inode;
	__u32 old_uid, old_gid, new_uid, new_gid;
	errcode_t err = attr_begin(xfs, ino, &inode);

	if (!err)
		err = chown_allowed(xr_actor(xfs), &inode, uid, gid);
	if (err)
		return err;
	old_uid = inode_uid(inode);
	old_gid = inode_gid(inode);
	new_uid = uid == EXTREF_ID_UNCHANGED ? old_uid : uid;
	new_gid = gid == EXTREF_ID_UNCHANGED ? old_gid : gid;
	/*
	 * Quota: the old owner (old_uid, old_gid) and the new (new_uid,
	 * new_gid) both known, nothing written yet: the new owner's limits
	 * (the inode write below moves the usage, quota/charge.c).
	 */
	err = xr_quota_transfer(xfs, ino, &inode, new_uid, new_gid);
	if (!err)
		err = xr_remove_privs(xfs, ino, &inode, XR_KILL_CHOWN);
	if (err)
		return err;
	xr_set_owner(&inode, new_uid, new_gid);
	return xr_quota_end(xfs, xr_write_inode_times(extref_fs_ext2(xfs), ino,
						      &inode, XR_TIME_CTIME));
}

/* One transaction (txn.c). */
errcode_t extref_chown(extref_fs_t xfs, ext2_ino_t ino, __u32 uid, __u32 gid)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, chown_op(xfs, ino, uid, gid));
}

/* xattr_permission for a change of attribute name on inode. */
static errcode_t xattr_allowed(extref_fs_t xfs, ext2_ino_t ino,
			       const struct ext2_inode *inode,
			       const char *name)
{
	const struct extref_cred *c = xr_actor(xfs);
	__u16 mode = inode->i_mode;

	if (!c)
		return 0;
	if (!strcmp(name, "security.capability"))
		return xr_capable(c, EXTREF_CAP_SETFCAP) ? 0 : EXTREF_ERR_PERM;
	if (PFX(name, "security.") || PFX(name, "trusted."))
		return xr_capable(c, EXTREF_CAP_SYS_ADMIN) ? 0 :
			EXTREF_ERR_PERM;
	if (PFX(name, "system."))
		return (PFX(name, "system.posix_acl_") &&
			xr_owner_or_capable(c, inode)) ? 0 : EXTREF_ERR_PERM;
	if (PFX(name, "user.")) {
		if (!LINUX_S_ISREG(mode) && !LINUX_S_ISDIR(mode))
			return EXTREF_ERR_PERM;
		if (LINUX_S_ISDIR(mode) && (mode & 01000) &&
		    !xr_owner_or_capable(c, inode))
			return EXTREF_ERR_PERM;
	}
	return xr_permission(extref_fs_ext2(xfs), c, ino, inode, XR_MAY_WRITE);
}

/* Set (value non-NULL) or remove NAME through libext2fs's handle. */
static errcode_t xattr_change(extref_fs_t xfs, ext2_ino_t ino,
			      const char *name, const void *value, size_t len)
{
	struct ext2_xattr_handle *h;
	struct ext2_inode inode;
	void *old = NULL;
	size_t oldlen;
	errcode_t err, err2;

	err = attr_begin(xfs, ino, &inode);
	if (!err)
		err = xattr_allowed(xfs, ino, &inode, name);
	if (!err)
		err = ext2fs_xattrs_open(extref_fs_ext2(xfs), ino, &h);
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err && value) {
		err = ext2fs_xattr_set(h, name, value, len);
	} else if (!err) {
		/* libext2fs removes an absent name "successfully": ENODATA */
		err = ext2fs_xattr_get(h, name, &old, &oldlen);
		ext2fs_free_mem(&old);
		if (!err)
			err = ext2fs_xattr_remove(h, name);
	}
	err2 = ext2fs_xattrs_close(&h);
	if (!err)
		err = err2;
	/* the change time, as the kernel sets it (the close may have
	 * written the inode: an xattr block made or freed) */
	if (!err)
		err = xr_read_inode(extref_fs_ext2(xfs), ino, &inode);
	if (!err)
		err = xr_write_inode_times(extref_fs_ext2(xfs), ino, &inode,
					   XR_TIME_CTIME);
	/* an xattr block made or freed changes the owner's usage */
	return xr_quota_end(xfs, err);
}

static errcode_t setxattr_op(extref_fs_t xfs, ext2_ino_t ino, const char *name,
			  const void *value, size_t len)
{
	return xattr_change(xfs, ino, name, value ? value : "", len);
}

/* One transaction (txn.c). */
errcode_t extref_setxattr(extref_fs_t xfs, ext2_ino_t ino, const char *name,
			  const void *value, size_t len)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, setxattr_op(xfs, ino, name, value, len));
}

static errcode_t removexattr_op(extref_fs_t xfs, ext2_ino_t ino,
			     const char *name)
{
	return xattr_change(xfs, ino, name, NULL, 0);
}

/* One transaction (txn.c). */
errcode_t extref_removexattr(extref_fs_t xfs, ext2_ino_t ino,
			     const char *name)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, removexattr_op(xfs, ino, name));
}
