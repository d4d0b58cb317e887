/*
 * fuzz_clone.c --- libFuzzer target: clone_range between two files of a
 * damaged image (the destination's mappings, the tree, the bitmaps may
 * all be corrupt), then commit and close as debugfs.extref does.
 * arg16 picks the files and the length (0 to 3 blocks, 0: to the
 * source's end), arg0 the source offset (0 to 3 blocks), arg1 the
 * destination's (0 to 23 blocks: it may grow).
 */
#include "fz.h"
#include "extref_ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	extref_fs_t xfs;
	ext2_ino_t src, dst;
	__u64 done;

	xfs = fz_start(data, size, &img);
	if (!xfs)
		return 0;
	src = fz_lookup(xfs, fz_files[(img.arg16 & 0xf) % fz_nfiles]);
	dst = fz_lookup(xfs, fz_files[(img.arg16 >> 4 & 0xf) % fz_nfiles]);
	if (src && dst)
		fz_report("clone_range", extref_clone_range(xfs, src,
				(__u64)(img.arg0 % 4) * img.bs, dst,
				(__u64)(img.arg1 % 24) * img.bs,
				(__u64)(img.arg16 >> 8 & 3) * img.bs, &done));
	fz_report("close", extref_fs_close(xfs));
	return 0;
}
