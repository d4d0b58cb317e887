/*
 * reflink_file.c --- reflink a file inside an extref image, through the
 * installed libextref.
 *
 *	cc -o reflink_file reflink_file.c $(pkg-config --cflags --libs extref)
 *	./reflink_file disk.img /etc/services /services.copy
 *
 * The copy shares every block of the source (copy mode: the caller's
 * owner, fresh times).  Errors are printed with com_err's error_message():
 * the library registers its error table and libext2fs's when it loads.
 */
#include <stdio.h>
#include <string.h>
#include <et/com_err.h>
#include <extref_ops.h>

/* Split PATH into its parent directory's inode and the last name. */
static errcode_t parent_of(ext2_filsys fs, const char *path, char *dir,
			   size_t dirsz, const char **name, ext2_ino_t *ino)
{
	const char *slash = strrchr(path, '/');

	if (!slash || slash[1] == '\0' || (size_t)(slash - path) >= dirsz)
		return EXT2_ET_INVALID_ARGUMENT;
	memcpy(dir, path, slash - path);
	dir[slash - path] = '\0';
	*name = slash + 1;
	return ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO,
			    dir[0] ? dir : "/", ino);
}

int main(int argc, char **argv)
{
	extref_fs_t xfs = NULL;
	ext2_filsys fs;
	ext2_ino_t src, dir, ino;
	const char *name;
	char dirpath[4096];
	errcode_t err, tree_err = 0;
	const char *what;

	if (argc != 4) {
		fprintf(stderr, "usage: %s IMAGE SRC DST\n", argv[0]);
		return 2;
	}
	what = argv[1];
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, &tree_err);
	if (err)
		goto fail;
	fs = extref_fs_ext2(xfs);
	what = argv[2];
	err = ext2fs_namei(fs, EXT2_ROOT_INO, EXT2_ROOT_INO, argv[2], &src);
	if (err)
		goto fail;
	what = argv[3];
	err = parent_of(fs, argv[3], dirpath, sizeof(dirpath), &name, &dir);
	if (err)
		goto fail;
	err = extref_reflink(xfs, src, dir, name, 0, NULL, &ino);
	if (err)
		goto fail;
	err = extref_fs_close(xfs);
	xfs = NULL;
	if (err)
		goto fail;
	printf("%s: reflinked %s to %s (inode %u)\n", argv[1], argv[2],
	       argv[3], ino);
	return 0;
fail:
	fprintf(stderr, "%s: %s\n", what, error_message(err));
	if (xfs)
		extref_fs_abort(xfs);
	return 1;
}
