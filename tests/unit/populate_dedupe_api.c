/*
 * populate_dedupe_api.c --- extref_populate_dir with EXTREF_DEDUPE_BLOCK
 * through the public API: on an image whose tree already holds counts
 * it is refused (EXTREF_ERR_INO5_BUSY) before anything is written, since
 * its bulk load at the end would replace them.
 *
 * usage: populate_dedupe_api IMAGE SOURCE
 *
 * Opens IMAGE as mkfs.extref's build does (read-write, without the
 * tree), asks for the populate, and closes without a commit (the caller
 * compares the image's hash).  Prints "NAME: ok"; exit 0 when the
 * refusal came, 1 otherwise, 2 on usage.
 */
#include <stdio.h>
#include <string.h>
#include "extref_builder.h"

int main(int argc, char **argv)
{
	struct extref_populate p;
	extref_fs_t xfs;
	errcode_t err;

	if (argc != 3) {
		fprintf(stderr, "usage: %s IMAGE SOURCE\n", argv[0]);
		return 2;
	}
	initialize_xref_error_table();
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE |
			     EXTREF_OPEN_NO_JOURNAL, &xfs, NULL);
	if (err) {
		printf("open: %s\n", error_message(err));
		return 1;
	}
	memset(&p, 0, sizeof(p));
	p.dedupe = EXTREF_DEDUPE_BLOCK;
	err = extref_populate_dir(xfs, argv[2], &p);
	extref_populate_free(&p);
	extref_fs_abort(xfs);
	if (err != EXTREF_ERR_INO5_BUSY) {
		printf("refused: got %s (%ld)\n", error_message(err),
		       (long)err);
		return 1;
	}
	printf("refused: ok\n");
	return 0;
}
