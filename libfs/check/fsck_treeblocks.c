/*
 * fsck_treeblocks.c --- the blocks of inode 5 against every other owner.
 *
 * Inode 5's blocks are the tree's alone.  One that is also filesystem
 * metadata (or another inode's extent or xattr block), that another inode
 * maps as data, or that inode 5 maps twice, would be overwritten by the
 * next commit of the tree.  Stock e2fsck does not see it (shared_blocks
 * makes the cross-link legal), nor does the tree's structure check (the
 * block may lie past h_nblocks).  The repair is the rebuild: inode 5 gets
 * fresh blocks, and its old ones are freed only where no other owner
 * uses them (fsck_repair.c).
 */
#include <stdio.h>
#include "extref_fsck_int.h"

static const char *meta_kind(const struct xr_meta *m)
{
	switch (m->kind) {
	case XR_META_GROUP: return "group metadata";
	case XR_META_INDEX: return "an extent index block";
	case XR_META_XATTR: return "an extended-attribute block";
	default: return "a block of the tree";
	}
}

/* First metadata entry that can reach block b (entries sorted by start). */
static size_t first_meta(const struct xr_fsck *c, blk64_t b, blk64_t meta_max)
{
	blk64_t from = b > meta_max ? b - meta_max : 0;

	return XR_LOWER_BOUND(c->meta, c->nmeta, pblk, from);
}

static errcode_t report(struct xr_fsck *c, int code, blk64_t s, blk64_t e,
			const char *what)
{
	char range[48];

	c->tree_bad = 1;
	return xr_problem_defer(c, code, "inode %d maps %s, which is %s",
				EXTREF_INO,
				xr_fsck_range(s, e, range, sizeof(range)),
				what);
}

/* Inode 5's range m against the other metadata (i: m's index). */
static errcode_t against_meta(struct xr_fsck *c, size_t i, blk64_t meta_max)
{
	const struct xr_meta *m = &c->meta[i];
	blk64_t s = m->pblk, e = m->pblk + m->len;
	char who[XR_NAME_LEN + 64], name[XR_NAME_LEN];
	errcode_t err = 0;
	size_t k;

	for (k = first_meta(c, s, meta_max);
	     !err && k < c->nmeta && c->meta[k].pblk < e; k++) {
		const struct xr_meta *o = &c->meta[k];
		blk64_t os = o->pblk > s ? o->pblk : s;
		blk64_t oe = o->pblk + o->len < e ? o->pblk + o->len : e;

		/* A pair of inode 5's own ranges is reported once. */
		if (k == i || os >= oe || (o->ino == EXTREF_INO && k < i))
			continue;
		if (o->ino == EXTREF_INO) {
			err = report(c, PR_X_TREE_BLOCK_SHARED, os, oe,
				     "mapped twice by inode 5");
			continue;
		}
		if (o->ino)
			snprintf(who, sizeof(who), "%s of inode %s",
				 meta_kind(o), xr_fsck_ino_name(c, o->ino, name,
							       sizeof(name)));
		else
			snprintf(who, sizeof(who), "%s", meta_kind(o));
		err = report(c, PR_X_TREE_BLOCK_METADATA, os, oe, who);
	}
	return err;
}

/* Inode 5's range m against the data mappings of the other inodes. */
static errcode_t against_data(struct xr_fsck *c, const struct xr_meta *m)
{
	blk64_t s = m->pblk, e = m->pblk + m->len;
	char who[XR_NAME_LEN + 32], name[XR_NAME_LEN];
	errcode_t err = 0;
	size_t j;

	for (j = xr_fsck_first_map(c, s);
	     !err && j < c->nmap && c->map[j].pblk < e; j++) {
		const struct xr_mapping *d = &c->map[j];
		blk64_t os = d->pblk > s ? d->pblk : s;
		blk64_t oe = d->pblk + d->len < e ? d->pblk + d->len : e;

		if (os >= oe)
			continue;
		snprintf(who, sizeof(who), "data of inode %s",
			 xr_fsck_ino_name(c, d->ino, name, sizeof(name)));
		err = report(c, PR_X_TREE_BLOCK_SHARED, os, oe, who);
	}
	return err;
}

/* The mappings and metadata must be sorted (xr_fsck_sort). */
errcode_t xr_fsck_check_tree_blocks(struct xr_fsck *c)
{
	blk64_t meta_max = 1;
	errcode_t err = 0;
	size_t i;

	for (i = 0; i < c->nmeta; i++)
		if (c->meta[i].len > meta_max)
			meta_max = c->meta[i].len;
	for (i = 0; !err && i < c->nmeta; i++) {
		if (c->meta[i].ino != EXTREF_INO ||
		    (c->meta[i].kind != XR_META_TREE &&
		     c->meta[i].kind != XR_META_INDEX))
			continue;
		err = against_meta(c, i, meta_max);
		/* the probe's metadata check looked (fsck_sweep.c) */
		if (!err && !c->probe)
			err = against_data(c, &c->meta[i]);
	}
	return err;
}
