/*
 * trusted_op.c --- one modifying operation through the library on an
 * image opened with EXTREF_OPEN_TRUSTED, so without the open-time check
 * of the tree against every mapping: the operations' own checks (a
 * corrupt extent node, a damaged tree) must still refuse before writing.
 *
 * usage: trusted_op IMAGE clone SRC SOFF DST DOFF LEN
 *        trusted_op IMAGE reflink SRC DIR NAME
 *        trusted_op IMAGE reflink_r SRC DIR NAME
 *        trusted_op IMAGE rm DIR NAME
 *
 * Paths are absolute in the image.  Exit 0 on success; 1 with
 * "trusted_op: MESSAGE" on stderr when the operation fails; 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "extref_ops.h"

static errcode_t ino_of(extref_fs_t xfs, const char *path, ext2_ino_t *ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);

	return ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, path, ino);
}

static errcode_t run(extref_fs_t xfs, int argc, char **argv)
{
	ext2_ino_t a, b, ino;
	__u64 done;
	errcode_t err;

	if (argc == 8 && !strcmp(argv[2], "clone")) {
		err = ino_of(xfs, argv[3], &a);
		if (!err)
			err = ino_of(xfs, argv[5], &b);
		if (!err)
			err = extref_clone_range(xfs, a, strtoull(argv[4], 0, 0),
						 b, strtoull(argv[6], 0, 0),
						 strtoull(argv[7], 0, 0), &done);
		return err;
	}
	if (argc == 6 && (!strcmp(argv[2], "reflink_r") ||
			  !strcmp(argv[2], "reflink"))) {
		err = ino_of(xfs, argv[3], &a);
		if (!err)
			err = ino_of(xfs, argv[4], &b);
		if (!err)
			err = extref_reflink(xfs, a, b, argv[5],
					     strcmp(argv[2], "reflink") ?
					     EXTREF_REFLINK_RECURSIVE : 0,
					     NULL, &ino);
		return err;
	}
	if (argc == 5 && !strcmp(argv[2], "rm")) {
		err = ino_of(xfs, argv[3], &a);
		if (!err)
			err = extref_unlink(xfs, a, argv[4], 0);
		return err;
	}
	fprintf(stderr, "usage: trusted_op IMAGE clone SRC SOFF DST DOFF LEN\n"
		"       trusted_op IMAGE reflink|reflink_r SRC DIR NAME\n"
		"       trusted_op IMAGE rm DIR NAME\n");
	exit(2);
}

int main(int argc, char **argv)
{
	extref_fs_t xfs;
	errcode_t err, tree_err = 0, cerr;

	if (argc < 3)
		run(NULL, 0, argv);
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW | EXTREF_OPEN_TRUSTED,
			     &xfs, &tree_err);
	if (err) {
		fprintf(stderr, "trusted_op: %s: %s\n", argv[1],
			error_message(err));
		return 1;
	}
	err = run(xfs, argc, argv);
	cerr = extref_fs_close(xfs);
	if (err || cerr) {
		fprintf(stderr, "trusted_op: %s\n", error_message(err ? err : cerr));
		return 1;
	}
	return 0;
}
