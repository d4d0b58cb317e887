/*
 * convert.c --- mkfs.extref --convert: an existing ext4 image becomes an
 * extref image in place, and --dedup shares the data it already holds.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mkfs.h"
#include "extref_builder.h"
#include "extref_fsck.h"

int parse_dedup(const char *arg)
{
	if (!strcmp(arg, "none"))
		return EXTREF_DEDUPE_NONE;
	if (!strcmp(arg, "file"))
		return EXTREF_DEDUPE_FILE;
	if (!strcmp(arg, "block"))
		return EXTREF_DEDUPE_BLOCK;
	fatal("invalid --dedup mode '%s' (none, file or block)", arg);
	return 0;
}

/*
 * --dedup's mode when not given: block for a -d build (on the trees
 * measured it costs no more time than none, and stores less),
 * none for --convert (there it reads every data block of the image).
 */
int dedup_default(const struct mkfs_opts *o)
{
	return o->source && !o->update ? EXTREF_DEDUPE_BLOCK
				       : EXTREF_DEDUPE_NONE;
}

/* Not mounted, nobody else's: the lock is held until the image is closed. */
static int to_extref(const struct mkfs_opts *o)
{
	int flags = EXT2_FLAG_RW | EXT2_FLAG_64BITS;
	extref_image_lock_t lock;
	ext2_filsys fs;
	errcode_t err;

	err = extref_image_lock(o->image, EXTREF_LOCK_WRITE, &lock);
	if (err) {
		error_line("%s: %s", o->image, error_message(err));
		return 1;
	}
	if (extref_image_is_blockdev(o->image))
		err = ext2fs_open2(o->image, NULL, flags | EXT2_FLAG_EXCLUSIVE,
				   0, 0, unix_io_manager, &fs);
	else
		err = convert_undo_open(o, &fs);	/* one transaction */
	if (err) {
		extref_image_unlock(lock);
		error_line("%s: %s", o->image, error_message(err));
		return 1;
	}
	if (o->have_epoch)
		fs->now = o->epoch;
	err = extref_convert(fs);
	if (err) {
		ext2fs_free(fs);
		error_line("%s: %s", o->image, error_message(err));
	} else {
		err = ext2fs_close_free(&fs);
		if (err)
			error_line("%s: %s while writing", o->image,
				   error_message(err));
	}
	if (err)
		convert_undo_take_back(o, 1);
	else
		convert_undo_done(o);
	extref_image_unlock(lock);
	return err ? 1 : 0;
}

/*
 * --convert --dedup: the image opened (without its tree) becomes an extref
 * image, the tree is loaded (verified: no block may be shared yet), and
 * the sharing follows, all inside the caller's transaction.
 */
static errcode_t convert_open(const struct mkfs_opts *o, extref_fs_t xfs,
			      struct extref_dedupe_stats *st)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err;

	if (o->have_epoch)
		fs->now = o->epoch;
	err = extref_convert(fs);
	if (err)
		return err;
	progress_update("checking mappings", 0, 0);
	err = extref_fs_load_tree(xfs);
	return err ? err : extref_dedupe_fs2(xfs, o->dedup, progress_cb, NULL,
					     st);
}

/*
 * The user's image, stopped by a signal between two writes, is as a
 * crash leaves it: consistent for fsck.extref to repair.  Say so.
 */
static void set_interrupted_note(const struct mkfs_opts *o, int journaled)
{
	char text[2 * 4096 + 128];

	if (journaled)
		snprintf(text, sizeof(text), "%s: %s: interrupted while "
			 "deduplicating; its journal holds what was committed: "
			 "run fsck.extref -fy %s (or e2fsck -p) to replay it",
			 prog, o->image, o->image);
	else
		snprintf(text, sizeof(text), "%s: %s: interrupted while "
			 "deduplicating; run fsck.extref -fy %s to repair it",
			 prog, o->image, o->image);
	cleanup_set_note(text);
}

/*
 * --convert --dedup: the image opened through its undo file
 * (convert_undo.c) and wrapped; a block device is opened as usual.
 */
static errcode_t open_undo(const struct mkfs_opts *o, extref_fs_t *xfs)
{
	ext2_filsys fs;
	errcode_t err;

	if (extref_image_is_blockdev(o->image))
		return extref_fs_open(o->image, EXTREF_OPEN_RW |
				      EXTREF_OPEN_NO_TREE, xfs, NULL);
	err = convert_undo_open(o, &fs);
	if (err)
		return err;
	err = extref_fs_wrap(fs, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE, xfs,
			     NULL);
	if (err) {
		ext2fs_free(fs);	/* only the superblock, as it was */
		convert_undo_done(o);
	}
	return err;
}

/*
 * Share what is identical; the blocks that frees leave the image file
 * (punch.c) once the image is closed.
 */
int dedupe_image(const struct mkfs_opts *o)
{
	struct punch_list pl = { NULL, 0, 0, 0 };
	ext2fs_block_bitmap before = NULL;
	struct extref_dedupe_stats st;
	extref_fs_t xfs = NULL;
	uint64_t punched;
	errcode_t err;

	/*
	 * A new image (-d) is not synced at every commit (see extref.h),
	 * nor verified: this run made it.  A converted one came from
	 * elsewhere: its open verifies that no blocks are already shared.
	 */
	/*
	 * A new image needs no journal either: interrupted, it is
	 * unfinished whatever was written.  A converted one goes through
	 * its journal, in transactions as large as the journal holds.
	 */
	if (o->convert)
		err = open_undo(o, &xfs);
	else
		err = extref_fs_open(o->image, EXTREF_OPEN_RW |
				     EXTREF_OPEN_NOSYNC | EXTREF_OPEN_TRUSTED |
				     EXTREF_OPEN_NO_JOURNAL, &xfs, NULL);
	if (!err && o->convert && !o->quiet && !extref_fs_journaled(xfs))
		printf("%s: no journal: each deduplicated range is written "
		       "with its own flushes (slower), and a crash can leave "
		       "counts for fsck.extref to lower; tune2fs -O "
		       "has_journal adds one\n", o->image);
	if (!err)
		err = punch_snapshot(extref_fs_ext2(xfs), &before);
	if (!err && o->convert)
		set_interrupted_note(o, extref_fs_journaled(xfs));
	/* converted and shared in the journal's transactions, the first
	 * holding the conversion (split where the sharing outgrows it) */
	if (!err && o->convert)
		err = extref_tx_begin2(xfs, EXTREF_TX_SPLIT);
	if (!err && o->convert)
		err = extref_tx_end(xfs, convert_open(o, xfs, &st));
	else if (!err)
		err = extref_dedupe_fs2(xfs, o->dedup, progress_cb, NULL, &st);
	if (!err) {
		err = punch_plan(extref_fs_ext2(xfs), before, &pl);
		before = NULL;
	}
	progress_end();
	if (err)
		cleanup_set_note(NULL);
	if (before)
		ext2fs_free_block_bitmap(before);
	if (err) {
		if (xfs)
			extref_fs_abort(xfs);
		punch_free(&pl);
		error_line("%s: %s while %s", o->image, error_message(err),
			   o->convert ? "converting" : "deduplicating");
		return o->convert ? convert_undo_take_back(o, xfs != NULL) : 1;
	}
	err = extref_fs_close(xfs);
	cleanup_set_note(NULL);
	if (err) {
		punch_free(&pl);
		error_line("%s: %s while writing", o->image,
			   error_message(err));
		return o->convert ? convert_undo_take_back(o, 1) : 1;
	}
	if (o->convert) {
		convert_undo_done(o);
		if (!o->quiet)
			printf("%s: converted to an extref image\n", o->image);
	}
	err = punch_apply(o->image, &pl, &punched);
	punch_free(&pl);
	if (err) {
		error_line("%s: %s while punching the freed blocks out",
			   o->image, error_message(err));
		return 1;
	}
	return 0;
}

/*
 * A journal that needs recovery is replayed first, as e2fsck does (the
 * library's read-write open replays it): the conversion then starts from
 * the state the journal gives, not the one it overrides.
 */
int replay_first(const struct mkfs_opts *o)
{
	extref_fs_t xfs;
	ext2_filsys fs;
	errcode_t err;
	unsigned int n;
	int dirty;

	if (ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			 unix_io_manager, &fs))
		return 0;	/* the conversion's own open says why */
	dirty = ext2fs_has_feature_journal_needs_recovery(fs->super);
	ext2fs_close_free(&fs);
	if (!dirty)
		return 0;
	if (!o->quiet)		/* as e2fsck says it */
		printf("%s: recovering journal\n", o->image);
	err = extref_fs_open(o->image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			     &xfs, NULL);
	if (!err) {
		n = extref_fs_replayed(xfs);
		err = extref_fs_close(xfs);
		if (!err)
			replay_noted(n);
		if (!err && !o->quiet)
			printf("%s: journal recovered (%u transaction%s)\n",
			       o->image, n, n == 1 ? "" : "s");
	}
	if (err)
		error_line("%s: %s while replaying its journal", o->image,
			   error_message(err));
	return err ? 1 : 0;
}

/* Whether every group descriptor's checksum is right: stock e2fsck
 * 1.47.0 -fn reports a wrong one ("IGNORED") yet exits 0. */
static errcode_t check_desc_csums(const struct mkfs_opts *o, int *found,
				  dgrp_t *bad)
{
	ext2_filsys fs;
	errcode_t err;
	dgrp_t g;

	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS |
			   EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	*found = 0;
	for (g = 0; g < fs->group_desc_count && !*found; g++)
		if (!ext2fs_group_desc_csum_verify(fs, g)) {
			*bad = g;
			*found = 1;
		}
	ext2fs_close_free(&fs);
	return err;
}

/*
 * Refuse (exit) what stock e2fsck -fn calls damaged, before any write:
 * a conversion builds on the bitmaps and the block map, and a damaged
 * image's are not to be trusted (a tree could land in a block a damaged
 * inode still references).
 */
static void convert_check_clean(const struct mkfs_opts *o)
{
	dgrp_t bad = 0;
	errcode_t err;
	int found;

	if (run_e2fsck_fn(o))
		fatal("%s: e2fsck -fn finds it damaged (above): --convert "
		      "runs only on a clean filesystem; run e2fsck -fy %s "
		      "first; %s", o->image, o->image, unchanged_note());
	err = check_desc_csums(o, &found, &bad);
	if (!err && found)
		fatal("%s: group descriptor %u has a wrong checksum (e2fsck "
		      "-fn reports it): --convert runs only on a clean "
		      "filesystem; run e2fsck -fy %s first; %s", o->image,
		      (unsigned)bad, o->image, unchanged_note());
	if (err)
		fatal("%s: %s; %s", o->image, error_message(err),
		      unchanged_note());
}

int convert_image(const struct mkfs_opts *o)
{
	if (o->shrink)		/* a new image from this one (shrink.c), with
				 * --convert or alone */
		return shrink_image(o) ? 1 : o->quiet ? 0 : summary_print(o);
	if (replay_first(o))
		return 1;
	convert_check_clean(o);
	if (o->dedup != EXTREF_DEDUPE_NONE) {	/* one open for both */
		if (dedupe_image(o))
			return 1;
	} else {
		if (to_extref(o))
			return 1;
		if (!o->quiet)
			printf("%s: converted to an extref image\n",
			       o->image);
	}
	return o->quiet ? 0 : summary_print(o);
}

/* Refuse (exit) an image that is not an extref image whose counts the
 * checker core finds right: --shrink alone is for extref images, and a
 * copy must not pass for a repair nobody asked for. */
void shrink_only_check(const struct mkfs_opts *o)
{
	struct extref_fsck_opts fo;
	struct extref_fsck_result res;
	ext2_filsys fs;
	errcode_t err;

	memset(&fo, 0, sizeof(fo));
	memset(&res, 0, sizeof(res));
	fo.mode = EXTREF_FSCK_NO;
	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		fatal("%s: %s; nothing was changed", o->image,
		      error_message(err));
	if (!ext2fs_has_feature_shared_blocks(fs->super))
		err = EXTREF_ERR_NO_FEATURE;
	else
		err = extref_fsck(fs, &fo, &res);
	ext2fs_close_free(&fs);
	if (err == EXTREF_ERR_NO_FEATURE)
		fatal("%s: not an extref image: --convert --shrink converts "
		      "and shrinks an ext4 image; nothing was changed",
		      o->image);
	if (err)
		fatal("%s: %s while checking the reference counts; nothing "
		      "was changed", o->image, error_message(err));
	if (res.problems)
		fatal("%s: fsck.extref -fn finds %d problem%s in the "
		      "reference counts: run fsck.extref -fy %s first; "
		      "nothing was changed", o->image, res.problems,
		      res.problems == 1 ? "" : "s", o->image);
}
