/*
 * orphans.c --- files unlinked while open that a crash left on the
 * orphan list are released by the library (its read-write open does it
 * first, through the counts) before the stock e2fsck runs: e2fsck's
 * release_orphan_inodes would free every block of theirs in the bitmap,
 * shared ones too.  Under -n nothing is written: e2fsck -n leaves the
 * list alone.  A damaged list (a loop, a number outside the inodes, an
 * inode with links on it) is cut by -y: its inodes keep no name, stock
 * e2fsck clears them and the count pass brings their counts down; -p
 * stops there (exit 4), as e2fsck -p does.  When the
 * library cannot release them otherwise, e2fsck is not run.
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
	int cut = 0;

	if (o->mode == EXTREF_FSCK_NO || open_sb(o, &fs))
		return 0;
	head = fs->super->s_last_orphan;
	ext2fs_close_free(&fs);
	if (!head)
		return 0;
	extref_image_unlock(*lock);	/* the library takes it itself */
	*lock = NULL;
	err = extref_fs_open(o->image, EXTREF_OPEN_RW, &xfs, NULL);
	if (err == EXTREF_ERR_ORPHAN_LIST && o->mode != EXTREF_FSCK_YES) {
		/* as e2fsck -p, which stops at a corrupted orphan list */
		err2 = extref_image_lock(o->image, EXTREF_LOCK_WRITE, lock);
		com_err(prog, err, "in %s; e2fsck not run: run %s -y, which "
			"cuts the list", o->image, prog);
		o->stop = 1;	/* e2fsck would free the blocks of the
				 * orphans before the damage, shared or not */
		return err2 ? FSCK_ERROR : FSCK_UNCORRECTED;
	}
	if (err == EXTREF_ERR_ORPHAN_LIST) {
		cut = 1;
		err = extref_fs_open(o->image, EXTREF_OPEN_RW |
				     EXTREF_OPEN_CUT_ORPHANS, &xfs, NULL);
	}
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
	if (cut)
		printf("%s: the orphan list (files unlinked while open) was "
		       "damaged: cut by %s; e2fsck clears its inodes\n",
		       o->image, prog);
	else
		printf("%s: orphan inodes (files unlinked while open) "
		       "released by %s\n", o->image, prog);
	return FSCK_NONDESTRUCT;
}
