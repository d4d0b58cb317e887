/*
 * reflink_opts.c --- extref_reflink2's options and extref_label_check,
 * through the public API, on an image with a regular file /a.
 *
 * usage: reflink_opts IMAGE refuse|label
 *
 * refuse: every refused call must return its code before anything
 * changes (the image is closed without a commit; the caller compares its
 * hash).  label: reflinks /a to /labeled with a label.  Prints "NAME: ok" per check; exit 0 when all
 * pass, 1 otherwise, 2 on usage.
 */
#include <stdio.h>
#include <string.h>
#include "extref_ops.h"

static int failed;

static void expect(const char *what, errcode_t got, errcode_t want)
{
	if (got == want) {
		printf("%s: ok\n", what);
		return;
	}
	printf("%s: got %s (%ld), want %s (%ld)\n", what, error_message(got),
	       (long)got, error_message(want), (long)want);
	failed = 1;
}

static void refused(extref_fs_t xfs, ext2_ino_t a)
{
	struct extref_reflink_opts o;
	ext2_ino_t ino;
	int dummy;

	expect("NULL opts", extref_reflink2(xfs, a, EXT2_ROOT_INO, "x", NULL,
					    &ino), EXT2_ET_INVALID_ARGUMENT);
	memset(&o, 0, sizeof(o));
	o.flags = 0x100;
	expect("unknown flag", extref_reflink2(xfs, a, EXT2_ROOT_INO, "x", &o,
					       &ino), EXT2_ET_INVALID_ARGUMENT);
	memset(&o, 0, sizeof(o));
	o.reserved[2] = &dummy;
	expect("reserved set", extref_reflink2(xfs, a, EXT2_ROOT_INO, "x", &o,
					       &ino), EXT2_ET_INVALID_ARGUMENT);
	memset(&o, 0, sizeof(o));
	o.flags = EXTREF_REFLINK_PRESERVE;
	o.label = "u:r:t:s0";
	expect("label with preserve", extref_reflink2(xfs, a, EXT2_ROOT_INO,
						      "x", &o, &ino),
	       EXT2_ET_INVALID_ARGUMENT);
	o.flags = 0;
	o.label = "u:r:t";
	expect("label without level", extref_reflink2(xfs, a, EXT2_ROOT_INO,
						      "x", &o, &ino),
	       EXTREF_ERR_BAD_LABEL);
}

static void labels(void)
{
	char big[5000];

	expect("check NULL", extref_label_check(NULL),
	       EXT2_ET_INVALID_ARGUMENT);
	expect("check empty", extref_label_check(""), EXTREF_ERR_BAD_LABEL);
	expect("check control byte", extref_label_check("u:r:t:s0\t"),
	       EXTREF_ERR_BAD_LABEL);
	expect("check high byte", extref_label_check("u:r:t\xc3\xa9:s0"),
	       EXTREF_ERR_BAD_LABEL);
	expect("check space", extref_label_check("u:r:t :s0"),
	       EXTREF_ERR_BAD_LABEL);
	expect("check mls range", extref_label_check(
		       "system_u:object_r:etc_t:s0-s15:c0.c1023,c5"), 0);
	expect("check android", extref_label_check("u:object_r:system_file:s0"),
	       0);
	memset(big, 'a', sizeof(big));
	memcpy(big, "u:r:t:", 6);
	big[sizeof(big) - 1] = 0;
	expect("check too long", extref_label_check(big),
	       EXTREF_ERR_BAD_LABEL);
}

int main(int argc, char **argv)
{
	struct extref_reflink_opts o;
	extref_fs_t xfs;
	ext2_ino_t a, ino;
	errcode_t err;

	if (argc != 3) {
		fprintf(stderr, "usage: reflink_opts IMAGE refuse|label\n");
		return 2;
	}
	add_error_table(&et_xref_error_table);
	labels();
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, NULL);
	if (!err)
		err = ext2fs_namei(extref_fs_ext2(xfs), EXT2_ROOT_INO,
				   EXT2_ROOT_INO, "/a", &a);
	if (err) {
		fprintf(stderr, "reflink_opts: %s\n", error_message(err));
		return 1;
	}
	if (!strcmp(argv[2], "refuse")) {
		refused(xfs, a);
		extref_fs_abort(xfs);
		return failed;
	}
	memset(&o, 0, sizeof(o));
	o.label = "system_u:object_r:lib_t:s0";
	expect("labeled", extref_reflink2(xfs, a, EXT2_ROOT_INO, "labeled",
					  &o, &ino), 0);
	err = extref_fs_close(xfs);
	expect("close", err, 0);
	return failed;
}
