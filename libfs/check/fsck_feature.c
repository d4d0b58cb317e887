/*
 * fsck_feature.c --- shared_blocks set on an extref image that lost it,
 * before stock e2fsck runs (fsck.extref): without it e2fsck takes every
 * shared block for a multiply-claimed one (and under -y clones them all).
 * The feature goes to the primary superblock and, at the close, to the
 * backups (e2fsck falls back on them).  A plain image is refused: blocks
 * it maps twice are cross-links, e2fsck's to clone, never shares.
 */
#include "extref_fsck_int.h"

/* 0 when fs is an extref image, else why not. */
static errcode_t refuse_plain(ext2_filsys fs)
{
	if (extref_fsck_is_extref(fs))
		return 0;
	return ext2fs_has_feature_extents(fs->super) ? EXTREF_ERR_NO_TREE :
	       EXTREF_ERR_NO_EXTENTS;
}

static void set_feature(ext2_filsys fs)
{
	ext2fs_set_feature_shared_blocks(fs->super);
	ext2fs_mark_super_dirty(fs);
	fs->flags &= ~EXT2_FLAG_MASTER_SB_ONLY;	/* backups too, at close */
}

errcode_t extref_fsck_set_feature(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = refuse_plain(fs);
	if (!err)
		err = extref_tx_begin(xfs);
	if (err)
		return err;
	set_feature(fs);
	return extref_tx_end(xfs, 0);
}

errcode_t extref_fsck_set_feature_image(const char *image)
{
	int flags = EXT2_FLAG_RW | EXT2_FLAG_64BITS;
	ext2_filsys fs;
	errcode_t err;

	/* a block device: nobody else may open it O_EXCL meanwhile */
	if (extref_image_is_blockdev(image))
		flags |= EXT2_FLAG_EXCLUSIVE;
	err = ext2fs_open2(image, NULL, flags, 0, 0, unix_io_manager, &fs);
	if (err)
		return err;
	err = refuse_plain(fs);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	set_feature(fs);
	/* backups first, the primary last (ext2fs_flush) */
	return ext2fs_close_free(&fs);
}
