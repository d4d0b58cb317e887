/*
 * fuzz_rm.c --- libFuzzer target: remove a file (or an empty directory)
 * of a damaged image: the directory entry goes, and with the last link
 * every mapping is dropped through the counts and the inode freed.
 * arg16 picks the name.
 */
#include <stdlib.h>
#include <string.h>
#include "fz.h"
#include "extref_ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	extref_fs_t xfs;
	const char *path;
	char parent[64], *slash;
	ext2_ino_t dir;
	unsigned int pick;

	fz_init();
	if (fz_image_load(data, size, &img))
		return 0;
	xfs = fz_open_rw(img.path);
	if (!xfs)
		return 0;
	pick = img.arg16 % (fz_nfiles + fz_ndirs - 1);
	path = pick < fz_nfiles ? fz_files[pick]
				: fz_dirs[pick - fz_nfiles + 1];
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = 0;
	dir = fz_lookup(xfs, slash == parent ? "/" : parent);
	if (dir)
		fz_report(path, extref_unlink(xfs, dir, slash + 1,
				pick < fz_nfiles ? 0 : EXTREF_UNLINK_DIR));
	fz_report("close", extref_fs_close(xfs));
	return 0;
}
