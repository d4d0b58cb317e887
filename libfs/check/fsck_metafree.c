/*
 * fsck_metafree.c --- the blocks a file holds that are not its data
 * (extent-tree index and leaf blocks, an extended-attribute block),
 * against the block bitmap: one the bitmap calls free would be handed
 * out by the next allocation and overwritten, as e2fsck's pass 5 says
 * ("Block bitmap differences: +N").  Found, and marked in use if fixed.
 * Group metadata and inode 5's blocks are the system zone's
 * (txn/zone.c: a writer's open refuses a tree block the bitmap calls
 * free, an allocation that meets group metadata refuses), and inode 5's
 * are read whatever its mode says, so that a rebuild gives them back:
 * e2fsck repairs the bitmap there.
 */
#include "extref_fsck_int.h"

static const char *kind_name(int kind)
{
	return kind == XR_META_XATTR ? "an extended-attribute block" :
	       "an extent-tree block";
}

/* The free blocks of [s, e) that md holds: reported, marked if fixed. */
static void check_one(struct xr_fsck *c, const struct xr_meta *md,
		      blk64_t s, blk64_t e)
{
	ext2_filsys fs = c->fs;
	char who[XR_NAME_LEN], what[48];
	blk64_t f, n;

	while (s < e &&
	       !ext2fs_find_first_zero_block_bitmap2(fs->block_map, s, e - 1,
						     &f)) {
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, f,
							e - 1, &n))
			n = e;
		if (xr_problem(c, PR_X_META_BLOCK_FREE, "%s, %s of inode %s",
			       xr_fsck_range(f, n, what, sizeof(what)),
			       kind_name(md->kind),
			       xr_fsck_ino_name(c, md->ino, who,
						sizeof(who))))
			xr_fsck_mark_in_use(c, f, n - f);
		s = n;
	}
}

/* Every file's block of the metadata list (sorted), once. */
errcode_t xr_fsck_check_meta_bitmap(struct xr_fsck *c)
{
	errcode_t err = xr_fsck_read_bitmaps(c, 1);
	blk64_t done = 0;	/* checked below here (the list is sorted) */
	size_t i;

	for (i = 0; !err && i < c->nmeta; i++) {
		const struct xr_meta *md = &c->meta[i];
		blk64_t s = md->pblk > done ? md->pblk : done;

		if (md->kind == XR_META_GROUP || md->ino == EXTREF_INO ||
		    !xr_fsck_in_fs(c, md->pblk, md->len) ||
		    s >= md->pblk + md->len)
			continue;
		check_one(c, md, s, md->pblk + md->len);
		done = md->pblk + md->len;
	}
	return err;
}
