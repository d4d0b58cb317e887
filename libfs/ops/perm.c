/*
 * perm.c --- the kernel's permission checks, for an acting identity.
 *
 * With an identity set (extref_set_identity), every entry point checks
 * what the kernel checks for a process with that fsuid, fsgid,
 * supplementary groups and capabilities (fs/namei.c, fs/attr.c,
 * fs/xattr.c, fs/remap_range.c, security/commoncap.c).  Without one
 * (the default for root tools) nothing is checked, as before; only what
 * the kernel does for root as well applies then (security.capability
 * dropped when a file is written or changes owner).
 *
 *   generic_permission: the owner's bits when the caller owns the
 *     inode; else a POSIX ACL (system.posix_acl_access: named users,
 *     the owning and named groups, limited by the mask entry) when the
 *     inode has one and its group bits are not 0; else the group's bits
 *     when the caller is in the inode's group (fsgid or supplementary);
 *     else the other bits.  CAP_DAC_OVERRIDE overrides read and write,
 *     and execute when some x bit is set (directories: search);
 *     CAP_DAC_READ_SEARCH overrides read, and read/search of directories.
 *   MAY_WRITE on an immutable inode: EPERM, for every caller.
 *   may_create: write and search on the directory.
 *   may_delete: write and search on the directory; then EPERM when the
 *     directory is append-only, the victim immutable or append-only, or
 *     the sticky bit is set on the directory and the caller owns neither
 *     it nor the victim and lacks CAP_FOWNER.
 *   may_dedupe_file: CAP_SYS_ADMIN, the owner, or write permission;
 *     else EPERM.
 *   file_remove_privs on write, truncate, punch, unshare and the
 *     destination of a clone: setuid cleared, setgid cleared when group
 *     execute is set, unless CAP_FSETID; security.capability removed.
 *
 * Errors: EXTREF_ERR_ACCESS where the kernel says EACCES,
 * EXTREF_ERR_PERM where it says EPERM.
 */
#include <string.h>
#include "tree/extref_int.h"
#include "extref_ops_int.h"
#include "txn/xr_handle.h"

#define ACL_NO_ACL		1	/* none on the inode: use the mode */

#define XR_S_ISUID	04000
#define XR_S_ISGID	02000
#define XR_S_ISVTX	01000
#define XR_S_IXGRP	00010
#define XR_S_IXUGO	00111
#define XR_S_IRWXG	00070

#define XATTR_NAME_CAPS	"security.capability"

static __u16 le16_at(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static __u32 le32_at(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (__u32)p[3] << 24;
}

/* An xattr's value (NULL and EXT2_ET_EA_KEY_NOT_FOUND when absent). */
static errcode_t get_xattr(ext2_filsys fs, ext2_ino_t ino, const char *name,
			   void **val, size_t *len)
{
	struct ext2_xattr_handle *h;
	errcode_t err = ext2fs_xattrs_open(fs, ino, &h);

	*val = NULL;
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_get(h, name, val, len);
	ext2fs_xattrs_close(&h);
	return err;
}

/* posix_acl_permission over the entries; want is MAY_* (rwx = 4,2,1). */
static errcode_t acl_check(const struct extref_cred *c,
			   const struct ext2_inode *inode,
			   const unsigned char *e, size_t n, int want)
{
	size_t i, m;
	int found = 0, tag, perm;

	for (i = 0; i < n; i++, e += ACL_ENTRY_SIZE) {
		tag = le16_at(e);
		perm = le16_at(e + 2);
		switch (tag) {
		case ACL_USER_OBJ:
			if (c->uid == inode_uid(*inode))
				goto check_perm;
			continue;
		case ACL_USER:
			if (c->uid == le32_at(e + 4))
				goto mask;
			continue;
		case ACL_GROUP_OBJ:
		case ACL_GROUP:
			if (xr_in_group(c, tag == ACL_GROUP ? le32_at(e + 4) :
					inode_gid(*inode))) {
				found = 1;
				if ((perm & want) == want)
					goto mask;
			}
			continue;
		case ACL_MASK:
			continue;
		case ACL_OTHER:
			if (found)
				return EXTREF_ERR_ACCESS;
			goto check_perm;
		default:
			return EXT2_ET_EA_BAD_VALUE_SIZE;
		}
	}
	return EXT2_ET_EA_BAD_VALUE_SIZE;
mask:
	for (m = i + 1; m < n; m++) {
		const unsigned char *me = e + (m - i) * ACL_ENTRY_SIZE;

		if (le16_at(me) == ACL_MASK)
			return (perm & le16_at(me + 2) & want) == want ? 0 :
				EXTREF_ERR_ACCESS;
	}
check_perm:
	return (perm & want) == want ? 0 : EXTREF_ERR_ACCESS;
}

/* check_acl: 0 or EXTREF_ERR_ACCESS, ACL_NO_ACL without an access ACL. */
static errcode_t check_acl(ext2_filsys fs, const struct extref_cred *c,
			   ext2_ino_t ino, const struct ext2_inode *inode,
			   int want)
{
	void *val;
	size_t len;
	errcode_t err = get_xattr(fs, ino, "system.posix_acl_access", &val,
				  &len);

	if (err == EXT2_ET_EA_KEY_NOT_FOUND || err == EXT2_ET_NO_INLINE_DATA ||
	    err == EXT2_ET_MISSING_EA_FEATURE)
		return ACL_NO_ACL;
	if (err)
		return err;
	if (len < 4 || (len - 4) % ACL_ENTRY_SIZE ||
	    le32_at(val) != ACL_XATTR_VERSION)
		err = EXT2_ET_EA_BAD_VALUE_SIZE;
	else
		err = acl_check(c, inode, (unsigned char *)val + 4,
				(len - 4) / ACL_ENTRY_SIZE, want);
	ext2fs_free_mem(&val);
	return err;
}

/* acl_permission_check: the owner's, an ACL's, the group's, the others'. */
static errcode_t mode_check(ext2_filsys fs, const struct extref_cred *c,
			    ext2_ino_t ino, const struct ext2_inode *inode,
			    int mask)
{
	unsigned mode = inode->i_mode;
	errcode_t err;

	mask &= 7;
	if (c->uid == inode_uid(*inode))
		return (mask & ~(mode >> 6)) ? EXTREF_ERR_ACCESS : 0;
	if (mode & XR_S_IRWXG) {
		err = check_acl(fs, c, ino, inode, mask);
		if (err != ACL_NO_ACL)
			return err;
	}
	if (xr_in_group(c, inode_gid(*inode)))
		mode >>= 3;
	return (mask & ~mode) ? EXTREF_ERR_ACCESS : 0;
}

errcode_t xr_permission(ext2_filsys fs, const struct extref_cred *c,
			ext2_ino_t ino, const struct ext2_inode *inode,
			int mask)
{
	errcode_t err;

	if (!c)
		return 0;
	if ((mask & XR_MAY_WRITE) && (inode->i_flags & EXT2_IMMUTABLE_FL))
		return EXTREF_ERR_PERM;
	err = mode_check(fs, c, ino, inode, mask);
	if (err != EXTREF_ERR_ACCESS)
		return err;
	/* generic_permission's capability overrides */
	if (LINUX_S_ISDIR(inode->i_mode)) {
		if (!(mask & XR_MAY_WRITE) &&
		    xr_capable(c, EXTREF_CAP_DAC_READ_SEARCH))
			return 0;
		return xr_capable(c, EXTREF_CAP_DAC_OVERRIDE) ? 0 : err;
	}
	if ((!(mask & XR_MAY_EXEC) || (inode->i_mode & XR_S_IXUGO)) &&
	    xr_capable(c, EXTREF_CAP_DAC_OVERRIDE))
		return 0;
	if ((mask & 7) == XR_MAY_READ &&
	    xr_capable(c, EXTREF_CAP_DAC_READ_SEARCH))
		return 0;
	return err;
}

/* The inode, read and checked for mask, under the fs's acting identity. */
errcode_t xr_perm_inode(extref_fs_t xfs, ext2_ino_t ino, int mask)
{
	const struct extref_cred *c = xr_actor(xfs);
	struct ext2_inode inode;
	errcode_t err;

	if (!c)
		return 0;
	err = xr_read_inode(extref_fs_ext2(xfs), ino, &inode);
	return err ? err : xr_permission(extref_fs_ext2(xfs), c, ino, &inode,
					 mask);
}

/*
 * DIR as the parent of a name to make or remove: a directory first
 * (ENOTDIR, as the kernel's walk says before any permission), then
 * searchable by the identity.
 */
errcode_t xr_perm_parent(extref_fs_t xfs, ext2_ino_t dir)
{
	struct ext2_inode d;
	errcode_t err = xr_read_inode(extref_fs_ext2(xfs), dir, &d);

	if (!err && !LINUX_S_ISDIR(d.i_mode))
		err = EXTREF_ERR_NOT_DIR;
	return err ? err : xr_perm_inode(xfs, dir, XR_MAY_EXEC);
}

errcode_t extref_access(extref_fs_t xfs, ext2_ino_t ino, int mask)
{
	return xr_perm_inode(xfs, ino, mask & 7);
}

errcode_t xr_may_create(extref_fs_t xfs, ext2_ino_t dir)
{
	return xr_perm_inode(xfs, dir, XR_MAY_WRITE | XR_MAY_EXEC);
}

errcode_t xr_may_delete(extref_fs_t xfs, ext2_ino_t dir, ext2_ino_t victim)
{
	const struct extref_cred *c = xr_actor(xfs);
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode d, v;
	errcode_t err;

	if (!c)
		return 0;
	err = xr_read_inode(fs, dir, &d);
	if (!err)
		err = xr_read_inode(fs, victim, &v);
	if (!err)
		err = xr_permission(fs, c, dir, &d, XR_MAY_WRITE | XR_MAY_EXEC);
	if (err)
		return err;
	if (d.i_flags & EXT2_APPEND_FL)
		return EXTREF_ERR_PERM;
	if (v.i_flags & (EXT2_APPEND_FL | EXT2_IMMUTABLE_FL))
		return EXTREF_ERR_PERM;
	/* check_sticky */
	if ((d.i_mode & XR_S_ISVTX) && c->uid != inode_uid(v) &&
	    c->uid != inode_uid(d) && !xr_capable(c, EXTREF_CAP_FOWNER))
		return EXTREF_ERR_PERM;
	return 0;
}

/*
 * A change of a regular file's data (XR_CHANGE_*): write permission,
 * and what append-only allows: nothing but a write at EOF (an O_APPEND
 * write), and a dedupe (which changes no byte).
 */
errcode_t xr_perm_check_write(extref_fs_t xfs, ext2_ino_t ino,
			      const struct ext2_inode *inode, int kind,
			      __u64 off)
{
	const struct extref_cred *c = xr_actor(xfs);
	errcode_t err;

	if (!c)
		return 0;
	if (kind == XR_CHANGE_DEDUPE) {
		/* may_dedupe_file, then what remap_range refuses */
		if (!xr_capable(c, EXTREF_CAP_SYS_ADMIN) &&
		    c->uid != inode_uid(*inode) &&
		    xr_permission(extref_fs_ext2(xfs), c, ino, inode,
				  XR_MAY_WRITE))
			return EXTREF_ERR_PERM;
		return (inode->i_flags & EXT2_IMMUTABLE_FL) ? EXTREF_ERR_PERM
							     : 0;
	}
	err = xr_permission(extref_fs_ext2(xfs), c, ino, inode, XR_MAY_WRITE);
	if (err)
		return err;
	if ((inode->i_flags & EXT2_APPEND_FL) &&
	    (kind != XR_CHANGE_WRITE || off != EXT2_I_SIZE(inode)))
		return EXTREF_ERR_PERM;
	return 0;
}

errcode_t xr_perm_check_read(extref_fs_t xfs, ext2_ino_t ino,
			     const struct ext2_inode *inode)
{
	const struct extref_cred *c = xr_actor(xfs);

	return c ? xr_permission(extref_fs_ext2(xfs), c, ino, inode,
				 XR_MAY_READ) : 0;
}

/*
 * inode_init_owner for a new inode in dir: the caller's uid; the
 * directory's group when it is setgid (a new directory inherits the
 * setgid bit), else the caller's fsgid; a file's setgid bit dropped in
 * a setgid directory when the caller is not in the group and lacks
 * CAP_FSETID.
 */
void xr_init_owner(const struct extref_cred *c, const struct ext2_inode *dir,
		   __u16 *mode, __u32 *uid, __u32 *gid)
{
	*uid = c->uid;
	*gid = c->gid;
	if (!(dir->i_mode & XR_S_ISGID))
		return;
	*gid = inode_gid(*dir);
	if (LINUX_S_ISDIR(*mode))
		*mode |= XR_S_ISGID;
	else if ((*mode & XR_S_ISGID) && !xr_in_group(c, *gid) &&
		 !xr_capable(c, EXTREF_CAP_FSETID))
		*mode &= ~XR_S_ISGID;
}

/* Remove security.capability from ino, if it has one; *gone set then. */
static errcode_t kill_caps(ext2_filsys fs, ext2_ino_t ino, int *gone)
{
	struct ext2_xattr_handle *h;
	void *val = NULL;
	size_t len;
	errcode_t err, err2;

	*gone = 0;
	err = ext2fs_xattrs_open(fs, ino, &h);
	if (err)
		return err == EXT2_ET_MISSING_EA_FEATURE ? 0 : err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_get(h, XATTR_NAME_CAPS, &val, &len);
	if (!err) {
		ext2fs_free_mem(&val);
		err = ext2fs_xattr_remove(h, XATTR_NAME_CAPS);
		*gone = !err;
	} else if (err == EXT2_ET_EA_KEY_NOT_FOUND) {
		err = 0;
	}
	err2 = ext2fs_xattrs_close(&h);
	return err ? err : err2;
}

/*
 * The privileges a change takes away (file_remove_privs, and chown's
 * ATTR_KILL_*): security.capability goes (the kernel removes it for
 * root as well); setuid and setgid-with-group-execute go unless the
 * caller holds CAP_FSETID (XR_KILL_WRITE), or, on chown, for everyone
 * with the setgid bit without group execute only when the caller is
 * neither in the group nor holds CAP_FSETID (XR_KILL_CHOWN).  inode
 * is re-read when the xattrs changed, and the new mode set in it; the
 * caller writes it.
 */
errcode_t xr_remove_privs(extref_fs_t xfs, ext2_ino_t ino,
			  struct ext2_inode *inode, int why)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	const struct extref_cred *c = xr_actor(xfs);
	__u16 mode = inode->i_mode;
	int gone;
	errcode_t err;

	if (!LINUX_S_ISREG(mode))
		return 0;
	err = kill_caps(fs, ino, &gone);
	if (!err && gone)
		err = ext2fs_read_inode(fs, ino, inode);
	if (err)
		return err;
	if (why == XR_KILL_CHOWN) {
		mode &= ~XR_S_ISUID;
		if ((mode & XR_S_ISGID) && ((mode & XR_S_IXGRP) ||
		    !(xr_in_group(c, inode_gid(*inode)) ||
		      xr_capable(c, EXTREF_CAP_FSETID))))
			mode &= ~XR_S_ISGID;
	} else if (!xr_capable(c, EXTREF_CAP_FSETID)) {
		mode &= ~XR_S_ISUID;
		if (mode & XR_S_IXGRP)
			mode &= ~XR_S_ISGID;
	}
	inode->i_mode = mode;
	return 0;
}

/*
 * Before a write-like change: remove_privs, and the inode written when
 * that changed its mode (the data change that follows writes it again).
 */
errcode_t xr_file_modified(extref_fs_t xfs, ext2_ino_t ino,
			   struct ext2_inode *inode)
{
	__u16 old = inode->i_mode;
	errcode_t err = xr_remove_privs(xfs, ino, inode, XR_KILL_WRITE);

	if (!err && inode->i_mode != old)
		err = ext2fs_write_inode(extref_fs_ext2(xfs), ino, inode);
	return err;
}

/*
 * A new entry NAME in DIR: search permission to look the name up, the
 * name free (EEXIST before any write permission, as lookup_open), then
 * may_create.
 */
errcode_t xr_may_create_name(extref_fs_t xfs, ext2_ino_t dir,
			     const char *name)
{
	errcode_t err = xr_perm_parent(xfs, dir);

	if (!err)
		err = xr_name_free(extref_fs_ext2(xfs), dir, name);
	return err ? err : xr_may_create(xfs, dir);
}

/*
 * The owner and mode of an inode made in DIR: with an identity, the
 * identity's (inode_init_owner, its umask applied, or DIR's default ACL
 * when it has one: acl.c); else cred's, as before.  inode->i_mode holds
 * the requested mode on entry.  The caller gives the new inode DIR's
 * default ACL (xr_acl_inherit) once it exists.
 */
errcode_t xr_new_owner(extref_fs_t xfs, ext2_ino_t dir,
		       const struct extref_cred *cred,
		       struct ext2_inode *inode)
{
	const struct extref_cred *c = xr_actor(xfs);
	struct ext2_inode d;
	__u32 uid, gid;
	int inherit;
	errcode_t err;

	if (!c) {
		xr_set_owner(inode, cred->uid, cred->gid);
		return 0;
	}
	err = xr_read_inode(extref_fs_ext2(xfs), dir, &d);
	if (!err)
		err = xr_acl_create_mode(xfs, dir, &inode->i_mode, &inherit);
	if (err)
		return err;
	if (!inherit && !LINUX_S_ISLNK(inode->i_mode))
		inode->i_mode &= ~(c->umask & 0777);
	xr_init_owner(c, &d, &inode->i_mode, &uid, &gid);
	xr_set_owner(inode, uid, gid);
	return 0;
}

/*
 * The group of a new inode in dir: dir's when it is setgid (*sgid set:
 * a new directory there is setgid too), else *gid.
 */
errcode_t xr_new_group(extref_fs_t xfs, ext2_ino_t dir, __u32 *gid,
		       int *sgid)
{
	struct ext2_inode d;
	errcode_t err = xr_read_inode(extref_fs_ext2(xfs), dir, &d);

	*sgid = !err && (d.i_mode & XR_S_ISGID);
	if (*sgid)
		*gid = inode_gid(d);
	return err;
}

/* clone_range (dedupe 0) and dedupe (1): what opening the two takes. */
errcode_t xr_perm_remap(extref_fs_t xfs, ext2_ino_t src,
			const struct ext2_inode *sinode, ext2_ino_t dst,
			const struct ext2_inode *dinode, int dedupe)
{
	errcode_t err = xr_perm_check_read(xfs, src, sinode);

	return err ? err : xr_perm_check_write(xfs, dst, dinode,
			dedupe ? XR_CHANGE_DEDUPE : XR_CHANGE_DATA, 0);
}

/*
 * One source inode of a reflink, under identity c: a file readable, a
 * directory readable and searchable (what cp -r needs); in preserve
 * mode (a snapshot that keeps the owner) the caller must own it or hold
 * CAP_CHOWN, else EPERM: otherwise one user could make files owned, and
 * charged to, another.
 */
errcode_t xr_perm_reflink_src(extref_fs_t xfs, const struct extref_cred *c,
			      ext2_ino_t ino, const struct ext2_inode *inode,
			      int preserve)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err = 0;

	if (!c)
		return 0;
	if (LINUX_S_ISDIR(inode->i_mode))
		err = xr_permission(fs, c, ino, inode,
				    XR_MAY_READ | XR_MAY_EXEC);
	else if (LINUX_S_ISREG(inode->i_mode))
		err = xr_permission(fs, c, ino, inode, XR_MAY_READ);
	if (!err && preserve && c->uid != inode_uid(*inode) &&
	    !xr_capable(c, EXTREF_CAP_CHOWN))
		err = EXTREF_ERR_PERM;
	return err;
}
