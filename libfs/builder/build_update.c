/*
 * build_update.c --- extref_build_update: an existing extref image
 * updated in place from a directory or one more layer; opened and
 * closed here.
 *
 * The open replays a journal that needs recovery and trusts the tree
 * from its stamp (or proves it, EXTREF_BUILD_VERIFY) before anything
 * changes; the update is the journal's transactions (split between two
 * entries when it outgrows half the journal); a failure rolls back what
 * was not committed.  A plain ext4 image, or one whose tree was never
 * built, is refused saying so (EXTREF_ERR_PLAIN_IMAGE,
 * EXTREF_ERR_TREE_UNBUILT: mkfs.extref --convert makes it one), and
 * so is an image an interrupted --convert or --grow left its undo file
 * beside (EXTREF_ERR_CONVERT_LEFT, EXTREF_ERR_GROW_LEFT: undo_left.c).  The copy's progress
 * ("updating") is given its end: the source's bytes (update_total.c).
 */
#include <string.h>

#include "extref_fsck.h"
#include "build_int.h"

static __u64 used_blocks(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);

	return ext2fs_blocks_count(fs->super) -
	       ext2fs_free_blocks_count(fs->super);
}

/* An open refused for want of a tree, said as the next step when the
 * image is no extref image yet (extref_fsck_unbuilt). */
static errcode_t why_no_tree(const char *image, errcode_t err)
{
	ext2_filsys fs;
	errcode_t kind;

	if (err != EXTREF_ERR_NO_FEATURE && err != EXTREF_ERR_NO_TREE)
		return err;
	if (ext2fs_open2(image, NULL, EXT2_FLAG_64BITS, 0, 0,
			 extref_io_manager(), &fs))
		return err;
	kind = extref_fsck_unbuilt(fs);
	ext2fs_close_free(&fs);
	return kind ? kind : err;
}

errcode_t extref_build_update(const char *image, const char *dir,
			      int layer_fd, const struct extref_build_opts *o,
			      struct extref_update *u,
			      struct extref_build_update_stats *st)
{
	struct extref_build_update_stats own;
	struct xr_update_total total;
	int verify = o && (o->flags & EXTREF_BUILD_VERIFY);
	extref_fs_t xfs = NULL;
	errcode_t err;

	if (!st)
		st = &own;
	memset(st, 0, sizeof(*st));
	/* the user puts the image back from it, or drops it, first */
	err = extref_build_left(image, 0);
	if (err)
		return err;
	err = extref_fs_open(image, EXTREF_OPEN_RW | EXTREF_OPEN_STAMP |
			     (verify ? EXTREF_OPEN_VERIFY : 0), &xfs, NULL);
	if (err)
		return why_no_tree(image, err);
	xr_build_clock(extref_fs_ext2(xfs), o);
	st->blocksize = extref_fs_ext2(xfs)->blocksize;
	st->used_before = used_blocks(xfs);
	st->free_before = ext2fs_free_blocks_count(extref_fs_ext2(xfs)->super);
	xr_update_total_begin(&total, dir, layer_fd, u);
	err = layer_fd >= 0 ? extref_update_layer(xfs, layer_fd, u) :
		extref_update_dir(xfs, dir, u);
	xr_update_total_end(&total);
	st->used_after = used_blocks(xfs);
	if (!err)
		err = extref_fs_close(xfs);
	else
		extref_fs_abort(xfs);
	return err;
}
