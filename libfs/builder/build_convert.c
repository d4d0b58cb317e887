/*
 * build_convert.c --- extref_build_convert: an existing ext4 image made
 * an extref image in place, its data shared with dedupe, in one walk
 * under the image's write lock.
 *
 * The walk: the lock; an undo file an interrupted run left refused
 * (convert_left.c: the user applies or drops it); the image opened once,
 * for writing, through the undo io manager for a file (every block saved
 * in the undo file before its first write: a failed run is put back
 * whole by stock e2undo, a finished one drops the file); on that open,
 * before anything is written: a journal that needs recovery replayed
 * (then the image opened again), the caller's check (stock e2fsck -fn, a
 * reader beside us), the group descriptors' checksums, every refusal of
 * the conversion; then converted, or adopted (an image with shared_blocks
 * whose tree was never built, as Android's e2fsdroid leaves it: the tree
 * built from its sharing by the checker, extref_fsck_adopt), and shared,
 * and closed; the freed blocks punched out (punch.c reads the closed
 * image once more to punch only what is free on disk).
 */
#include <unistd.h>

#include "extref_fsck.h"
#include "image/xr_image.h"
#include "tree/extref_int.h"
#include "build_int.h"

static void say(const struct extref_build_convert *c, int what,
		unsigned int n)
{
	if (c->note)
		c->note(what, n, c->priv);
}

/*
 * The undo io manager sets itself up at its first write: the block
 * holding the superblock written back as it is.
 */
static errcode_t undo_first_write(ext2_filsys fs)
{
	blk64_t b = fs->super->s_first_data_block;
	char *buf;
	errcode_t err;

	err = ext2fs_get_mem(fs->blocksize, &buf);
	if (err)
		return err;
	err = io_channel_read_blk64(fs->io, b, 1, buf);
	if (!err) {
		undo_leak_off();
		err = io_channel_write_blk64(fs->io, b, 1, buf);
		undo_leak_on();
	}
	ext2fs_free_mem(&buf);
	return err;
}

/* The image file through e2fsprogs' undo io manager, over the
 * library's (nothing written yet: the manager saves a block at its
 * first write); a block device as usual. */
static errcode_t open_raw(const char *image, struct extref_build_convert *c,
			  ext2_filsys *fs)
{
	int flags = EXT2_FLAG_RW | EXT2_FLAG_64BITS;
	errcode_t err;

	*fs = NULL;
	if (!c->undo_file)
		return ext2fs_open2(image, NULL, flags | EXT2_FLAG_EXCLUSIVE,
				    0, 0, unix_io_manager, fs);
	unlink(c->undo_file);
	err = set_undo_io_backing_manager(extref_io_manager());
	if (!err) {
		/* a copy of the name is kept in a static it overwrites (and
		 * leaks) at the next call */
		undo_leak_off();
		err = set_undo_io_backup_file((char *)c->undo_file);
		undo_leak_on();
	}
	if (!err)
		err = ext2fs_open2(image, NULL, flags, 0, 0, undo_io_manager,
				   fs);
	if (err && c->undo_file)
		unlink(c->undo_file);
	return err;
}

/* Closed unwritten: the undo file, empty, goes too. */
static void close_raw(struct extref_build_convert *c, ext2_filsys fs)
{
	if (fs)
		ext2fs_free(fs);
	if (c->undo_file)
		unlink(c->undo_file);
}

/* The first group whose descriptor's checksum is wrong, or -1. */
static int bad_desc(ext2_filsys fs)
{
	for (dgrp_t g = 0; g < fs->group_desc_count; g++)
		if (!ext2fs_group_desc_csum_verify(fs, g))
			return (int)g;
	return -1;
}

/*
 * What the conversion would refuse, found before its first write: an
 * image without shared_blocks is converted (extref_convert's refusals);
 * one with it is adopted when its tree was never built and the checker
 * finds nothing else wrong (extref_fsck_adoptable: EXTREF_ERR_ALREADY
 * for an extref image).
 */
static errcode_t refusal(ext2_filsys fs, int *adopt)
{
	*adopt = ext2fs_has_feature_shared_blocks(fs->super);
	return *adopt ? extref_fsck_adoptable(fs, NULL) : xr_convert_check(fs);
}

/*
 * The one open, checked before anything is written: a journal that
 * needs recovery is replayed first (and the image opened again), the
 * caller's check runs, the descriptors' checksums are verified, the
 * conversion's refusals are made.  An image libext2fs cannot open is
 * looked at read-only for a descriptor whose checksum fails, after the
 * caller's check has said its word.
 */
static errcode_t open_checked(const char *image,
			      struct extref_build_convert *c,
			      ext2_filsys *fs, int *step, int *adopt)
{
	int dirty, bad = -1;
	errcode_t err, cerr;

	*step = EXTREF_STEP_CHECK;
	err = open_raw(image, c, fs);
	if (!err && ext2fs_has_feature_journal_needs_recovery((*fs)->super)) {
		close_raw(c, *fs);
		*step = EXTREF_STEP_REPLAY;
		err = xr_build_replay(image, c->note, c->priv);
		if (err)
			return err;
		*step = EXTREF_STEP_CHECK;
		err = open_raw(image, c, fs);
	}
	cerr = c->check ? c->check(image, c->priv) : 0;
	if (err && !cerr && !xr_build_look(image, &dirty, &bad) && bad >= 0)
		err = EXTREF_ERR_DESC_CSUM;
	if (!err && !cerr)
		bad = bad_desc(*fs);
	if (!err && !cerr && bad >= 0)
		err = EXTREF_ERR_DESC_CSUM;
	c->bad_group = bad;
	if (!err && !cerr)
		cerr = refusal(*fs, adopt);
	if (cerr || err) {
		close_raw(c, err ? NULL : *fs);
		*fs = NULL;
		return cerr ? cerr : err;
	}
	*step = EXTREF_STEP_WORK;
	if (c->undo_file) {
		err = undo_first_write(*fs);
		if (err) {
			close_raw(c, *fs);
			return err;
		}
		c->undo_made = 1;
	}
	return 0;
}

/* The undo file's end: the run is kept. */
static void undo_done(struct extref_build_convert *c)
{
	if (c->undo_made)
		unlink(c->undo_file);
	c->undo_made = 0;
}

/* No dedupe: converted, closed. */
static errcode_t convert_only(ext2_filsys fs,
			      const struct extref_build_opts *o,
			      struct extref_build_convert *c, int *step)
{
	errcode_t err;

	xr_build_clock(fs, o);
	err = extref_convert(fs);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	*step = EXTREF_STEP_WRITE;
	err = ext2fs_close_free(&fs);
	if (!err) {
		undo_done(c);
		say(c, EXTREF_NOTE_CONVERTED, 0);
	}
	return err;
}

/*
 * Converted (adopted: already done), the tree loaded (verified: no block
 * may be shared yet but an adopted image's), and the sharing, all inside
 * the caller's transaction.
 */
static errcode_t convert_share(extref_fs_t xfs,
			       const struct extref_build_opts *o, int mode,
			       int adopt)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct extref_dedupe_stats st;
	errcode_t err;

	xr_build_clock(fs, o);
	err = adopt ? 0 : extref_convert(fs);
	if (err)
		return err;
	if (o && o->progress)
		o->progress("checking mappings", 0, 0, o->priv);
	err = extref_fs_load_tree(xfs);
	return err ? err : extref_dedupe_fs2(xfs, mode,
					     o ? o->progress : NULL,
					     o ? o->priv : NULL, &st);
}

/* Converted and shared in the journal's transactions, the first holding
 * the conversion (split where the sharing outgrows it). */
static errcode_t share(extref_fs_t xfs, const struct extref_build_opts *o,
		       struct extref_build_convert *c,
		       struct xr_punch_list *pl, int adopt)
{
	ext2fs_block_bitmap before = NULL;
	errcode_t err;

	err = xr_punch_snapshot(extref_fs_ext2(xfs), &before);
	if (!err)
		say(c, EXTREF_NOTE_WRITING, extref_fs_journaled(xfs) ? 1 : 0);
	if (!err)
		err = extref_tx_begin2(xfs, EXTREF_TX_SPLIT);
	if (!err)
		err = extref_tx_end(xfs, convert_share(xfs, o, c->dedupe,
							adopt));
	if (!err)
		return xr_punch_plan(extref_fs_ext2(xfs), before, pl);
	if (before)
		ext2fs_free_block_bitmap(before);
	return err;
}

/*
 * Adopted: the tree built from the sharing the image holds (the
 * checker's repair of a missing tree, in its own transactions).
 */
static errcode_t adopt_tree(extref_fs_t xfs, const struct extref_build_opts *o,
			    struct extref_build_convert *c)
{
	say(c, EXTREF_NOTE_WRITING, extref_fs_journaled(xfs) ? 1 : 0);
	xr_build_clock(extref_fs_ext2(xfs), o);
	return extref_fsck_adopt(extref_fs_ext2(xfs), NULL);
}

/* Adopted or converted, and shared (dedupe), through the transaction
 * layer; the freed blocks punched out. */
static errcode_t convert_dedupe(const char *image, ext2_filsys fs,
				const struct extref_build_opts *o,
				struct extref_build_convert *c, int *step,
				int adopt)
{
	struct xr_punch_list pl = { NULL, 0, 0, 0 };
	extref_fs_t xfs = NULL;
	errcode_t err;

	/* wrapped (no tree yet) under our lock */
	err = xr_fs_wrap_held(fs, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE, &xfs,
			      NULL);
	if (err) {
		ext2fs_free(fs);	/* only the superblock, as it was */
		undo_done(c);
		return err;
	}
	if (!extref_fs_journaled(xfs) && c->dedupe != EXTREF_DEDUPE_NONE)
		say(c, EXTREF_NOTE_NO_JOURNAL, 0);
	err = adopt ? adopt_tree(xfs, o, c) : 0;
	if (!err && c->dedupe != EXTREF_DEDUPE_NONE)
		err = share(xfs, o, c, &pl, adopt);
	if (err) {
		say(c, EXTREF_NOTE_WRITTEN, 0);
		extref_fs_abort(xfs);
		xr_punch_free(&pl);
		return err;
	}
	*step = EXTREF_STEP_WRITE;
	err = extref_fs_close(xfs);
	say(c, EXTREF_NOTE_WRITTEN, 0);
	if (!err) {
		undo_done(c);
		say(c, EXTREF_NOTE_CONVERTED, adopt);
		*step = EXTREF_STEP_PUNCH;
		err = xr_punch_apply(image, &pl, &c->punched);
	}
	xr_punch_free(&pl);
	return err;
}

errcode_t extref_build_convert(const char *image,
			       const struct extref_build_opts *o,
			       struct extref_build_convert *c, int *step)
{
	extref_image_lock_t lock;
	ext2_filsys fs;
	int dummy, adopt = 0;
	errcode_t err;

	if (!step)
		step = &dummy;
	c->bad_group = -1;
	c->undo_made = 0;
	c->punched = 0;
	*step = EXTREF_STEP_LOCK;
	err = extref_image_lock(image, EXTREF_LOCK_WRITE, &lock);
	if (err)
		return err;
	/* a leftover of an interrupted run is the user's to apply or drop */
	*step = EXTREF_STEP_CHECK;
	err = c->undo_file && xr_undo_left(c->undo_file) ?
	      EXTREF_ERR_CONVERT_LEFT : 0;
	if (!err)
		err = open_checked(image, c, &fs, step, &adopt);
	if (!err && (adopt || c->dedupe != EXTREF_DEDUPE_NONE))
		err = convert_dedupe(image, fs, o, c, step, adopt);
	else if (!err)
		err = convert_only(fs, o, c, step);
	extref_image_unlock(lock);
	return err;
}
