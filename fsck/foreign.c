/*
 * foreign.c --- writes by other tools (FORMAT.md section 11, "Foreign
 * writers"): looked for before fsck.extref writes anything itself (the
 * e2fsck it runs under -p and -y writes the superblock too), said after
 * the check, and, once the check has examined the image and left
 * nothing unrepaired, recorded as seen so that the alarm clears.
 */
#include <stdio.h>
#include "fsck.h"

/* Before anything is written: what the image's record says. */
void foreign_before(struct fsck_opts *o)
{
	ext2_filsys fs;

	o->foreign = 0;
	if (open_sb(o, &fs))
		return;		/* e2fsck says why; the check looks itself */
	o->foreign = extref_fsck_foreign(fs);
	ext2fs_close_free(&fs);
}

/*
 * After the check: say what a foreign write left (the files it may have
 * changed were reported as 0x0305 problems), and record the image as
 * examined when this run may write and left no problem unrepaired.
 */
void foreign_after(const struct fsck_opts *o, extref_fs_t xfs,
		   const struct extref_fsck_result *res)
{
	int rw = o->mode != EXTREF_FSCK_NO;

	if (res->foreign == EXTREF_FSCK_FOREIGN_SEEN && !res->foreign_files)
		printf("%s: written by another tool (or a raw edit) since "
		       "extref's last write; no file mapping a shared block "
		       "was changed after it\n", o->image);
	else if (res->foreign_files)
		printf("%s: another tool wrote %llu file%s sharing blocks "
		       "since extref's last write: %s\n", o->image,
		       (unsigned long long)res->foreign_files,
		       res->foreign_files == 1 ? "" : "s",
		       !rw ? "their data, and their sharers', may differ "
			     "from what extref left (fsck.extref -y accepts "
			     "it as it is)" :
		       res->unfixed ? "not accepted" :
		       "accepted as it is now");
	/* an image without a record (made by an older version) gets none
	 * here: the next writer of this library that proves makes it */
	if (!rw || !xfs || res->unfixed || !o->foreign)
		return;
	extref_fs_accept(xfs);
	if (res->foreign == EXTREF_FSCK_FOREIGN_SEEN)
		printf("%s: the image's state is recorded as examined\n",
		       o->image);
}
