/*
 * tx_api.c --- the public transaction calls used out of order.
 *
 * usage: tx_api IMAGE unbalanced NAME
 *
 * Opens IMAGE read-write (journaled), calls extref_tx_end without a
 * begin and prints its result; then, in a proper begin/end pair, unlinks
 * /NAME and ends the pair with an error, which must roll the unlink back.
 * Prints "end without begin: MESSAGE" and "rollback: MESSAGE"; exit 0
 * when both calls behaved (the first refused with
 * EXT2_ET_INVALID_ARGUMENT, the second returned the error it was given),
 * 1 otherwise.
 */
#include <stdio.h>
#include <string.h>
#include "extref_ops.h"

int main(int argc, char **argv)
{
	extref_fs_t xfs;
	ext2_filsys fs;
	ext2_ino_t ino;
	errcode_t err, tree_err = 0, end_err, rb_err;

	if (argc != 4 || strcmp(argv[2], "unbalanced")) {
		fprintf(stderr, "usage: tx_api IMAGE unbalanced NAME\n");
		return 2;
	}
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, &tree_err);
	if (err) {
		fprintf(stderr, "tx_api: %s: %s\n", argv[1], error_message(err));
		return 1;
	}
	fs = extref_fs_ext2(xfs);
	end_err = extref_tx_end(xfs, 0);
	printf("end without begin: %s\n", end_err ? error_message(end_err)
						  : "success");
	err = ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, argv[3], &ino);
	if (!err)
		err = extref_tx_begin(xfs);
	if (!err) {
		err = extref_unlink(xfs, EXT2_ROOT_INO, argv[3], 0);
		rb_err = extref_tx_end(xfs, err ? err : EXTREF_ERR_RANGE);
		printf("rollback: %s\n", error_message(rb_err));
	}
	if (err)
		fprintf(stderr, "tx_api: %s\n", error_message(err));
	err = extref_fs_close(xfs) || err;
	return err || end_err != EXT2_ET_INVALID_ARGUMENT ||
	       rb_err != EXTREF_ERR_RANGE;
}
