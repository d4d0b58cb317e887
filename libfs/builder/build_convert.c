/*
 * build_convert.c --- extref_build_convert: an existing ext4 image made
 * an extref image in place, its data shared with dedupe, in one walk
 * under the image's write lock.
 *
 * The walk: the lock; one read-only look (is a replay needed, is every
 * group descriptor's checksum right); the replay when it is (then a
 * second look); the caller's check (stock e2fsck -fn); the image opened
 * once for writing, through the undo io manager for a file (every block
 * saved in the undo file before its first write: a failed run is put
 * back whole by stock e2undo, a finished one drops the file); converted
 * (and shared) and closed; the freed blocks punched out (punch.c reads
 * the closed image once more to punch only what is free on disk).
 */
#include <unistd.h>

#include "image/xr_image.h"
#include "build_int.h"

/*
 * e2fsprogs 1.47.0's undo io manager frees the block map it makes at its
 * first write with the 32-bit bitmap call, which ignores a 64-bit map:
 * a leak of some 300 bytes a run, not ours.  Sanitized builds are told
 * to ignore the allocations of that first write, and nothing else.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define undo_leak_off()		__lsan_disable()
#define undo_leak_on()		__lsan_enable()
#else
#define undo_leak_off()		do { } while (0)
#define undo_leak_on()		do { } while (0)
#endif

static void say(const struct extref_build_convert *c, int what,
		unsigned int n)
{
	if (c->note)
		c->note(what, n, c->priv);
}

/* Nothing written yet: the replay, the caller's check, the descriptors. */
static errcode_t before_writing(const char *image,
				struct extref_build_convert *c, int *step)
{
	int dirty, bad;
	errcode_t err;

	*step = EXTREF_STEP_CHECK;
	err = xr_build_look(image, &dirty, &bad);
	if (!err && dirty) {
		*step = EXTREF_STEP_REPLAY;
		err = xr_build_replay(image, c->note, c->priv);
		*step = EXTREF_STEP_CHECK;
		if (!err)
			err = xr_build_look(image, &dirty, &bad);
	}
	/* an image libext2fs cannot open: the check says why */
	if (c->check && (!err || *step == EXTREF_STEP_CHECK)) {
		errcode_t cerr = c->check(image, c->priv);

		if (cerr)
			return cerr;
	}
	if (err)
		return err;
	c->bad_group = bad;
	return bad >= 0 ? EXTREF_ERR_DESC_CSUM : 0;
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
 * library's; a block device as usual.  c->undo_made once it exists. */
static errcode_t open_fs(const char *image, struct extref_build_convert *c,
			 ext2_filsys *fs)
{
	int flags = EXT2_FLAG_RW | EXT2_FLAG_64BITS;
	errcode_t err;

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
	if (!err) {
		err = undo_first_write(*fs);
		if (err)
			ext2fs_free(*fs);
	}
	if (err)
		unlink(c->undo_file);
	else
		c->undo_made = 1;
	return err;
}

/* The undo file's end: the run is kept. */
static void undo_done(struct extref_build_convert *c)
{
	if (c->undo_made)
		unlink(c->undo_file);
	c->undo_made = 0;
}

/* No dedupe: converted, closed. */
static errcode_t convert_only(const char *image,
			      const struct extref_build_opts *o,
			      struct extref_build_convert *c, int *step)
{
	ext2_filsys fs;
	errcode_t err;

	*step = EXTREF_STEP_WORK;
	err = open_fs(image, c, &fs);
	if (err)
		return err;
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
 * Converted, the tree loaded (verified: no block may be shared yet), and
 * the sharing, all inside the caller's transaction.
 */
static errcode_t convert_share(extref_fs_t xfs,
			       const struct extref_build_opts *o, int mode)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct extref_dedupe_stats st;
	errcode_t err;

	xr_build_clock(fs, o);
	err = extref_convert(fs);
	if (err)
		return err;
	if (o && o->progress)
		o->progress("checking mappings", 0, 0, o->priv);
	err = extref_fs_load_tree(xfs);
	return err ? err : extref_dedupe_fs2(xfs, mode,
					     o ? o->progress : NULL,
					     o ? o->priv : NULL, &st);
}

/* The image opened for writing and wrapped (no tree yet). */
static errcode_t open_xfs(const char *image, struct extref_build_convert *c,
			  extref_fs_t *xfs)
{
	ext2_filsys fs;
	errcode_t err;

	if (!c->undo_file)
		return xr_fs_open_held(image, EXTREF_OPEN_RW |
				       EXTREF_OPEN_NO_TREE, xfs, NULL);
	err = open_fs(image, c, &fs);
	if (err)
		return err;
	err = xr_fs_wrap_held(fs, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE, xfs,
			      NULL);
	if (err) {
		ext2fs_free(fs);	/* only the superblock, as it was */
		undo_done(c);
	}
	return err;
}

/* Converted and shared in the journal's transactions, the first holding
 * the conversion (split where the sharing outgrows it). */
static errcode_t share(extref_fs_t xfs, const struct extref_build_opts *o,
		       struct extref_build_convert *c,
		       struct xr_punch_list *pl)
{
	ext2fs_block_bitmap before = NULL;
	errcode_t err;

	err = xr_punch_snapshot(extref_fs_ext2(xfs), &before);
	if (!err)
		say(c, EXTREF_NOTE_WRITING, extref_fs_journaled(xfs) ? 1 : 0);
	if (!err)
		err = extref_tx_begin2(xfs, EXTREF_TX_SPLIT);
	if (!err)
		err = extref_tx_end(xfs, convert_share(xfs, o, c->dedupe));
	if (!err)
		return xr_punch_plan(extref_fs_ext2(xfs), before, pl);
	if (before)
		ext2fs_free_block_bitmap(before);
	return err;
}

static errcode_t convert_dedupe(const char *image,
				const struct extref_build_opts *o,
				struct extref_build_convert *c, int *step)
{
	struct xr_punch_list pl = { NULL, 0, 0, 0 };
	extref_fs_t xfs = NULL;
	errcode_t err;

	*step = EXTREF_STEP_WORK;
	err = open_xfs(image, c, &xfs);
	if (err)
		return err;
	if (!extref_fs_journaled(xfs))
		say(c, EXTREF_NOTE_NO_JOURNAL, 0);
	err = share(xfs, o, c, &pl);
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
		say(c, EXTREF_NOTE_CONVERTED, 0);
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
	int dummy;
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
	err = before_writing(image, c, step);
	if (!err && c->dedupe != EXTREF_DEDUPE_NONE)
		err = convert_dedupe(image, o, c, step);
	else if (!err)
		err = convert_only(image, o, c, step);
	extref_image_unlock(lock);
	return err;
}
