/*
 * reflink_meta.c --- the metadata of an inode a preserve-mode reflink
 * copies rather than shares: directories, symbolic links, devices,
 * FIFOs, sockets and files with inline data.
 *
 * A snapshot keeps what stat and getfattr show: mode, owner, the four
 * times with their nanoseconds and epoch bits (atime, mtime, ctime,
 * crtime), the inode flags a user sets (immutable, append-only, noatime,
 * ...), the project id, and every extended attribute, security.* and
 * trusted.* included.  What describes the copy's own layout is its own:
 * the flags for extents, inline data and hashed directories, the
 * system.data attribute holding inline data, sizes, block counts and
 * the link count (hard links are counted as the copy links them).
 *
 * Extended attributes stored in their own inodes (ea_inode) are counted
 * by the inodes that reference them; sharing or copying those references
 * is not implemented, so preserve mode refuses a source tree that has
 * one, before anything changes.
 */
#include <string.h>
#include "extref_ops_int.h"

/* Flags that say how an inode is laid out, not what a user chose. */
#define RL_LAYOUT_FLAGS	(EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL | \
			 EXT2_INDEX_FL | EXT4_EA_INODE_FL | \
			 EXT4_HUGE_FILE_FL)

/* Whether the large inode's extra space reaches past FIELD. */
#define HAS_FIELD(in, field) \
	((size_t)EXT2_GOOD_OLD_INODE_SIZE + (in)->i_extra_isize >= \
	 offsetof(struct ext2_inode_large, field) + sizeof((in)->field))

static errcode_t read_large(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode_large **in)
{
	int sz = EXT2_INODE_SIZE(fs->super);
	errcode_t err = ext2fs_get_memzero(sz, in);

	if (!err)
		err = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)*in,
					     sz);
	if (!err && sz == EXT2_GOOD_OLD_INODE_SIZE)
		(*in)->i_extra_isize = 0;
	return err;
}

/* Whether an entry in [p, end) keeps its value in an inode (ea_inode);
 * zero tests only, so the bytes' order does not matter. */
static int entries_use_ea_inode(const char *p, const char *end)
{
	const struct ext2_ext_attr_entry *e;

	while (p + sizeof(*e) <= end) {
		e = (const struct ext2_ext_attr_entry *)p;
		if (EXT2_EXT_IS_LAST_ENTRY(e))
			break;
		if (e->e_value_inum)
			return 1;
		p += EXT2_EXT_ATTR_LEN(e->e_name_len);
	}
	return 0;
}

/* Whether inode ino has an attribute whose value is in an ea_inode. */
static errcode_t uses_ea_inode(ext2_filsys fs, ext2_ino_t ino, int *yes)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode_large *in = NULL;
	char *blk = NULL, *p;
	blk64_t acl;
	errcode_t err;

	*yes = 0;
	err = read_large(fs, ino, &in);
	if (err)
		goto out;
	p = (char *)in + EXT2_GOOD_OLD_INODE_SIZE + in->i_extra_isize;
	if (in->i_extra_isize && p + 4 <= (char *)in + isz &&
	    ext2fs_le32_to_cpu(*(__u32 *)p) == EXT2_EXT_ATTR_MAGIC)
		*yes = entries_use_ea_inode(p + 4, (char *)in + isz);
	acl = ext2fs_file_acl_block(fs, (struct ext2_inode *)in);
	if (*yes || !acl)
		goto out;
	err = ext2fs_get_mem(fs->blocksize, &blk);
	if (!err)
		err = ext2fs_read_ext_attr3(fs, acl, blk, ino);
	if (!err)
		*yes = entries_use_ea_inode(blk +
					    sizeof(struct ext2_ext_attr_header),
					    blk + fs->blocksize);
out:
	ext2fs_free_mem(&in);
	ext2fs_free_mem(&blk);
	return err;
}

#define EA_CHECK_MAX_DEPTH	1025	/* past what a reflink copies */

static errcode_t tree_uses_ea_inode(ext2_filsys fs, ext2_ino_t ino,
				    unsigned depth)
{
	struct extref_dirlist e = { 0 };
	struct ext2_inode in;
	size_t i;
	int yes;
	errcode_t err;

	err = uses_ea_inode(fs, ino, &yes);
	if (!err && yes)
		err = EXTREF_ERR_EA_INODE;
	if (!err)
		err = ext2fs_read_inode(fs, ino, &in);
	if (err || !LINUX_S_ISDIR(in.i_mode))
		return err;
	if (depth >= EA_CHECK_MAX_DEPTH)
		return EXTREF_ERR_DIR_DEPTH;
	err = xr_dir_list(fs, ino, 0, &e);
	for (i = 0; !err && i < e.n; i++)
		err = tree_uses_ea_inode(fs, e.v[i].ino, depth + 1);
	extref_dir_list_free(&e);
	return err;
}

errcode_t xr_preserve_check(ext2_filsys fs, ext2_ino_t src)
{
	if (!ext2fs_has_feature_ea_inode(fs->super))
		return 0;
	return tree_uses_ea_inode(fs, src, 0);
}

struct xa_copy {
	struct ext2_xattr_handle	*dst;
	errcode_t			err;
};

static int copy_one(char *name, char *value, size_t len, void *data)
{
	struct xa_copy *c = data;

	if (!strcmp(name, "system.data"))	/* the source's inline data */
		return 0;
	c->err = ext2fs_xattr_set(c->dst, name, value, len);
	return c->err ? XATTR_ABORT : 0;
}

/* Every extended attribute of SRC onto DST, as stored (raw ACLs). */
static errcode_t copy_xattrs(ext2_filsys fs, ext2_ino_t src, ext2_ino_t dst)
{
	struct ext2_xattr_handle *hs = NULL;
	struct xa_copy c = { NULL, 0 };
	unsigned int raw = XATTR_HANDLE_FLAG_RAW;
	errcode_t err;

	err = ext2fs_xattrs_open(fs, src, &hs);
	if (!err)
		err = ext2fs_xattrs_open(fs, dst, &c.dst);
	if (!err)
		err = ext2fs_xattrs_flags(hs, &raw, NULL);
	if (!err)
		err = ext2fs_xattrs_flags(c.dst, &raw, NULL);
	if (!err)
		err = ext2fs_xattrs_read(hs);
	if (!err)
		err = ext2fs_xattrs_read(c.dst);	/* its own system.data */
	if (!err)
		err = ext2fs_xattrs_iterate(hs, copy_one, &c);
	if (!err)
		err = c.err;
	if (hs)
		ext2fs_xattrs_close(&hs);
	if (c.dst)
		ext2fs_xattrs_close(&c.dst);
	return err;
}

/* Mode, owner, times, user flags and project id of s onto d. */
static void copy_fields(struct ext2_inode_large *d,
			const struct ext2_inode_large *s)
{
	d->i_mode = s->i_mode;
	xr_set_owner((struct ext2_inode *)d, inode_uid(*s), inode_gid(*s));
	d->i_atime = s->i_atime;
	d->i_mtime = s->i_mtime;
	d->i_ctime = s->i_ctime;
	d->i_flags = (d->i_flags & RL_LAYOUT_FLAGS) |
		     (s->i_flags & ~RL_LAYOUT_FLAGS);
	if (HAS_FIELD(d, i_ctime_extra) && HAS_FIELD(s, i_ctime_extra))
		d->i_ctime_extra = s->i_ctime_extra;
	if (HAS_FIELD(d, i_mtime_extra) && HAS_FIELD(s, i_mtime_extra))
		d->i_mtime_extra = s->i_mtime_extra;
	if (HAS_FIELD(d, i_atime_extra) && HAS_FIELD(s, i_atime_extra))
		d->i_atime_extra = s->i_atime_extra;
	if (HAS_FIELD(d, i_crtime) && HAS_FIELD(s, i_crtime))
		d->i_crtime = s->i_crtime;
	if (HAS_FIELD(d, i_crtime_extra) && HAS_FIELD(s, i_crtime_extra))
		d->i_crtime_extra = s->i_crtime_extra;
	if (HAS_FIELD(d, i_projid))
		d->i_projid = HAS_FIELD(s, i_projid) ? s->i_projid : 0;
}


/*
 * Make DST (a new inode of the same type) a snapshot of SRC: its
 * extended attributes first (writing them may rewrite the inode), then
 * the fields, written last so that nothing changes the times after.
 */
errcode_t xr_meta_copy(ext2_filsys fs, ext2_ino_t src, ext2_ino_t dst)
{
	struct ext2_inode_large *s = NULL, *d = NULL;
	errcode_t err;

	err = copy_xattrs(fs, src, dst);
	if (!err)
		err = read_large(fs, src, &s);
	if (!err)
		err = read_large(fs, dst, &d);
	if (!err) {
		copy_fields(d, s);
		err = ext2fs_write_inode_full(fs, dst, (struct ext2_inode *)d,
					      EXT2_INODE_SIZE(fs->super));
	}
	ext2fs_free_mem(&s);
	ext2fs_free_mem(&d);
	return err;
}
