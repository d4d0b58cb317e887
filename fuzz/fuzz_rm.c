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
	int is_dir;

	xfs = fz_start(data, size, &img);
	if (!xfs)
		return 0;
	path = fz_pick_path(img.arg16, &is_dir);
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = 0;
	dir = fz_lookup(xfs, slash == parent ? "/" : parent);
	if (dir)
		fz_report(path, extref_unlink(xfs, dir, slash + 1,
				is_dir ? EXTREF_UNLINK_DIR : 0));
	fz_report("close", extref_fs_close(xfs));
	return 0;
}
