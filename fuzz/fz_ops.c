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

extref_fs_t fz_open_rw(const char *path)
{
	extref_fs_t xfs;
	errcode_t tree_err = 0;

	errcode_t err;

	err = extref_fs_open(path, EXTREF_OPEN_RW, &xfs, &tree_err);
	fz_report("open", err);
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

int fz_extents_readable(ext2_filsys fs, ext2_ino_t ino)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent ex;
	struct ext2_inode inode;
	errcode_t err;
	int op = EXT2_EXTENT_ROOT, ok = 0;

	if (ext2fs_read_inode(fs, ino, &inode))
		return 0;
	if (!(inode.i_flags & EXT4_EXTENTS_FL))
		return 1;
	if (ext2fs_extent_header_verify(inode.i_block, sizeof(inode.i_block)))
		return 0;
	if (ext2fs_extent_open2(fs, ino, &inode, &h))
		return 0;
	for (;;) {
		err = ext2fs_extent_get(h, op, &ex);
		op = EXT2_EXTENT_NEXT;
		if (err == EXT2_ET_EXTENT_NO_NEXT) {
			ok = 1;
			break;
		}
		if (err)
			break;
	}
	ext2fs_extent_free(h);
	return ok;
}
