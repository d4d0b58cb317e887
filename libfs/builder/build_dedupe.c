/*
 * build_dedupe.c --- extref_build_dedupe: a new image, just populated,
 * deduplicated, and the blocks that frees punched out of the file.
 *
 * A new image is not synced at every commit (see extref.h), nor
 * verified: the caller made it.  It needs no journal either:
 * interrupted, it is unfinished whatever was written.  The frees reach
 * the disk at the close; only then are they punched (punch.c), so that
 * a crash never finds a file mapping a hole.
 */
#include "build_int.h"

/* Shared, and the runs it freed listed; fs left open for the close. */
static errcode_t share(extref_fs_t xfs, int mode,
		       const struct extref_build_opts *o,
		       struct extref_dedupe_stats *st,
		       struct xr_punch_list *pl)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	ext2fs_block_bitmap before = NULL;
	errcode_t err;

	err = xr_punch_snapshot(fs, &before);
	if (!err)
		err = extref_dedupe_fs2(xfs, mode, o ? o->progress : NULL,
					o ? o->priv : NULL, st);
	if (!err)
		return xr_punch_plan(fs, before, pl);	/* frees before */
	if (before)
		ext2fs_free_block_bitmap(before);
	return err;
}

errcode_t extref_build_dedupe(const char *image, int mode,
			      const struct extref_build_opts *o,
			      struct extref_dedupe_stats *st,
			      __u64 *punched, int *step)
{
	struct xr_punch_list pl = { NULL, 0, 0, 0 };
	struct extref_dedupe_stats own;
	extref_fs_t xfs = NULL;
	__u64 bytes = 0;
	int dummy;
	errcode_t err;

	if (!step)
		step = &dummy;
	*step = EXTREF_STEP_WORK;
	err = extref_fs_open(image, EXTREF_OPEN_RW | EXTREF_OPEN_NOSYNC |
			     EXTREF_OPEN_TRUSTED | EXTREF_OPEN_NO_JOURNAL,
			     &xfs, NULL);
	if (!err) {
		err = share(xfs, mode, o, st ? st : &own, &pl);
		if (err)
			extref_fs_abort(xfs);
	}
	if (!err) {
		*step = EXTREF_STEP_WRITE;
		err = extref_fs_close(xfs);
	}
	if (!err) {
		*step = EXTREF_STEP_PUNCH;
		err = xr_punch_apply(image, &pl, &bytes);
	}
	xr_punch_free(&pl);
	if (punched)
		*punched = bytes;
	return err;
}
