/*
 * acl.c --- POSIX ACLs as the kernel keeps them with the mode.  FUSE
 * hands system.posix_acl_* to the server as plain attributes (no
 * FUSE_CAP_POSIX_ACL), so the server does what the kernel's set_acl and
 * chmod would: an access ACL sets the mode's permission bits (the group
 * bits from its mask), and one the mode says entirely is not kept as an
 * attribute (posix_acl_update_mode); a chmod rewrites the access ACL's
 * owner, mask (or group) and other entries (posix_acl_chmod).  Each is
 * one transaction with the mode's change.
 */
#include <errno.h>
#include <string.h>
#include "xfuse.h"

#define ACL_NAME	"system.posix_acl_access"
#define ACL_VERSION	2
#define TAG_USER_OBJ	0x01
#define TAG_USER	0x02
#define TAG_GROUP_OBJ	0x04
#define TAG_GROUP	0x08
#define TAG_MASK	0x10
#define TAG_OTHER	0x20

/* The kernel's xattr form of an ACL: a version, then 8-byte entries,
 * little-endian. */
struct acl_entry {
	__u16	tag;
	__u16	perm;
	__u32	id;
};

static __u32 le32_at(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (__u32)p[3] << 24;
}

static __u16 le16_at(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static void le16_put(unsigned char *p, __u16 v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

/* Entries of value, or -EINVAL for a malformed one. */
static int acl_count(const void *value, size_t size)
{
	if (size < 4 || (size - 4) % 8 || size > 4 + 8 * 1024 ||
	    le32_at(value) != ACL_VERSION)
		return -EINVAL;
	return (int)((size - 4) / 8);
}

static struct acl_entry acl_at(const void *value, int i)
{
	const unsigned char *p = (const unsigned char *)value + 4 + 8 * i;
	struct acl_entry e = { le16_at(p), le16_at(p + 2), le32_at(p + 4) };

	return e;
}

/*
 * posix_acl_equiv_mode: the permission bits the ACL gives the mode in
 * *bits; 1 when the mode says all of it (no named entry, no mask), 0
 * when the ACL says more, -EINVAL when it is malformed.
 */
static int acl_equiv_mode(const void *value, size_t size, mode_t *bits)
{
	int i, n = acl_count(value, size), equiv = 1, seen = 0;

	if (n < 0)
		return n;
	*bits = 0;
	for (i = 0; i < n; i++) {
		struct acl_entry e = acl_at(value, i);

		switch (e.tag) {
		case TAG_USER_OBJ:
			*bits |= (e.perm & 7) << 6;
			break;
		case TAG_GROUP_OBJ:
			*bits |= (e.perm & 7) << 3;
			break;
		case TAG_OTHER:
			*bits |= e.perm & 7;
			break;
		case TAG_MASK:
			*bits = (*bits & ~070) | (e.perm & 7) << 3;
			equiv = 0;
			break;
		case TAG_USER:
		case TAG_GROUP:
			equiv = 0;
			break;
		default:
			return -EINVAL;
		}
		seen |= e.tag;
	}
	if ((seen & (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER)) !=
	    (TAG_USER_OBJ | TAG_GROUP_OBJ | TAG_OTHER))
		return -EINVAL;
	return equiv;
}

static errcode_t set_access(ext2_ino_t ino, const void *value, size_t size,
			    mode_t bits, int equiv)
{
	struct ext2_inode_large in;
	errcode_t err = ext2fs_read_inode_full(xf.fs, ino,
					       (struct ext2_inode *)&in,
					       sizeof(in));

	if (!err)
		err = extref_chmod(xf.xfs, ino, (in.i_mode & 07000) | bits);
	if (!err && equiv) {
		err = extref_removexattr(xf.xfs, ino, ACL_NAME);
		if (err == EXT2_ET_EA_KEY_NOT_FOUND)
			err = 0;
	} else if (!err) {
		err = extref_setxattr(xf.xfs, ino, ACL_NAME, value, size);
	}
	return err;
}

/* setxattr of system.posix_acl_access: the mode and the ACL together. */
int xf_acl_set_access(ext2_ino_t ino, const void *value, size_t size)
{
	mode_t bits;
	errcode_t err;
	int equiv = acl_equiv_mode(value, size, &bits);

	if (equiv < 0)
		return equiv;
	err = extref_tx_begin(xf.xfs);
	if (!err)
		err = extref_tx_end(xf.xfs, set_access(ino, value, size, bits,
						       equiv));
	return xf_err(err);
}

/* The access ACL of ino, or *value NULL when it has none. */
static errcode_t get_access(ext2_ino_t ino, void **value, size_t *size)
{
	struct ext2_xattr_handle *h;
	errcode_t err = ext2fs_xattrs_open(xf.fs, ino, &h);

	*value = NULL;
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_get(h, ACL_NAME, value, size);
	ext2fs_xattrs_close(&h);
	if (err == EXT2_ET_EA_KEY_NOT_FOUND) {
		*value = NULL;
		err = 0;
	}
	return err;
}

/* posix_acl_chmod: after a chmod, the access ACL's entries that stand
 * for the mode's bits say the new ones (inside the chmod's transaction). */
errcode_t xf_acl_chmod(ext2_ino_t ino, mode_t mode)
{
	void *value;
	size_t size;
	int i, n, has_mask = 0;
	errcode_t err = get_access(ino, &value, &size);

	if (err || !value)
		return err;
	n = acl_count(value, size);
	for (i = 0; i < n; i++)
		has_mask |= acl_at(value, i).tag == TAG_MASK;
	for (i = 0; i < n; i++) {
		unsigned char *p = (unsigned char *)value + 4 + 8 * i;
		__u16 tag = le16_at(p);

		if (tag == TAG_USER_OBJ)
			le16_put(p + 2, (mode >> 6) & 7);
		else if (tag == (has_mask ? TAG_MASK : TAG_GROUP_OBJ))
			le16_put(p + 2, (mode >> 3) & 7);
		else if (tag == TAG_OTHER)
			le16_put(p + 2, mode & 7);
	}
	err = n < 0 ? 0 : extref_setxattr(xf.xfs, ino, ACL_NAME, value, size);
	ext2fs_free_mem(&value);
	return err;
}
