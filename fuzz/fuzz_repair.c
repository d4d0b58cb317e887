/*
 * fuzz_repair.c --- libFuzzer target: fsck.extref -y -f -E no_e2fsck on
 * a damaged image (the checker's repairs: the feature set, mapped blocks
 * marked in use, the tree rebuilt from the expected counts), then the
 * read-only check again on what it left, as test_fuzz.py does with the
 * tools.  Whether the second check is clean is not asserted here (a
 * file's extent tree is e2fsck's to repair, skipped); crashes, sanitizer
 * reports, leaks and hangs are what this target finds.
 */
#include "fz.h"
#include "extref_fsck.h"

static void fsck(const char *path, enum extref_fsck_mode mode)
{
	struct extref_fsck_opts o = { .mode = mode };
	struct extref_fsck_result res;
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open2(path, NULL, EXT2_FLAG_64BITS |
			   (mode == EXTREF_FSCK_NO ? 0 : EXT2_FLAG_RW),
			   0, 0, unix_io_manager, &fs);
	fz_report("open", err);
	if (err)
		return;
	fz_report(mode == EXTREF_FSCK_NO ? "check" : "repair",
		  extref_fsck(fs, &o, &res));
	fz_report("close", ext2fs_close_free(&fs));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;

	fz_init();
	if (fz_image_load(data, size, &img))
		return 0;
	fsck(img.path, EXTREF_FSCK_YES);
	fsck(img.path, EXTREF_FSCK_NO);
	return 0;
}
