/*
 * xattr.c --- extended attributes: read through libext2fs's attribute
 * handle (POSIX ACLs in the xattr form the kernel uses), set and removed
 * by the library (its per-namespace permission rules, one transaction).
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>
#include "xfuse.h"

/* trusted.* is for CAP_SYS_ADMIN only: to others it is not there. */
static int admin(void)
{
	const struct extref_cred *c = extref_identity(xf.xfs);

	return !c || (c->caps & EXTREF_CAP_SYS_ADMIN);
}

/*
 * The attributes of path, read (close with ext2fs_xattrs_close); name,
 * when given, is one the caller may read, as the kernel's
 * xattr_permission says: user.* needs read permission on the inode.
 */
static int open_attrs(const char *path, const char *name,
		      struct ext2_xattr_handle **h)
{
	ext2_ino_t ino;
	errcode_t err;
	int res = xf_ino(path, &ino);

	if (!res && name && !strncmp(name, "trusted.", 8) && !admin())
		res = -ENODATA;
	if (!res && name && !strncmp(name, "user.", 5))
		res = xf_err(extref_access(xf.xfs, ino, EXTREF_MAY_READ));
	if (res)
		return res;
	err = ext2fs_xattrs_open(xf.fs, ino, h);
	if (err)
		return xf_err(err);
	err = ext2fs_xattrs_read(*h);
	if (err)
		ext2fs_xattrs_close(h);
	return xf_err(err);
}

/* The value of name into value (size 0: its length only). */
int xf_getxattr(const char *path, const char *name, char *value, size_t size)
{
	struct ext2_xattr_handle *h;
	void *val = NULL;
	size_t len = 0;
	errcode_t err;
	int res = open_attrs(path, name, &h);

	if (res)
		return res;
	err = ext2fs_xattr_get(h, name, &val, &len);
	ext2fs_xattrs_close(&h);
	if (err == EXT2_ET_EA_KEY_NOT_FOUND)
		return -ENODATA;
	if (err)
		return xf_err(err);
	if (size && len > size)
		res = -ERANGE;
	else if (size)
		memcpy(value, val, len);
	ext2fs_free_mem(&val);
	return res ? res : (int)len;
}

struct names {
	char	*list;
	size_t	size, len;
	int	trusted;	/* the caller sees trusted.* */
};

static int add_name(char *name, char *value, size_t value_len, void *data)
{
	struct names *n = data;
	size_t l = strlen(name) + 1;

	(void)value, (void)value_len;
	if (!n->trusted && !strncmp(name, "trusted.", 8))
		return 0;
	if (n->size && n->len + l <= n->size)
		memcpy(n->list + n->len, name, l);
	n->len += l;
	return 0;
}

int xf_listxattr(const char *path, char *list, size_t size)
{
	struct ext2_xattr_handle *h;
	struct names n = { list, size, 0, 0 };
	errcode_t err;
	int res = open_attrs(path, NULL, &h);

	if (res)
		return res;
	n.trusted = admin();
	err = ext2fs_xattrs_iterate(h, add_name, &n);
	ext2fs_xattrs_close(&h);
	if (err)
		return xf_err(err);
	if (size && n.len > size)
		return -ERANGE;
	return (int)n.len;
}

/* XATTR_CREATE and XATTR_REPLACE ask whether name is there first. */
int xf_setxattr(const char *path, const char *name, const char *value,
		size_t size, int flags)
{
	ext2_ino_t ino;
	int res;

	if (flags & (XATTR_CREATE | XATTR_REPLACE)) {
		res = xf_getxattr(path, name, NULL, 0);
		if (res >= 0 && (flags & XATTR_CREATE))
			return -EEXIST;
		if (res == -ENODATA && (flags & XATTR_REPLACE))
			return -ENODATA;
		if (res < 0 && res != -ENODATA)
			return res;
	}
	res = xf_ino(path, &ino);
	if (!res && !strcmp(name, "system.posix_acl_access")) {
		res = xf_acl_set_access(ino, value, size);
		/* the mode changed under the kernel's cached attributes
		 * (it does not drop them after a setxattr) */
		if (!res)
			xf_inval(path);
		return res;
	}
	return res ? res : xf_err(extref_setxattr(xf.xfs, ino, name, value,
						  size));
}

int xf_removexattr(const char *path, const char *name)
{
	ext2_ino_t ino;
	int res = xf_ino(path, &ino);

	return res ? res : xf_err(extref_removexattr(xf.xfs, ino, name));
}
