/*
 * resize_tail.c --- what resize2fs's own undo file cannot give back.
 *
 * resize2fs copies the blocks in use above the new end down, and on an
 * image file it truncates the file at the end of a run that succeeded:
 * the originals of those blocks are gone, and its undo file (the old
 * contents of the blocks it overwrote) cannot put them back.  So before
 * each run every block in use at or above the new end, and the
 * filesystem's last block, are saved in a second undo file,
 * IMAGE.tail.e2undo, by writing them back as they are through
 * e2fsprogs' undo io manager (the same bytes: the image does not
 * change).  A run whose result stock e2fsck rejects is then taken back
 * with both, the run's file first: e2undo of this one writes the tail
 * back, and with the last block the file's length.
 */
#include <stdlib.h>
#include <unistd.h>

#include "mkfs.h"

#define CHUNK 256	/* blocks a read and write */

/* Blocks [s, e) written back as they are. */
static errcode_t rewrite(ext2_filsys fs, blk64_t s, blk64_t e, char *buf)
{
	errcode_t err = 0;

	while (!err && s < e) {
		int n = e - s > CHUNK ? CHUNK : (int)(e - s);

		err = io_channel_read_blk64(fs->io, s, n, buf);
		if (!err)
			err = io_channel_write_blk64(fs->io, s, n, buf);
		s += (blk64_t)n;
	}
	return err;
}

static errcode_t save_runs(ext2_filsys fs, blk64_t from, char *buf)
{
	blk64_t last = ext2fs_blocks_count(fs->super) - 1, b = from, s, z;
	errcode_t err;

	/* first the last block (the manager sets itself up at its first
	 * write: see undo_leak_off) */
	undo_leak_off();
	err = rewrite(fs, last, last + 1, buf);
	undo_leak_on();
	while (!err && b < last) {
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, b,
							last - 1, &s))
			break;
		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, s,
							 last - 1, &z))
			z = last;
		err = rewrite(fs, s, z, buf);
		b = z;
	}
	return err;
}

errcode_t resize_tail_save(const char *image, blk64_t from,
			   const char *undo)
{
	ext2_filsys fs;
	char *buf = NULL;
	errcode_t err, close_err;

	unlink(undo);
	err = set_undo_io_backing_manager(unix_io_manager);
	if (!err)
		err = undo_file_set(undo);
	if (!err)
		err = ext2fs_open2(image, NULL, EXT2_FLAG_64BITS | EXT2_FLAG_RW,
				   0, 0, undo_io_manager, &fs);
	if (err)
		return err;
	err = ext2fs_read_block_bitmap(fs);
	if (!err)
		err = ext2fs_get_mem((size_t)fs->blocksize * CHUNK, &buf);
	if (!err && from < ext2fs_blocks_count(fs->super))
		err = save_runs(fs, from, buf);
	ext2fs_free_mem(&buf);
	/* not ext2fs_close: it would count the bytes written in the
	 * superblock and write it.  The channel's close writes the undo
	 * file's last index and header: its error counts. */
	close_err = io_channel_close(fs->io);
	if (fs->image_io == fs->io)
		fs->image_io = NULL;
	fs->io = NULL;
	ext2fs_free(fs);
	if (!err)
		err = close_err;
	if (err)
		unlink(undo);
	return err;
}
