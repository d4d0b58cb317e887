/*
 * fuzz_pwrite.c --- libFuzzer target: a copy-on-write pwrite into a file
 * of a damaged image (shared blocks get new ones, holes are allocated,
 * the size grows), then commit and close.  arg16 picks the file, arg0
 * the offset in bytes (below 128 KiB), arg1 the length (below 64 KiB).
 */
#include <string.h>
#include "fz.h"
#include "extref_ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[65536];
	struct fz_image img;
	extref_fs_t xfs;
	ext2_ino_t ino;

	xfs = fz_start(data, size, &img);
	if (!xfs)
		return 0;
	memset(buf, 0x5a, sizeof(buf));
	ino = fz_lookup(xfs, fz_files[img.arg16 % fz_nfiles]);
	if (ino)
		fz_report("pwrite", extref_pwrite(xfs, ino,
				img.arg0 % (128 * 1024), buf,
				img.arg1 % sizeof(buf)));
	fz_report("close", extref_fs_close(xfs));
	return 0;
}
