/*
 * convert.c --- mkfs.extref --convert: an existing ext4 image becomes an
 * extref image in place, and --dedup shares the data it already holds.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mkfs.h"
#include "extref_ops.h"

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
		flags |= EXT2_FLAG_EXCLUSIVE;
	err = ext2fs_open2(o->image, NULL, flags, 0, 0, unix_io_manager, &fs);
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
		extref_image_unlock(lock);
		error_line("%s: %s", o->image, error_message(err));
		return 1;
	}
	err = ext2fs_close_free(&fs);
	extref_image_unlock(lock);
	if (err) {
		error_line("%s: %s while writing", o->image,
			   error_message(err));
		return 1;
	}
	return 0;
}

/* On a terminal: "phase: NN%" rewritten in place. */
static void show_progress(const char *phase, __u64 done, __u64 total,
			  void *priv)
{
	(void)priv;
	if (total)
		printf("\r%-20s %3llu%%", phase,
		       (unsigned long long)(done * 100 / total));
	fflush(stdout);
}

int dedupe_image(const struct mkfs_opts *o)
{
	int tty = !o->quiet && isatty(1);
	struct extref_dedupe_stats st;
	extref_fs_t xfs = NULL;
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
	err = extref_fs_open(o->image, EXTREF_OPEN_RW | (o->convert ? 0 :
			     EXTREF_OPEN_NOSYNC | EXTREF_OPEN_TRUSTED |
			     EXTREF_OPEN_NO_JOURNAL), &xfs, NULL);
	if (!err && o->convert && !o->quiet && !extref_fs_journaled(xfs))
		printf("%s: no journal: each deduplicated range is written "
		       "with its own flushes (slower), and a crash can leave "
		       "counts for fsck.extref to lower; tune2fs -O "
		       "has_journal adds one\n", o->image);
	if (!err)
		err = extref_dedupe_fs2(xfs, o->dedup,
					tty ? show_progress : NULL, NULL, &st);
	if (tty)
		printf("\r%30s\r", "");
	if (err) {
		if (xfs)
			extref_fs_abort(xfs);
		error_line("%s: %s while deduplicating", o->image,
			   error_message(err));
		return 1;
	}
	err = extref_fs_close(xfs);
	if (err) {
		error_line("%s: %s while writing", o->image,
			   error_message(err));
		return 1;
	}
	if (!o->quiet)
		printf("%s: %llu bytes of file data; %llu bytes in use before "
		       "deduplication, %llu after: %llu saved (%llu ranges)\n",
		       o->image, (unsigned long long)st.logical_bytes,
		       (unsigned long long)st.stored_before,
		       (unsigned long long)st.stored_after,
		       (unsigned long long)(st.stored_before - st.stored_after),
		       (unsigned long long)st.ranges);
	return 0;
}

int convert_image(const struct mkfs_opts *o)
{
	if (to_extref(o))
		return 1;
	if (!o->quiet)
		printf("%s: converted to an extref image\n", o->image);
	return o->dedup != EXTREF_DEDUPE_NONE ? dedupe_image(o) : 0;
}
