/*
 * build_look.c --- what the walks of --convert and --shrink look at
 * before they write: whether the journal needs recovery, the group
 * descriptors' checksums; and the replay, under the walk's lock.
 */
#include "image/xr_image.h"
#include "build_int.h"

/* Whether the journal needs recovery, and the first group whose
 * descriptor's checksum is wrong (-1: none): one read-only open. */
errcode_t xr_build_look(const char *image, int *dirty, int *bad)
{
	ext2_filsys fs;
	errcode_t err;

	*dirty = 0;
	*bad = -1;
	err = ext2fs_open2(image, NULL, EXT2_FLAG_64BITS |
			   EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	*dirty = ext2fs_has_feature_journal_needs_recovery(fs->super);
	for (dgrp_t g = 0; g < fs->group_desc_count && *bad < 0; g++)
		if (!ext2fs_group_desc_csum_verify(fs, g))
			*bad = (int)g;
	ext2fs_close_free(&fs);
	return 0;
}

/* The library's read-write open replays the journal (under our lock). */
errcode_t xr_build_replay(const char *image, extref_note_func note,
			  void *priv)
{
	extref_fs_t xfs;
	unsigned int n;
	errcode_t err;

	if (note)
		note(EXTREF_NOTE_REPLAYING, 0, priv);
	err = xr_fs_open_held(image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			      &xfs, NULL);
	if (err)
		return err;
	n = extref_fs_replayed(xfs);
	err = extref_fs_close(xfs);
	if (!err && note)
		note(EXTREF_NOTE_REPLAYED, n, priv);
	return err;
}

