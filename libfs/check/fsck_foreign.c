/*
 * fsck_foreign.c --- pass 3, foreign writers (FORMAT.md section 11).
 *
 * A shared block freed by another tool and taken again by one newcomer,
 * or written in place through one of its sharers (fuse2fs, a kernel
 * mount with shared_blocks cleared), leaves every count right: the
 * comparison of pass 3 cannot see it.  The tree's header records the
 * superblock as the last writer of this library left it; when it differs
 * now, another tool wrote since, and the files it may have changed under
 * a share are named: every file whose ctime is later than that close and
 * that maps a block the tree records as shared.  A write that touched no
 * shared block (a new file in free space, a grown filesystem, a copy
 * made by e2image) names nothing.
 */
#include <stdio.h>
#include <string.h>
#include "extref_fsck_int.h"
#include "tree/extref_int.h"

/* The record against sb (a copy: the checker sets shared_blocks in
 * memory, which the record must not take for a change). */
static int foreign_of(ext2_filsys fs, int had_feature, struct xr_seen *s)
{
	struct ext2_super_block sb = *fs->super;
	int f, err, was = ext2fs_has_feature_shared_blocks(fs->super);
	extref_tree_t t;

	if (!had_feature)
		ext2fs_clear_feature_shared_blocks(&sb);
	/* the tree opens with the feature only: lost, it is set in memory
	 * for the look (as the checker's own set-up does) */
	ext2fs_set_feature_shared_blocks(fs->super);
	err = extref_tree_open(fs, 0, &t) != 0;
	if (!was)
		ext2fs_clear_feature_shared_blocks(fs->super);
	if (err)
		return 0;
	xr_tree_seen(t, s);
	f = !(s->flags & EXTREF_SEEN_RECORDED) ? 0 :
	    xr_seen_foreign(t, &sb) ? EXTREF_FSCK_FOREIGN_SEEN :
	    EXTREF_FSCK_FOREIGN_NONE;
	extref_tree_free(t);
	return f;
}

int extref_fsck_foreign(ext2_filsys fs)
{
	struct xr_seen s;

	return foreign_of(fs, ext2fs_has_feature_shared_blocks(fs->super), &s);
}

/*
 * The inode's ctime is later than the record's time, or is a whole
 * second in the record's second where the record says none of ours is
 * (EXTREF_SEEN_NSEC: libext2fs writers stamp whole seconds, the library
 * nanoseconds).
 */
static int changed_after(const struct ext2_inode_large *in, int large,
			 const struct xr_seen *s)
{
	__s64 sec = (__s32)in->i_ctime;
	__u32 nsec = 0;

	if (large) {
		sec += (__s64)(in->i_ctime_extra & EXT4_EPOCH_MASK) << 32;
		nsec = in->i_ctime_extra >> EXT4_EPOCH_BITS;
	}
	if (sec != (__s64)s->sec)
		return sec > (__s64)s->sec;
	return nsec > s->nsec ||
	       (large && !nsec && (s->flags & EXTREF_SEEN_NSEC));
}

/* The shared blocks a file maps: how many, and the first range. */
struct shared {
	__u64	n;
	blk64_t	s, e;
};

static errcode_t add_len(const struct extref_rec *r, void *priv)
{
	struct shared *w = priv;

	if (!w->n) {
		w->s = r->start;
		w->e = r->start + r->len;
	}
	w->n += r->len;
	return 0;
}

/* How many of the blocks ino maps the tree records as shared. */
static errcode_t shared_mapped(ext2_filsys fs, extref_tree_t t,
			       ext2_ino_t ino, struct shared *n)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent e;
	errcode_t err;
	int op = EXT2_EXTENT_ROOT;

	memset(n, 0, sizeof(*n));
	if (ext2fs_extent_open(fs, ino, &h))
		return 0;	/* an unreadable extent tree is 0x0101's */
	while (!(err = ext2fs_extent_get(h, op, &e))) {
		op = EXT2_EXTENT_NEXT;
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) || !e.e_len ||
		    (e.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT))
			continue;
		err = extref_tree_iterate(t, e.e_pblk, e.e_len, 1, add_len, n);
		if (err)
			break;
	}
	ext2fs_extent_free(h);
	return err == EXT2_ET_EXTENT_NO_NEXT || err == EXT2_ET_NO_CURRENT_NODE
	       ? 0 : err;
}

/*
 * A file the other tool may have changed: named, with its shared blocks
 * and the owners of the first range of them (its siblings, whose data
 * changed with it when it was written in place).
 */
static errcode_t name_file(struct xr_fsck *c, ext2_ino_t ino,
			   const struct shared *w)
{
	char name[XR_NAME_LEN], what[48], *who = NULL;
	errcode_t err;

	c->res->foreign_files++;
	err = xr_fsck_owners(c, w->s, w->e, 4, &who);
	if (err)
		return err;
	xr_problem(c, PR_X_FOREIGN_WRITE, "%s maps %llu shared block%s and "
		   "was changed after extref's last write; %s: mapped by %s",
		   xr_fsck_ino_name(c, ino, name, sizeof(name)),
		   (unsigned long long)w->n, w->n == 1 ? "" : "s",
		   xr_fsck_range(w->s, w->e, what, sizeof(what)), who);
	ext2fs_free_mem(&who);
	return 0;
}

/* A regular extent-mapped file of the namespace, in use. */
static int candidate(const struct xr_fsck *c, ext2_ino_t ino,
		     const struct ext2_inode *in)
{
	return ino >= EXT2_FIRST_INO(c->fs->super) && in->i_links_count &&
	       !in->i_dtime && LINUX_S_ISREG(in->i_mode) &&
	       (in->i_flags & EXT4_EXTENTS_FL);
}

static errcode_t scan(struct xr_fsck *c, extref_tree_t t,
		      const struct xr_seen *s)
{
	ext2_inode_scan sc;
	struct ext2_inode_large in;
	int isz = EXT2_INODE_SIZE(c->fs->super), large;
	ext2_ino_t ino;
	errcode_t err;
	struct shared n;

	err = ext2fs_open_inode_scan(c->fs, 0, &sc);
	if (err)
		return err;
	if (isz > (int)sizeof(in))
		isz = sizeof(in);
	while (!(err = ext2fs_get_next_inode_full(sc, &ino,
				(struct ext2_inode *)&in, isz)) && ino) {
		large = isz > EXT2_GOOD_OLD_INODE_SIZE &&
			in.i_extra_isize >= offsetof(struct ext2_inode_large,
						     i_ctime_extra) + 4 -
					    EXT2_GOOD_OLD_INODE_SIZE;
		if (!candidate(c, ino, (struct ext2_inode *)&in) ||
		    !changed_after(&in, large, s))
			continue;
		err = shared_mapped(c->fs, t, ino, &n);
		if (err)
			break;
		if (n.n && (err = name_file(c, ino, &n)))
			break;
	}
	ext2fs_close_inode_scan(sc);
	return err;
}

/*
 * The pass: nothing when the record says no other tool wrote (or there
 * is none); else the files named, each one problem (-y accepts its data
 * as it is; the front end then records the image as seen).
 */
errcode_t xr_fsck_foreign(struct xr_fsck *c)
{
	struct xr_seen s;
	extref_tree_t t;
	errcode_t err;
	int f;

	if (c->opts->foreign == EXTREF_FSCK_FOREIGN_NONE)
		return 0;	/* the caller looked before it wrote */
	f = foreign_of(c->fs, c->had_feature, &s);
	if (c->opts->foreign)
		f = f ? c->opts->foreign : 0;
	if (f != EXTREF_FSCK_FOREIGN_SEEN || !c->tree_present || c->tree_bad)
		return 0;
	c->res->foreign = f;
	err = extref_tree_open(c->fs, 0, &t);
	if (err)
		return err;
	err = scan(c, t, &s);
	extref_tree_free(t);
	return err;
}
