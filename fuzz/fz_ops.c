/*
 * fz_ops.c --- what the targets that change an image share: its files,
 * opening it and looking names up.
 */
#include "fz.h"

/* Regular files of the seeds (fuzz/mkseeds.py), reflinks among them. */
const char *const fz_files[] = {
	"/f0", "/f1", "/f2", "/f3", "/r0", "/r1", "/many", "/holes",
	"/d/x", "/d/y", "/d/s/z", "/d/s/w", "/e/x", "/e/s/w",
};
const unsigned int fz_nfiles = sizeof(fz_files) / sizeof(fz_files[0]);
const char *const fz_dirs[] = { "/", "/d", "/d/s", "/e", "/e/s" };
const unsigned int fz_ndirs = sizeof(fz_dirs) / sizeof(fz_dirs[0]);

/*
 * As the tools' writers open it; an image that open refuses as untrusted
 * (its counts or extent trees disagree) is then opened without that
 * check, as a library user may, so that each operation's own checks of
 * what it reads are fuzzed too.
 */
extref_fs_t fz_open_rw(const char *path)
{
	extref_fs_t xfs;
	errcode_t tree_err = 0;
	errcode_t err;

	err = extref_fs_open(path, EXTREF_OPEN_RW, &xfs, &tree_err);
	fz_report("open", err);
	if (err == EXTREF_ERR_UNTRUSTED)
		err = extref_fs_open(path, EXTREF_OPEN_RW | EXTREF_OPEN_TRUSTED,
				     &xfs, &tree_err);
	if (err)
		return NULL;
	return xfs;
}

ext2_ino_t fz_lookup(extref_fs_t xfs, const char *path)
{
	ext2_ino_t ino;

	if (ext2fs_namei(extref_fs_ext2(xfs), EXT2_ROOT_INO, EXT2_ROOT_INO,
			 path, &ino))
		return 0;
	return ino;
}

/*
 * What every target that changes an image does first: the input made an
 * image (fz_image_load), opened read-write (fz_open_rw); NULL when the
 * input is not used.
 */
extref_fs_t fz_start(const uint8_t *data, size_t size, struct fz_image *img)
{
	fz_init();
	if (fz_image_load(data, size, img))
		return NULL;
	return fz_open_rw(img->path);
}

/* A file, or a directory other than the root, chosen by sel. */
const char *fz_pick_path(unsigned int sel, int *is_dir)
{
	unsigned int pick = sel % (fz_nfiles + fz_ndirs - 1);

	*is_dir = pick >= fz_nfiles;
	return *is_dir ? fz_dirs[pick - fz_nfiles + 1] : fz_files[pick];
}
