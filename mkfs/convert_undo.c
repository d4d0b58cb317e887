/*
 * convert_undo.c --- mkfs.extref --convert is one transaction of the
 * image file, whatever the journal's transactions inside it: every block
 * is saved, before its first write, in IMAGE.convert.e2undo (e2fsprogs'
 * undo io manager), a run that fails puts them all back with stock
 * e2undo, and one that succeeds drops the file.  What the conversion
 * cannot convert it finds before writing (extref_convert's refusals, the
 * dedupe's checks); this is for what fails after.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mkfs.h"
#include "extref.h"

/*
 * Open the image file (not a block device: its undo file could not lie
 * beside it) through e2fsprogs' undo io manager, over the library's.
 */
errcode_t convert_undo_open(const struct mkfs_opts *o, ext2_filsys *fs)
{
	const char *undo = undo_file(o, UNDO_CONVERT);
	errcode_t err;

	unlink(undo);
	err = set_undo_io_backing_manager(extref_io_manager());
	if (!err)
		err = undo_file_set(undo);
	if (!err)
		err = ext2fs_open2(o->image, NULL, EXT2_FLAG_RW |
				   EXT2_FLAG_64BITS, 0, 0, undo_io_manager,
				   fs);
	if (err)
		unlink(undo);
	return err;
}

void convert_undo_done(const struct mkfs_opts *o)
{
	unlink(undo_file(o, UNDO_CONVERT));
}

/*
 * Whether the undo file saved no block: its header (e2fsprogs' undo
 * format, "E2UNDO02" then the number of key blocks, little-endian) says
 * none.  The run then failed before writing anything to the image.
 */
static int undo_empty(const char *undo)
{
	unsigned char h[16];
	FILE *f = fopen(undo, "rb");
	int n, i;
	__u64 keys = 0;

	if (!f)
		return 0;
	n = fread(h, 1, sizeof(h), f);
	fclose(f);
	if (n != (int)sizeof(h) || memcmp(h, "E2UNDO02", 8))
		return 0;
	for (i = 15; i >= 8; i--)
		keys = keys << 8 | h[i];
	return keys == 0;
}

int convert_undo_take_back(const struct mkfs_opts *o, int opened)
{
	const char *undo = undo_file(o, UNDO_CONVERT);

	if (!opened || extref_image_is_blockdev(o->image) ||
	    access(undo, F_OK))
		return 1;
	if (undo_empty(undo)) {
		unlink(undo);
		error_line("%s: not converted; nothing was written",
			   o->image);
		return 1;
	}
	if (run_e2undo(o, undo)) {
		error_line("%s: not converted, but the image could not be put "
			   "back: run e2undo %s %s", o->image, undo, o->image);
		return 1;
	}
	error_line("%s: not converted; the image was put back as it was "
		   "(e2undo)", o->image);
	return 1;
}
