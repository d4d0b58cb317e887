/*
 * tree_check.c --- open an image as the tools do and check its tree.
 *
 * usage: tree_check IMAGE
 *
 * Prints one line per problem the structural check finds
 * ("problem: MESSAGE: DETAIL"), then what opening the tree read-only and
 * read-write gives ("open ro: ok" or "open ro: MESSAGE").  Exit status:
 * 0 when the check found nothing and both opens succeeded, 1 otherwise,
 * 2 when the ext4 part itself could not be opened.
 */
#include <stdio.h>
#include "extref.h"

static errcode_t report(errcode_t code, __u32 lblk, const char *detail,
		       void *priv)
{
	int *n = priv;

	(*n)++;
	printf("problem: %s: %s (lblk %u)\n", error_message(code), detail,
	       lblk);
	return 0;
}

static int try_open(const char *image, int flags, const char *name)
{
	extref_fs_t xfs;
	errcode_t err, tree_err;

	err = extref_fs_open(image, flags, &xfs, &tree_err);
	if (err) {
		printf("open %s: %s\n", name, error_message(err));
		return 1;
	}
	extref_fs_abort(xfs);
	printf("open %s: ok\n", name);
	return 0;
}

int main(int argc, char **argv)
{
	extref_fs_t xfs;
	errcode_t err, tree_err;
	int problems = 0, bad;

	if (argc != 2) {
		fprintf(stderr, "usage: %s IMAGE\n", argv[0]);
		return 2;
	}
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	err = extref_fs_open(argv[1], EXTREF_OPEN_NO_TREE, &xfs, &tree_err);
	if (err) {
		printf("open ext4: %s\n", error_message(err));
		return 2;
	}
	err = extref_check_fs(extref_fs_ext2(xfs), report, &problems);
	if (err && !problems)
		printf("check: %s\n", error_message(err));
	extref_fs_abort(xfs);
	bad = try_open(argv[1], 0, "ro");
	bad |= try_open(argv[1], EXTREF_OPEN_RW, "rw");
	return (err || problems || bad) ? 1 : 0;
}
