/*
 * fuzz_reflink.c --- libFuzzer target: reflink -r (a file or a whole
 * directory tree, with -p's metadata when arg1 is odd) from a damaged
 * image to a new name: every block mapped once more, every count raised.
 * arg16 picks the source, arg0 the directory the copy goes into.
 */
#include <stdio.h>
#include <string.h>
#include "fz.h"
#include "extref_ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	extref_fs_t xfs;
	const char *spath, *dpath;
	ext2_ino_t src, dir, ino;
	int flags, is_dir;

	xfs = fz_start(data, size, &img);
	if (!xfs)
		return 0;
	spath = fz_pick_path(img.arg16, &is_dir);
	dpath = fz_dirs[img.arg0 % fz_ndirs];
	src = fz_lookup(xfs, spath);
	dir = fz_lookup(xfs, dpath);
	flags = EXTREF_REFLINK_RECURSIVE |
		(img.arg1 & 1 ? EXTREF_REFLINK_PRESERVE : 0);
	if (src && dir)
		fz_report(spath, extref_reflink(xfs, src, dir, "fuzz-copy",
						flags, NULL, &ino));
	fz_report("close", extref_fs_close(xfs));
	return 0;
}
