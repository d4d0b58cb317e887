/*
 * dir_ops.c --- the library's directory calls on an image, directly:
 *
 *   dir_ops IMAGE link DIR NAME TARGET
 *	xr_link: NAME in DIR to TARGET's inode.  A name DIR already holds
 *	must be refused (EXTREF_ERR_EXISTS) with nothing written, where
 *	ext2fs_link alone adds a second entry (e2fsck: "Duplicate entry").
 *   dir_ops IMAGE index DIR
 *	xr_dx_make_indexed: a linear directory of one block made indexed;
 *	a corrupt block must be refused (EXT2_ET_DIR_CORRUPTED) without
 *	reading a name past its record, and nothing written.
 *
 * Paths are absolute in the image.  Exit 0 on success; 1 with
 * "dir_ops: MESSAGE" on stderr when the call fails; 2 on usage.
 */
#include <stdio.h>
#include <string.h>
#include "extref_ops.h"
#include "ops/extref_ops_int.h"

static errcode_t run(ext2_filsys fs, int argc, char **argv)
{
	ext2_ino_t dir, ino;
	errcode_t err;

	err = ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, argv[3], &dir);
	if (err)
		return err;
	if (argc == 4 && !strcmp(argv[2], "index"))
		return xr_dx_make_indexed(fs, dir);
	err = ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, argv[5], &ino);
	return err ? err : xr_link(fs, dir, argv[4], ino, EXT2_FT_REG_FILE);
}

int main(int argc, char **argv)
{
	extref_fs_t xfs;
	errcode_t err, tree_err = 0, cerr;

	if (!(argc == 4 && !strcmp(argv[2], "index")) &&
	    !(argc == 6 && !strcmp(argv[2], "link"))) {
		fprintf(stderr, "usage: dir_ops IMAGE link DIR NAME TARGET\n"
			"       dir_ops IMAGE index DIR\n");
		return 2;
	}
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, &tree_err);
	if (err) {
		fprintf(stderr, "dir_ops: %s: %s\n", argv[1],
			error_message(err));
		return 1;
	}
	err = run(extref_fs_ext2(xfs), argc, argv);
	cerr = extref_fs_close(xfs);
	if (err || cerr) {
		fprintf(stderr, "dir_ops: %s\n", error_message(err ? err : cerr));
		return 1;
	}
	return 0;
}
