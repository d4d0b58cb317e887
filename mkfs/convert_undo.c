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
#include <unistd.h>

#include "mkfs.h"
#include "extref.h"

/*
 * The undo io manager sets itself up at its first write: the block
 * holding the superblock written back as it is (see undo_leak_off in
 * mkfs.h).
 */
errcode_t undo_first_write(ext2_filsys fs)
{
	blk64_t b = fs->super->s_first_data_block;
	char *buf;
	errcode_t err;

	err = ext2fs_get_mem(fs->blocksize, &buf);
	if (err)
		return err;
	err = io_channel_read_blk64(fs->io, b, 1, buf);
	if (!err) {
		undo_leak_off();
		err = io_channel_write_blk64(fs->io, b, 1, buf);
		undo_leak_on();
	}
	ext2fs_free_mem(&buf);
	return err;
}

/*
 * Open the image file (not a block device: its undo file could not lie
 * beside it) through e2fsprogs' undo io manager, over the library's.
 */
errcode_t convert_undo_open(const struct mkfs_opts *o, ext2_filsys *fs)
{
	const char *undo = convert_undo_file(o);
	errcode_t err;

	unlink(undo);
	err = set_undo_io_backing_manager(extref_io_manager());
	if (!err)
		err = undo_file_set(undo);
	if (!err)
		err = ext2fs_open2(o->image, NULL, EXT2_FLAG_RW |
				   EXT2_FLAG_64BITS, 0, 0, undo_io_manager,
				   fs);
	if (!err) {
		err = undo_first_write(*fs);
		if (err)
			ext2fs_free(*fs);
	}
	if (err)
		unlink(undo);
	return err;
}

void convert_undo_done(const struct mkfs_opts *o)
{
	unlink(convert_undo_file(o));
}

int convert_undo_take_back(const struct mkfs_opts *o, int opened)
{
	const char *undo = convert_undo_file(o);

	if (!opened || extref_image_is_blockdev(o->image) ||
	    access(undo, F_OK))
		return 1;
	if (run_e2undo(o, undo)) {
		error_line("%s: not converted, but the image could not be put "
			   "back: run e2undo %s %s", o->image, undo, o->image);
		return 1;
	}
	error_line("%s: not converted; the image was put back as it was "
		   "(e2undo)", o->image);
	return 1;
}
