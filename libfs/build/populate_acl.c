/*
 * populate_acl.c --- an archive entry's POSIX.1e ACL (libarchive's
 * form) as the xattr Linux reads, system.posix_acl_access or _default:
 * version 2, entries sorted by tag and id; libext2fs stores it in
 * ext4's form.
 */
#include <stdlib.h>
#include "archive_dl.h"
#include "populate_int.h"

/* Linux's tags (linux/posix_acl.h) of libarchive's. */
static int acl_tag(int tag)
{
	switch (tag) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ:	return ACL_USER_OBJ;
	case ARCHIVE_ENTRY_ACL_USER:		return ACL_USER;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ:	return ACL_GROUP_OBJ;
	case ARCHIVE_ENTRY_ACL_GROUP:		return ACL_GROUP;
	case ARCHIVE_ENTRY_ACL_MASK:		return ACL_MASK;
	case ARCHIVE_ENTRY_ACL_OTHER:		return ACL_OTHER;
	}
	return 0;
}

struct acl_ent {
	__u16	tag, perm;
	__u32	id;
};

static int acl_cmp(const void *a, const void *b)
{
	const struct acl_ent *x = a, *y = b;

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void put_le(unsigned char *p, __u32 v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void encode(unsigned char *buf, const struct acl_ent *v, int k)
{
	put_le(buf, ACL_XATTR_VERSION, 4);
	for (int i = 0; i < k; i++) {
		put_le(buf + 4 + ACL_ENTRY_SIZE * i, v[i].tag, 2);
		put_le(buf + 6 + ACL_ENTRY_SIZE * i, v[i].perm, 2);
		put_le(buf + 8 + ACL_ENTRY_SIZE * i, v[i].id, 4);
	}
}

/* *buf NULL (and *len 0) when the entry has no ACL of that type. */
errcode_t xr_pop_archive_acl(struct archive_entry *e, int type,
			     void **buf, size_t *len)
{
	int n = archive_entry_acl_reset(e, type), t, perm, tag, id, k = 0;
	struct acl_ent *v = NULL;
	const char *name;
	errcode_t err;

	*buf = NULL;
	*len = 0;
	if (n <= 0)
		return 0;
	err = ext2fs_get_array(n, sizeof(*v), &v);
	if (!err)
		err = ext2fs_get_mem(4 + ACL_ENTRY_SIZE * (size_t)n, buf);
	while (!err && k < n &&
	       archive_entry_acl_next(e, type, &t, &perm, &tag, &id,
				      &name) == ARCHIVE_OK) {
		if (!acl_tag(tag))
			continue;
		v[k].tag = (__u16)acl_tag(tag);
		v[k].perm = (__u16)(perm & 7);
		v[k].id = (tag == ARCHIVE_ENTRY_ACL_USER ||
			   tag == ARCHIVE_ENTRY_ACL_GROUP) ? (__u32)id :
			  0xffffffffU;
		k++;
	}
	if (!err && k) {
		qsort(v, (size_t)k, sizeof(*v), acl_cmp);
		encode(*buf, v, k);
		*len = 4 + ACL_ENTRY_SIZE * (size_t)k;
	} else {
		ext2fs_free_mem(buf);
	}
	ext2fs_free_mem(&v);
	return err;
}
