/*
 * build_shrink.c --- extref_build_shrink_begin: the start of --shrink,
 * under the image's write lock, taken first and handed to the caller.
 *
 * The walk: the lock; one read-only look (is a replay needed); the
 * replay when it is; the caller's check (stock e2fsck -fn); then one
 * read-only open for the rest: an extref image's counts checked by the
 * checker core (--shrink alone: a copy must not pass for a repair nobody
 * asked for), stable_inodes refused, and what the copy keeps of the
 * image (block and inode size, UUID, label, hash seed, features) read.
 * After each open by name, the name must still be the locked file
 * (extref_image_lock_same: same st_dev and st_ino), else
 * EXTREF_ERR_IMAGE_REPLACED.
 */
#include <string.h>

#include "extref_fsck.h"
#include "build_int.h"

/* --shrink alone: an extref image whose counts the checker core finds
 * right. */
static errcode_t counts_right(ext2_filsys fs, struct extref_build_shrink *s,
			      int *step)
{
	struct extref_fsck_opts fo;
	struct extref_fsck_result res;
	errcode_t err;

	if (!ext2fs_has_feature_shared_blocks(fs->super))
		return EXTREF_ERR_NO_FEATURE;
	memset(&fo, 0, sizeof(fo));
	memset(&res, 0, sizeof(res));
	fo.mode = EXTREF_FSCK_NO;
	*step = EXTREF_STEP_WORK;	/* the core's own failure */
	err = extref_fsck(fs, &fo, &res);
	if (err)
		return err;
	*step = EXTREF_STEP_CHECK;
	s->problems = res.problems;
	return res.problems ? EXTREF_ERR_UNTRUSTED : 0;
}

/* What the copy keeps of the image. */
static void keep_of(ext2_filsys fs, struct extref_build_shrink *s)
{
	struct ext2_super_block *sb = fs->super;
	struct extref_image_info *i = &s->info;

	i->blocks = ext2fs_blocks_count(sb);
	i->blocksize = fs->blocksize;
	i->inodes = sb->s_inodes_count;
	i->inode_size = EXT2_INODE_SIZE(sb);
	i->journal = ext2fs_has_feature_journal(sb);
	memcpy(i->uuid, sb->s_uuid, sizeof(i->uuid));
	memset(i->label, 0, sizeof(i->label));
	memcpy(i->label, sb->s_volume_name, EXT2_LABEL_LEN);
	s->features[0] = sb->s_feature_compat;
	s->features[1] = sb->s_feature_incompat;
	s->features[2] = sb->s_feature_ro_compat;
	memcpy(s->hash_seed, sb->s_hash_seed, sizeof(s->hash_seed));
}

/* The one read-only open after the check. */
static errcode_t inspect(const char *image, struct extref_build_shrink *s,
			 int *step)
{
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open2(image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	if (!s->convert)
		err = counts_right(fs, s, step);
	if (!err && ext2fs_has_feature_stable_inodes(fs->super)) {
		s->stable_inodes = 1;
		err = EXT2_ET_UNSUPP_FEATURE;
	}
	if (!err)
		keep_of(fs, s);
	ext2fs_close_free(&fs);
	return err;
}

/* Nothing written but the replay: the look, the replay, the check. */
static errcode_t checks(const char *image, struct extref_build_shrink *s,
			int *step)
{
	int dirty = 0, bad;
	errcode_t err;

	*step = EXTREF_STEP_CHECK;
	/* an image libext2fs cannot open: the check and inspect say why */
	if (!xr_build_look(image, &dirty, &bad) && dirty) {
		*step = EXTREF_STEP_REPLAY;
		err = xr_build_replay(image, s->note, s->priv);
		if (!err)
			err = extref_image_lock_same(s->lock, image);
		if (err)
			return err;
		*step = EXTREF_STEP_CHECK;
	}
	if (s->check) {
		err = s->check(image, s->priv);
		if (!err)
			err = extref_image_lock_same(s->lock, image);
		if (err)
			return err;
	}
	err = inspect(image, s, step);
	if (!err)
		err = extref_image_lock_same(s->lock, image);
	return err;
}

errcode_t extref_build_shrink_begin(const char *image,
				    struct extref_build_shrink *s, int *step)
{
	int dummy;
	errcode_t err;

	if (!step)
		step = &dummy;
	s->lock = NULL;
	s->problems = 0;
	s->stable_inodes = 0;
	*step = EXTREF_STEP_LOCK;
	err = extref_image_lock(image, EXTREF_LOCK_WRITE, &s->lock);
	if (err)
		return err;
	err = checks(image, s, step);
	if (err) {
		extref_image_unlock(s->lock);
		s->lock = NULL;
	}
	return err;
}
