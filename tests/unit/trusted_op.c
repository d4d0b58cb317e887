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
 *        trusted_op IMAGE mkdir DIR NAME
 *        trusted_op IMAGE write DIR NAME LEN   (a new file, LEN bytes 'n',
 *                                               one transaction)
 *        trusted_op IMAGE pwrite PATH OFF LEN  (LEN bytes 'p' at OFF)
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

/* write: a new file DIR/NAME of LEN bytes; pwrite: LEN bytes at OFF. */
static errcode_t write_op(extref_fs_t xfs, char **argv)
{
	int make = !strcmp(argv[2], "write");
	__u64 off = make ? 0 : strtoull(argv[4], 0, 0);
	__u64 len = strtoull(argv[5], 0, 0);
	ext2_ino_t ino;
	errcode_t err;
	char *buf = malloc(len ? len : 1);

	if (!buf)
		return EXT2_ET_NO_MEMORY;
	memset(buf, make ? 'n' : 'p', len);
	err = ino_of(xfs, argv[3], &ino);
	if (!err)	/* one transaction, as the debug shell's write */
		err = extref_tx_begin(xfs);
	if (err) {
		free(buf);
		return err;
	}
	if (make)
		err = extref_create_file(xfs, ino, argv[4], LINUX_S_IFREG | 0644,
					 NULL, &ino);
	if (!err)
		err = extref_pwrite(xfs, ino, off, buf, len);
	free(buf);
	return extref_tx_end(xfs, err);
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
	if (argc == 5 && !strcmp(argv[2], "mkdir")) {
		err = ino_of(xfs, argv[3], &a);
		return err ? err : extref_mkdir(xfs, a, argv[4], &ino);
	}
	if (argc == 6 && (!strcmp(argv[2], "write") ||
			  !strcmp(argv[2], "pwrite")))
		return write_op(xfs, argv);
	fprintf(stderr, "usage: trusted_op IMAGE clone SRC SOFF DST DOFF LEN\n"
		"       trusted_op IMAGE reflink|reflink_r SRC DIR NAME\n"
		"       trusted_op IMAGE rm|mkdir DIR NAME\n"
		"       trusted_op IMAGE write DIR NAME LEN\n"
		"       trusted_op IMAGE pwrite PATH OFF LEN\n");
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
