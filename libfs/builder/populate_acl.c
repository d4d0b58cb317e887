/*
 * populate_acl.c --- an archive entry's POSIX.1e ACLs as the xattrs
 * Linux reads (system.posix_acl_access and _default: version 2, entries
 * sorted by tag and id; libext2fs stores them in ext4's form), and the
 * mode the access ACL gives.
 *
 * An ACL the archive carries as an xattr (GNU tar --xattrs records
 * SCHILY.xattr.system.posix_acl_*) is kept as it is, numeric ids and
 * all.  Otherwise libarchive's entries are encoded: an id the archive
 * records (star's and bsdtar's fourth field, or a name that is a
 * number) is kept; a user or group named without one (GNU tar writes
 * names only) takes the id the name has on this host, as tar --acls
 * extracts it.  A name this host does not know, an id of -1 (chown's
 * "no owner") or a malformed ACL is an error naming the entry.
 *
 * libarchive gives an entry with an ACL the group bits of the ACL's
 * group entry, not of its mask; so the mode is made again from the
 * access ACL as Linux makes it when one is set: owner, mask (else
 * group), other; the header's setuid, setgid and sticky bits kept.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "archive_dl.h"
#include "populate_int.h"

#define NO_ID		0xffffffffU
#define NAME_BUF	16384		/* getpwnam_r's strings */

static const char *const acl_names[2] = {
	"system.posix_acl_access", "system.posix_acl_default" };

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

static __u32 get_le(const unsigned char *p, int bytes)
{
	__u32 v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
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

static const char *tag_word(int tag)
{
	return tag == ACL_USER ? "user" : "group";
}

/* The id NAME has on this host, as a user (ACL_USER) or a group. */
static errcode_t host_id(int tag, const char *name, __u32 *id)
{
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char *buf = NULL;
	errcode_t err = ext2fs_get_mem(NAME_BUF, &buf);

	if (err)
		return err;
	if (tag == ACL_USER && !getpwnam_r(name, &pw, buf, NAME_BUF, &pwp) &&
	    pwp)
		*id = pw.pw_uid;
	else if (tag == ACL_GROUP &&
		 !getgrnam_r(name, &gr, buf, NAME_BUF, &grp) && grp)
		*id = gr.gr_gid;
	else
		err = EXTREF_ERR_ARCHIVE_ACL;
	ext2fs_free_mem(&buf);
	return err;
}

/* The id of a named entry: the archive's, else its name's here. */
static errcode_t entry_id(int tag, int id, const char *name, __u32 *ret,
			  char *why, size_t whylen)
{
	const char *shown = name && *name ? name : "";

	if (id >= 0) {
		*ret = (__u32)id;
	} else if (!*shown || host_id(tag, shown, ret)) {
		snprintf(why, whylen, "ACL entry %s:%s: no id in the archive "
			 "and no such %s here", tag_word(tag), shown,
			 tag_word(tag));
		return EXTREF_ERR_ARCHIVE_ACL;
	}
	if (*ret == NO_ID) {
		snprintf(why, whylen, "ACL entry %s:%s: id -1",
			 tag_word(tag), shown);
		return EXTREF_ERR_ARCHIVE_ACL;
	}
	return 0;
}

/*
 * libarchive's ACL of type as the xattr, into *buf and *len (NULL and 0
 * when the entry has none).
 */
static errcode_t from_entries(struct archive_entry *e, int type,
			      void **buf, size_t *len, char *why,
			      size_t whylen)
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
		v[k].id = NO_ID;
		if (v[k].tag == ACL_USER || v[k].tag == ACL_GROUP)
			err = entry_id(v[k].tag, id, name, &v[k].id, why,
				       whylen);
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

/* An ACL xattr from the archive: version 2, known tags, no id -1. */
static errcode_t check_xattr(const unsigned char *a, size_t len, char *why,
			     size_t whylen)
{
	size_t i;

	if (len < 4 || (len - 4) % ACL_ENTRY_SIZE ||
	    get_le(a, 4) != ACL_XATTR_VERSION) {
		snprintf(why, whylen, "ACL xattr of %zu bytes, not version %d",
			 len, ACL_XATTR_VERSION);
		return EXTREF_ERR_ARCHIVE_ACL;
	}
	for (i = 4; i < len; i += ACL_ENTRY_SIZE) {
		__u32 tag = get_le(a + i, 2), id = get_le(a + i + 4, 4);

		if (tag != ACL_USER_OBJ && tag != ACL_USER &&
		    tag != ACL_GROUP_OBJ && tag != ACL_GROUP &&
		    tag != ACL_MASK && tag != ACL_OTHER) {
			snprintf(why, whylen, "ACL xattr: unknown tag %#x",
				 tag);
			return EXTREF_ERR_ARCHIVE_ACL;
		}
		if ((tag == ACL_USER || tag == ACL_GROUP) && id == NO_ID) {
			snprintf(why, whylen, "ACL entry %s:-1: id -1",
				 tag_word((int)tag));
			return EXTREF_ERR_ARCHIVE_ACL;
		}
	}
	return 0;
}

/* The permission bits an access ACL gives (posix_acl_equiv_mode). */
static void acl_mode(const unsigned char *a, size_t len, __u16 *mode)
{
	int user = -1, group = -1, mask = -1, other = -1;
	size_t i;

	for (i = 4; i + ACL_ENTRY_SIZE <= len; i += ACL_ENTRY_SIZE) {
		int perm = (int)get_le(a + i + 2, 2) & 7;

		switch (get_le(a + i, 2)) {
		case ACL_USER_OBJ:	user = perm; break;
		case ACL_GROUP_OBJ:	group = perm; break;
		case ACL_MASK:		mask = perm; break;
		case ACL_OTHER:		other = perm; break;
		}
	}
	if (mask >= 0)
		group = mask;
	if (user < 0 || group < 0 || other < 0)
		return;		/* not a whole ACL: the header's mode */
	*mode = (__u16)((*mode & ~0777) | user << 6 | group << 3 | other);
}

static const struct xr_pop_xattr *find(const struct xr_pop_xattrs *x,
				       const char *name)
{
	for (size_t i = 0; i < x->n; i++)
		if (!strcmp(x->v[i].name, name))
			return &x->v[i];
	return NULL;
}

/*
 * The ACLs of e into x (the default one only for a directory: dir),
 * where the archive's xattrs are already (bufs[]
 * then hold the ones made here, the caller's to free), and *mode made
 * from the access ACL.  EXTREF_ERR_ARCHIVE_ACL with why saying which
 * entry of the ACL the image cannot hold.
 */
errcode_t xr_pop_archive_acls(struct archive_entry *e,
			      struct xr_pop_xattrs *x, void *bufs[2], int dir,
			      __u16 *mode, char *why, size_t whylen)
{
	static const int types[2] = { ARCHIVE_ENTRY_ACL_TYPE_ACCESS,
				      ARCHIVE_ENTRY_ACL_TYPE_DEFAULT };
	const struct xr_pop_xattr *have;
	errcode_t err = 0;
	size_t len;

	for (int i = 0; !err && i < (dir ? 2 : 1); i++) {
		const void *acl;

		ext2fs_free_mem(&bufs[i]);
		have = find(x, acl_names[i]);
		if (have) {
			acl = have->value;
			len = have->len;
			err = check_xattr(acl, len, why, whylen);
		} else {
			err = from_entries(e, types[i], &bufs[i], &len, why,
					   whylen);
			acl = bufs[i];
			if (!err && acl)
				err = xr_pop_xattrs_add(x, acl_names[i], acl,
							len);
		}
		if (!err && acl && i == 0)
			acl_mode(acl, len, mode);
	}
	return err;
}
