/*
 * dedupe_scan_fail.c --- the image builder's deduplication when its inode
 * scan cannot be opened (libfs/builder/dedupe_fs.c).
 *
 * Usage: dedupe_scan_fail IMAGE   (an extref image; it is not changed)
 *
 * ext2fs_open_inode_scan refuses a filesystem with the journal_dev
 * feature: the feature is set in memory only, the stack is filled with a
 * non-zero pattern (so that a scan handle never set holds garbage, not a
 * lucky NULL), and extref_dedupe_fs must return that error without
 * touching a scan it never opened.  Prints "dedupe_scan_fail: OK" and
 * exits 0; exits 1 naming what differed (a crash before the fix).
 */
#include <stdio.h>
#include <string.h>
#include "extref.h"
#include "extref_builder.h"

/* Leave a pattern where the next calls will keep their locals. */
static void __attribute__((noinline)) paint_stack(void)
{
	volatile unsigned char junk[1 << 16];
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = 0xa5;
}

int main(int argc, char **argv)
{
	struct extref_dedupe_stats st;
	extref_fs_t xfs;
	ext2_filsys fs;
	errcode_t err;

	if (argc != 2) {
		fprintf(stderr, "usage: dedupe_scan_fail IMAGE\n");
		return 2;
	}
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, NULL);
	if (err) {
		fprintf(stderr, "dedupe_scan_fail: %s: %s\n", argv[1],
			error_message(err));
		return 2;
	}
	fs = extref_fs_ext2(xfs);
	err = ext2fs_read_bitmaps(fs);	/* which journal_dev would refuse */
	if (err) {
		fprintf(stderr, "dedupe_scan_fail: reading the bitmaps: %s\n",
			error_message(err));
		return 2;
	}
	ext2fs_set_feature_journal_dev(fs->super);	/* memory only */
	paint_stack();
	err = extref_dedupe_fs(xfs, EXTREF_DEDUPE_FILE, &st);
	ext2fs_clear_feature_journal_dev(fs->super);
	extref_fs_abort(xfs);
	if (err != EXT2_ET_EXTERNAL_JOURNAL_NOSUPP) {
		fprintf(stderr, "dedupe_scan_fail: got \"%s\", expected \"%s\"\n",
			err ? error_message(err) : "success",
			error_message(EXT2_ET_EXTERNAL_JOURNAL_NOSUPP));
		return 1;
	}
	printf("dedupe_scan_fail: OK\n");
	return 0;
}
