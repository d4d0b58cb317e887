/*
 * open_proof.c --- how a read-write open trusted the tree.
 *
 * usage: open_proof IMAGE [verify|nostamp]
 *
 * Opens IMAGE read-write with EXTREF_OPEN_STAMP (and EXTREF_OPEN_VERIFY
 * with "verify"; without EXTREF_OPEN_STAMP with "nostamp"), prints "proof: full", "proof: stamp" or "proof: none", closes.
 * Exit 0; 1 with "open_proof: MESSAGE" when the open or close fails.
 */
#include <stdio.h>
#include <string.h>
#include "extref.h"

int main(int argc, char **argv)
{
	static const char *const name[] = { "none", "full", "stamp" };
	int flags = EXTREF_OPEN_RW | EXTREF_OPEN_STAMP;
	extref_fs_t xfs;
	errcode_t err;
	int p;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "verify") &&
				     strcmp(argv[2], "nostamp"))) {
		fprintf(stderr, "usage: open_proof IMAGE [verify|nostamp]\n");
		return 2;
	}
	if (argc == 3 && !strcmp(argv[2], "verify"))
		flags |= EXTREF_OPEN_VERIFY;
	if (argc == 3 && !strcmp(argv[2], "nostamp"))
		flags &= ~EXTREF_OPEN_STAMP;
	err = extref_fs_open(argv[1], flags, &xfs, NULL);
	if (err) {
		fprintf(stderr, "open_proof: %s: %s\n", argv[1],
			error_message(err));
		return 1;
	}
	p = extref_fs_proof(xfs);
	printf("proof: %s\n", p >= 0 && p <= 2 ? name[p] : "?");
	err = extref_fs_close(xfs);
	if (err) {
		fprintf(stderr, "open_proof: %s\n", error_message(err));
		return 1;
	}
	return 0;
}
