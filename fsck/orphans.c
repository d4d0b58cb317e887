/*
 * orphans.c --- files unlinked while open that a crash left on the
 * orphan list are released by the library (its read-write open does it
 * first, through the counts) before the stock e2fsck runs: e2fsck's
 * release_orphan_inodes would free every block of theirs in the bitmap,
 * shared ones too.  Under -n nothing is written: e2fsck -n leaves the
 * list alone.  When the library cannot release them, e2fsck is not run.
 */
#include <stdio.h>
#include "extref_ops.h"
#include "fsck.h"

int release_orphans_first(struct fsck_opts *o, extref_image_lock_t *lock)
{
	ext2_filsys fs;
	extref_fs_t xfs;
	__u32 head;
	errcode_t err, err2;

	if (o->mode == EXTREF_FSCK_NO || open_sb(o, &fs))
		return 0;
	head = fs->super->s_last_orphan;
	ext2fs_close_free(&fs);
	if (!head)
		return 0;
	extref_image_unlock(*lock);	/* the library takes it itself */
	*lock = NULL;
	err = extref_fs_open(o->image, EXTREF_OPEN_RW, &xfs, NULL);
	if (!err)
		err = extref_fs_close(xfs);
	err2 = extref_image_lock(o->image, EXTREF_LOCK_WRITE, lock);
	if (!err)
		err = err2;
	if (err) {
		com_err(prog, err, "while releasing the orphan inodes of %s "
			"(files unlinked while open); e2fsck not run: it "
			"would free their shared blocks", o->image);
		return FSCK_ERROR;
	}
	printf("%s: orphan inodes (files unlinked while open) released by "
	       "%s\n", o->image, prog);
	return FSCK_NONDESTRUCT;
}
