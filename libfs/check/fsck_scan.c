/*
 * fsck_scan.c --- pass 1: every in-use inode's extent mappings, and the
 * blocks the filesystem uses for metadata.
 *
 * The inode scan reads the roots in the inodes; the files' extent blocks
 * are read after it, a tree level at a time (fsck_extents.c).  Corrupt
 * extent trees are survived: what reads is kept, the inode is reported
 * (after the scan, with its path), and the scan goes on.
 */
#include <string.h>
#include "extref_fsck_int.h"
#include "ops/extref_ops_int.h"
#include <ext2fs/ext3_extents.h>

/*
 * Record a mapping.  The same inode mapping the same blocks again right
 * after (a file cloned onto itself many times) only raises a count, so
 * that memory grows with distinct mappings.
 */
errcode_t xr_fsck_add_mapping(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			      ext2_ino_t ino)
{
	struct xr_mapping *last;
	errcode_t err;

	c->res->mappings++;
	if (c->probe)
		return xr_fsck_lean_add(c, pblk, len, ino);
	while (len) {
		__u16 part = len > XR_MAP_MAX_LEN ? XR_MAP_MAX_LEN : len;

		last = c->nmap ? &c->map[c->nmap - 1] : NULL;
		if (last && last->pblk == pblk && last->len == part &&
		    last->ino == ino && last->count < 0xffff) {
			last->count++;
			goto next;
		}
		err = xr_big_grow(&c->map, &c->capmap, c->nmap,
				  sizeof(*c->map));
		if (err)
			return err;
		c->map[c->nmap].pblk = pblk;
		c->map[c->nmap].len = part;
		c->map[c->nmap].ino = ino;
		c->map[c->nmap].count = 1;
		c->nmap++;
next:
		pblk += part;
		len -= part;
	}
	return 0;
}

errcode_t xr_fsck_add_meta(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			   ext2_ino_t ino, int kind)
{
	struct xr_meta *last = c->nmeta ? &c->meta[c->nmeta - 1] : NULL;
	errcode_t err;

	if (len == 0)
		return 0;
	if (last && last->ino == ino && (int)last->kind == kind &&
	    last->pblk + last->len == pblk) {
		last->len += len;	/* flex_bg packs bitmaps and tables */
		return 0;
	}
	err = xr_grow(&c->meta, &c->capmeta, c->nmeta, sizeof(*c->meta));
	if (err)
		return err;
	c->meta[c->nmeta].pblk = pblk;
	c->meta[c->nmeta].len = len;
	c->meta[c->nmeta].ino = ino;
	c->meta[c->nmeta].kind = kind;
	c->nmeta++;
	return 0;
}

/*
 * Inode 5's extent tree is the tree's, which a rebuild replaces when it
 * is damaged.  (A file's damaged extent tree is e2fsck's to repair:
 * fsck_extents.c reports it and keeps what reads.)
 */
static errcode_t bad_extents(struct xr_fsck *c, errcode_t why)
{
	c->tree_bad = 1;
	return xr_problem_defer(c, PR_X_INO5_BAD, "its extent tree: %s",
				error_message(why));
}

struct tree_walk {
	struct xr_fsck	*c;
	errcode_t	err;		/* the scan's own error */
};

static errcode_t scan_tree_extent(const struct ext2fs_extent *e, void *priv)
{
	struct tree_walk *w = priv;
	int leaf = (e->e_flags & EXT2_EXTENT_FLAGS_LEAF) != 0;

	if (!xr_fsck_in_fs(w->c, e->e_pblk, leaf ? e->e_len : 1))
		return EXT2_ET_EXTENT_LEAF_BAD;
	w->err = leaf ? xr_fsck_add_meta(w->c, e->e_pblk, e->e_len,
					 EXTREF_INO, XR_META_TREE) :
		 xr_fsck_add_meta(w->c, e->e_pblk, 1, EXTREF_INO,
				  XR_META_INDEX);
	return w->err ? EXTREF_ITER_STOP : 0;
}

/* Inode 5's leaf extents are tree blocks, index entries metadata. */
static errcode_t scan_tree_extents(struct xr_fsck *c, struct ext2_inode *inode)
{
	struct tree_walk w = { .c = c, .err = 0 };
	errcode_t err;

	err = xr_extent_walk(c->fs, EXTREF_INO, inode, XR_WALK_INDEX,
			     scan_tree_extent, &w);
	if (w.err)
		return w.err;
	return err ? bad_extents(c, err) : 0;
}

/*
 * Inode 5 holds no data: its blocks are the tree's.  Whatever its mode
 * and flags say, an extent header in i_block is read as the tree's
 * extent tree, so that a rebuild can give those blocks back.
 */
static errcode_t scan_tree_inode(struct xr_fsck *c, struct ext2_inode *inode)
{
	struct ext2_inode copy = *inode;
	const struct ext3_extent_header *eh = (const void *)inode->i_block;

	if (ext2fs_le16_to_cpu(eh->eh_magic) != EXT3_EXT_MAGIC)
		return 0;
	copy.i_flags |= EXT4_EXTENTS_FL;
	copy.i_mode = LINUX_S_IFREG | 0600;
	return scan_tree_extents(c, &copy);
}

struct blk_walk {
	struct xr_fsck	*c;
	ext2_ino_t	ino;
	errcode_t	err;
};

static int scan_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		      blk64_t ref_blk, int ref_offset, void *priv)
{
	struct blk_walk *w = priv;

	(void) fs; (void) ref_blk; (void) ref_offset;
	if (!xr_fsck_in_fs(w->c, *blocknr, 1))
		return 0;
	if (blockcnt < 0)
		w->err = xr_fsck_add_meta(w->c, *blocknr, 1, w->ino,
					  XR_META_INDEX);
	else
		w->err = xr_fsck_add_mapping(w->c, *blocknr, 1, w->ino);
	return w->err ? BLOCK_ABORT : 0;
}

static errcode_t scan_inode(struct xr_fsck *c, ext2_ino_t ino,
			    struct ext2_inode *inode)
{
	blk64_t acl = ext2fs_file_acl_block(c->fs, inode);
	struct blk_walk w = { c, ino, 0 };
	errcode_t err = 0;

	if (acl && xr_fsck_in_fs(c, acl, 1))
		err = xr_fsck_add_meta(c, acl, 1, ino, XR_META_XATTR);
	if (err)
		return err;
	if (ino == EXTREF_INO)
		return scan_tree_inode(c, inode);
	if (!ext2fs_inode_has_valid_blocks2(c->fs, inode))
		return 0;
	if (inode->i_flags & EXT4_EXTENTS_FL)
		return xr_fsck_extent_root(c, ino, inode);
	if (ino == EXT2_RESIZE_INO)
		return 0;	/* its blocks are the reserved GDT blocks */
	err = extref_block_iterate(c->fs, ino, BLOCK_FLAG_READ_ONLY, scan_block,
			       &w);
	if (err && !w.err)
		return xr_fsck_scan_bad(c, ino, err, 0, 0);
	return w.err;
}

static errcode_t group_meta(struct xr_fsck *c, blk64_t pblk, blk64_t len)
{
	return xr_fsck_add_meta(c, pblk, len, 0, XR_META_GROUP);
}

/* The files whose extent trees failed, once their paths can be found. */
static void report_bad(struct xr_fsck *c)
{
	char a[XR_NAME_LEN], b[XR_NAME_LEN];
	size_t i;

	for (i = 0; i < c->nbad; i++) {
		const struct xr_scan_bad *x = &c->bad[i];

		c->extents_bad = 1;
		xr_fsck_ino_name(c, x->ino, a, sizeof(a));
		if (x->why)
			xr_problem(c, PR_X_EXTENT_CORRUPT, "inode %s: %s", a,
				   error_message(x->why));
		else
			xr_problem(c, PR_X_EXTENT_CORRUPT,
				   "inode %s: extent block %llu is also a "
				   "node of inode %s", a,
				   (unsigned long long)x->blk,
				   xr_fsck_ino_name(c, x->other, b,
						    sizeof(b)));
	}
	c->nbad = 0;
}

/*
 * Superblocks, descriptors, reserved GDT, bitmaps and inode tables: each
 * kind over all groups in turn, so that those flex_bg packs together
 * become one range each.
 */
static errcode_t scan_groups(struct xr_fsck *c)
{
	ext2_filsys fs = c->fs;
	dgrp_t g, n = fs->group_desc_count;
	blk64_t super, old_desc, new_desc, start;
	blk_t used;
	errcode_t err = 0;

	for (g = 0; !err && g < n; g++) {
		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		start = ext2fs_group_first_block2(fs, g);
		if (super || g == 0)
			err = group_meta(c, start, used);
		if (!err && new_desc)
			err = group_meta(c, new_desc, 1);
	}
	for (g = 0; !err && g < n; g++)
		err = group_meta(c, ext2fs_block_bitmap_loc(fs, g), 1);
	for (g = 0; !err && g < n; g++)
		err = group_meta(c, ext2fs_inode_bitmap_loc(fs, g), 1);
	for (g = 0; !err && g < n; g++)
		err = group_meta(c, ext2fs_inode_table_loc(fs, g),
				 fs->inode_blocks_per_group);
	return err;
}

/*
 * Pass 1's progress: the inode scan's groups are the first half, the
 * extent blocks read after it the second (fsck_extents.c).
 */
static errcode_t group_done(ext2_filsys fs, ext2_inode_scan scan,
			    dgrp_t group, void *priv)
{
	struct xr_fsck *c = priv;

	(void) scan;
	xr_fsck_progress(c, 1, group + 1, 2ULL * fs->group_desc_count);
	return 0;
}

/* An orphan's i_dtime is the next orphan's number (0 at the end), never
 * a time: only such an inode is looked for on the list. */
static int kept_orphan(ext2_filsys fs, ext2_ino_t ino,
			       const struct ext2_inode *inode)
{
	return inode->i_mode && inode->i_dtime <= fs->super->s_inodes_count &&
	       fs->super->s_last_orphan && xr_orphan_on_list(fs, ino);
}

errcode_t xr_fsck_scan(struct xr_fsck *c)
{
	ext2_filsys fs = c->fs;
	ext2_inode_scan scan;
	struct ext2_inode *inode = NULL;
	ext2_ino_t ino;
	int isz = EXT2_INODE_SIZE(fs->super);
	errcode_t err;

	err = ext2fs_get_mem(isz, &inode);
	if (!err)
		err = ext2fs_open_inode_scan(fs, 0, &scan);
	if (err) {
		ext2fs_free_mem(&inode);
		return err;
	}
	ext2fs_inode_scan_flags(scan, EXT2_SF_SKIP_MISSING_ITABLE, 0);
	ext2fs_set_inode_callback(scan, group_done, c);
	while (1) {
		err = ext2fs_get_next_inode_full(scan, &ino, inode, isz);
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
			continue;
		/*
		 * An inode whose checksum fails (or that looks like garbage)
		 * is read all the same, as e2fsck's pass 1 does: skipped, its
		 * mappings would go uncounted and a rebuild would lower
		 * counts below them.  (Checksums are ignored while the
		 * checker runs, so this is the second line of defence.)
		 */
		if (err == EXT2_ET_INODE_CSUM_INVALID ||
		    err == EXT2_ET_INODE_IS_GARBAGE)
			err = 0;
		if (err || ino == 0)
			break;
		/* an inode kept open without a name (the orphan list) still
		 * holds its mappings: counted until it is released */
		if (inode->i_links_count == 0 && ino >= EXT2_FIRST_INO(fs->super)
		    && !kept_orphan(fs, ino, inode))
			continue;
		if (inode->i_dtime && ino >= EXT2_FIRST_INO(fs->super) &&
		    inode->i_links_count)
			continue;
		if (ino < EXT2_FIRST_INO(fs->super) && ino != EXT2_ROOT_INO &&
		    ino != EXTREF_INO && ino != EXT2_JOURNAL_INO &&
		    ino != EXT2_RESIZE_INO && inode->i_mode == 0)
			continue;
		c->res->inodes++;
		if (LINUX_S_ISDIR(inode->i_mode))
			err = xr_fsck_note_dir(c, ino);
		if (!err)
			err = scan_inode(c, ino, inode);
		if (err)
			break;
	}
	ext2fs_close_inode_scan(scan);
	ext2fs_free_mem(&inode);
	if (!err)
		err = xr_fsck_extent_nodes(c);
	if (!err)
		err = scan_groups(c);
	if (!err)
		report_bad(c);
	return err;
}
