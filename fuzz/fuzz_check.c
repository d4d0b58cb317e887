/*
 * fuzz_check.c --- libFuzzer target: open a damaged image as the tools
 * do and run the read-only checks on it: the tree's own walk
 * (extref_tree_check, or extref_check_fs when the tree does not load)
 * and the checker of fsck.extref -n (extref_fsck, every pass).
 */
#include "fz.h"
#include "extref_fsck.h"

static errcode_t count_problem(errcode_t problem, __u32 lblk,
			       const char *detail, void *priv)
{
	(void)problem; (void)lblk; (void)detail;
	++*(int *)priv;
	return 0;
}

static void tree_walk(const char *path)
{
	extref_fs_t xfs;
	errcode_t tree_err = 0;
	int problems = 0;

	if (extref_fs_open(path, EXTREF_OPEN_FORCE, &xfs, &tree_err))
		return;
	if (extref_fs_tree(xfs))
		extref_tree_check(extref_fs_tree(xfs), count_problem,
				  &problems);
	else
		extref_check_fs(extref_fs_ext2(xfs), count_problem, &problems);
	extref_fs_abort(xfs);
}

/* fsck.extref -n -f: the checker opens the tree itself. */
static void fsck_ro(const char *path)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_NO };
	struct extref_fsck_result res;
	ext2_filsys fs;

	if (ext2fs_open2(path, NULL, EXT2_FLAG_64BITS, 0, 0, unix_io_manager,
			 &fs))
		return;
	extref_fsck(fs, &o, &res);
	ext2fs_close_free(&fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;

	fz_init();
	if (fz_image_load(data, size, &img))
		return 0;
	tree_walk(img.path);
	fsck_ro(img.path);
	return 0;
}
