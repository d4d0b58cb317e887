/*
 * fsck_repairs.c --- the repairs fsck.extref makes around e2fsck, called
 * as a library user would (extref_fsck.h).
 *
 * usage: fsck_repairs feature|feature_image|journal_clear IMAGE
 *
 * feature: extref_fsck_set_feature on IMAGE opened read-write without
 * its tree; feature_image: extref_fsck_set_feature_image; journal_clear:
 * extref_fsck_journal_clear with write set, answering yes, and prints
 * "found F cleared C nblocks N".  Prints "ok" or "fsck_repairs: MESSAGE"
 * (exit 1).
 */
#include <stdio.h>
#include <string.h>
#include "extref_fsck.h"

static int yes(void *priv)
{
	(void)priv;
	return 1;
}

static errcode_t feature(const char *image)
{
	extref_fs_t xfs;
	errcode_t err = extref_fs_open(image, EXTREF_OPEN_RW |
				       EXTREF_OPEN_NO_TREE, &xfs, NULL);

	if (err)
		return err;
	err = extref_fsck_set_feature(xfs);
	if (err) {
		extref_fs_abort(xfs);
		return err;
	}
	return extref_fs_close(xfs);
}

int main(int argc, char **argv)
{
	struct extref_fsck_journal_fix jf = { .write = 1, .confirm = yes };
	errcode_t err;

	if (argc != 3) {
		fprintf(stderr, "usage: fsck_repairs feature|feature_image|"
			"journal_clear IMAGE\n");
		return 2;
	}
	if (!strcmp(argv[1], "feature")) {
		err = feature(argv[2]);
	} else if (!strcmp(argv[1], "feature_image")) {
		err = extref_fsck_set_feature_image(argv[2]);
	} else if (!strcmp(argv[1], "journal_clear")) {
		err = extref_fsck_journal_clear(argv[2], &jf);
		printf("found %d cleared %d nblocks %llu\n", jf.found,
		       jf.cleared, (unsigned long long)jf.nblocks);
	} else {
		fprintf(stderr, "fsck_repairs: unknown call '%s'\n", argv[1]);
		return 2;
	}
	if (err) {
		printf("fsck_repairs: %s\n", error_message(err));
		return 1;
	}
	printf("ok\n");
	return 0;
}
