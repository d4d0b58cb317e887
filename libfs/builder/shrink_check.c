/*
 * shrink_check.c --- the first part of extref_build_shrink, under the
 * image's write lock: what cannot be shrunk refused, nothing written
 * but a journal's replay.
 *
 * The image is opened read-only once, and that open serves the whole
 * walk: the replay aside (a read-write open of the library, then the
 * image opened again), the caller's check (stock e2fsck -fn, a reader
 * beside us), an extref image's counts checked by the checker core
 * (--shrink alone: a copy must not pass for a repair nobody asked
 * for), stable_inodes refused, what the copy keeps read, and then the
 * copy's source (source_img.c: its scan, its measure, its files).  An
 * image libext2fs cannot open is looked at once more (build_look.c) for
 * a journal to replay; the caller's check then says what is wrong with
 * it.  After each open by name, the name must still be the locked file.
 */
#include <string.h>
#include <sys/stat.h>

#include "extref_fsck.h"
#include "shrink_int.h"

static errcode_t same(const struct xr_shrink *s)
{
	return extref_image_lock_same(s->lock, s->image);
}

/* A symbolic link (the rename would replace the link) or a block
 * device (no file to put in its place). */
static errcode_t refuse_kind(const struct xr_shrink *s)
{
	struct stat st;

	if (!lstat(s->image, &st) && S_ISLNK(st.st_mode))
		return EXTREF_ERR_SHRINK_SYMLINK;
	if (extref_image_is_blockdev(s->image))
		return EXTREF_ERR_SHRINK_BLOCKDEV;
	return 0;
}

/* Read-only, by name: then the name must still be the locked file. */
static errcode_t open_ro(const struct xr_shrink *s, ext2_filsys *fs)
{
	errcode_t err = ext2fs_open2(s->image, NULL, EXT2_FLAG_64BITS, 0, 0,
				     unix_io_manager, fs);

	if (err) {
		*fs = NULL;
		return err;
	}
	err = same(s);
	if (err)
		ext2fs_close_free(fs);
	return err;
}

/* The one open; a journal that needs recovery replayed first. */
static errcode_t open_once(struct xr_shrink *s, ext2_filsys *fs)
{
	int dirty = 0, bad;
	errcode_t err = open_ro(s, fs);

	if (err == EXTREF_ERR_IMAGE_REPLACED)
		return err;
	if (*fs)
		dirty = ext2fs_has_feature_journal_needs_recovery((*fs)->super);
	else if (xr_build_look(s->image, &dirty, &bad))
		dirty = 0;	/* the caller's check says why */
	if (!dirty)
		return err;
	if (*fs)
		ext2fs_close_free(fs);
	err = same(s);		/* the file the look saw, or the open */
	if (err)
		return err;
	s->res->step = EXTREF_STEP_REPLAY;
	err = xr_build_replay(s->image, s->o->note, s->o->priv);
	if (!err)
		err = same(s);
	if (err)
		return err;
	s->res->step = EXTREF_STEP_CHECK;
	return open_ro(s, fs);
}

/* --shrink alone: an extref image whose counts the checker core finds
 * right. */
static errcode_t counts_right(struct xr_shrink *s, ext2_filsys fs)
{
	struct extref_fsck_opts fo;
	struct extref_fsck_result res;
	errcode_t err;

	if (!ext2fs_has_feature_shared_blocks(fs->super))
		return EXTREF_ERR_NO_FEATURE;
	memset(&fo, 0, sizeof(fo));
	memset(&res, 0, sizeof(res));
	fo.mode = EXTREF_FSCK_NO;
	s->res->step = EXTREF_STEP_WORK;	/* the core's own failure */
	err = extref_fsck(fs, &fo, &res);
	if (err)
		return err;
	s->res->step = EXTREF_STEP_CHECK;
	s->res->problems = res.problems;
	return res.problems ? EXTREF_ERR_UNTRUSTED : 0;
}

/* What the image is, after the caller's check. */
static errcode_t inspect(struct xr_shrink *s, ext2_filsys fs)
{
	errcode_t err = 0;

	if (!(s->o->flags & EXTREF_SHRINK_CONVERT))
		err = counts_right(s, fs);
	if (!err && ext2fs_has_feature_stable_inodes(fs->super)) {
		s->res->stable_inodes = 1;
		err = EXT2_ET_UNSUPP_FEATURE;
	}
	if (err)
		return err;
	xr_shrink_keep_of(fs, &s->keep);
	s->res->blocks_before = ext2fs_blocks_count(fs->super);
	s->res->blocksize = fs->blocksize;
	return 0;
}

errcode_t xr_shrink_check(struct xr_shrink *s)
{
	ext2_filsys fs = NULL;
	errcode_t err, cerr = 0;

	s->res->step = EXTREF_STEP_CHECK;
	err = refuse_kind(s);
	if (err)
		return err;
	err = open_once(s, &fs);
	if (s->res->step == EXTREF_STEP_REPLAY ||
	    err == EXTREF_ERR_IMAGE_REPLACED)
		return err;		/* fs is closed */
	if (s->o->check) {
		cerr = s->o->check(s->image, s->o->priv);
		if (!cerr)
			cerr = same(s);
	}
	if (!err && !cerr)
		err = inspect(s, fs);
	if (err || cerr) {
		if (fs)
			ext2fs_close_free(&fs);
		return cerr ? cerr : err;
	}
	err = xr_src_attach(fs, &s->src);	/* fs is src's from here */
	if (!err)
		err = xr_src_scan(&s->src);
	return err;
}
