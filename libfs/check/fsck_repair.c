/*
 * fsck_repair.c --- rebuild the tree from the expected counts.
 *
 * The old tree's blocks are released (those no one else uses), inode 5
 * gets a fresh empty tree, and the expected records are bulk-loaded in
 * order through the tree layer's staging (tree/extref_stage.h) and
 * committed.  With a journal the whole is one transaction (fsck_txn.c):
 * a crash leaves the old tree or the new one.  Without, a crash in the
 * middle leaves a tree that the next run rebuilds again: nothing is
 * derived from it.
 */
#include <string.h>
#include "extref_fsck_int.h"
#include "tree/extref_stage.h"

/* Whether block b is used by anything but inode 5 (both arrays sorted). */
static int used_elsewhere(const struct xr_fsck *c, blk64_t b, blk64_t meta_max)
{
	size_t i;
	blk64_t from;

	for (i = xr_fsck_first_map(c, b); i < c->nmap && c->map[i].pblk <= b;
	     i++)
		if (b < c->map[i].pblk + c->map[i].len)
			return 1;
	from = b > meta_max ? b - meta_max : 0;
	for (i = XR_LOWER_BOUND(c->meta, c->nmeta, pblk, from); i < c->nmeta && c->meta[i].pblk <= b; i++)
		if (c->meta[i].ino != EXTREF_INO &&
		    b < c->meta[i].pblk + c->meta[i].len)
			return 1;
	return 0;
}

/*
 * Give back the old tree's blocks (as the scan found them: inode 5's
 * extents and index blocks), except any that something else uses: a
 * damaged inode 5 may point at group metadata or at data.  Then empty
 * inode 5.
 */
static errcode_t clear_ino5(struct xr_fsck *c)
{
	ext2_filsys fs = c->fs;
	struct ext2_inode inode;
	blk64_t meta_max = 1, b, freed_to = 0;
	size_t i;

	for (i = 0; i < c->nmeta; i++)
		if (c->meta[i].len > meta_max)
			meta_max = c->meta[i].len;
	/*
	 * A block inode 5 maps twice is freed once: in a transaction a
	 * freed block stays marked in use until the commit, so the bitmap
	 * cannot tell.  The ranges are sorted by start: a block below the
	 * furthest end so far lies in an earlier range.
	 */
	for (i = 0; i < c->nmeta; i++) {
		const struct xr_meta *m = &c->meta[i];

		if (m->ino != EXTREF_INO)
			continue;
		for (b = m->pblk > freed_to ? m->pblk : freed_to;
		     b < m->pblk + m->len; b++)
			if (ext2fs_test_block_bitmap2(fs->block_map, b) &&
			    !used_elsewhere(c, b, meta_max))
				ext2fs_block_alloc_stats2(fs, b, -1);
		if (m->pblk + m->len > freed_to)
			freed_to = m->pblk + m->len;
	}
	memset(&inode, 0, sizeof(inode));
	return ext2fs_write_inode(fs, EXTREF_INO, &inode);
}

struct load {
	struct xr_fsck	*c;
	xr_stage_t	st;
};

/* One record; a rebuild bigger than the journal spills as it goes. */
static errcode_t load_one(const struct extref_rec *r, void *priv)
{
	struct load *l = priv;
	errcode_t err = xr_stage_add(l->st, r);

	return err ? err : xr_fsck_tx_rebuild_point(l->c);
}

errcode_t xr_fsck_rebuild(struct xr_fsck *c)
{
	struct load l = { .c = c };
	errcode_t err;

	if ((err = xr_fsck_read_bitmaps(c, 0)))
		return err;
	err = clear_ino5(c);
	if (!err)
		err = xr_stage_begin(c->fs, &l.st);
	if (err)
		return err;
	err = xr_fsck_sweep(c, load_one, &l);
	if (!err)
		err = xr_stage_commit(l.st);
	else
		xr_stage_abort(l.st);
	c->res->changed = 1;
	return err;
}
