/*
 * undo_build.c --- mkfs.extref -z UNDO_FILE: one undo file for the whole
 * run, mke2fs's layout and the build written after it alike.
 *
 * mke2fs -z would only save what mke2fs overwrites; the build that
 * follows (format.c, source.c, labels.c) writes through other channels.
 * So before mke2fs runs, every block of the existing image that holds
 * data (a file's data runs, as SEEK_DATA finds them; every block of a
 * device) is written back as it is through e2fsprogs' undo io manager,
 * which saves its old contents in UNDO_FILE first.  The channel stays
 * open until the end of the run: its close then records the finished
 * filesystem's superblock, which is what stock e2undo checks before it
 * puts the saved blocks back.  A run that fails puts them back itself,
 * and punches the file's old holes again: the file as it was, byte for
 * byte.  (A later e2undo by hand cannot punch: the old filesystem comes
 * back whole, and its former holes may hold what the build wrote.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mkfs.h"

#define UNDO_BS	4096
#define CHUNK	64		/* blocks a read and write */

static io_channel undo_chan;

/* The holes of the image file before the run: e2undo puts back the
 * blocks that held data, these are punched again after it (abort). */
static struct hole {
	off_t	start, end;
} *holes;
static size_t n_holes;

static void note_hole(off_t start, off_t end)
{
	struct hole *h;

	if (start >= end)
		return;
	h = realloc(holes, (n_holes + 1) * sizeof(*holes));
	if (!h)
		return;		/* then the hole keeps what was written */
	holes = h;
	holes[n_holes].start = start;
	holes[n_holes++].end = end;
}

static void punch_holes(const char *image)
{
	int fd = open(image, O_WRONLY | O_CLOEXEC);

	for (size_t i = 0; fd >= 0 && i < n_holes; i++)
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  holes[i].start, holes[i].end - holes[i].start);
	if (fd >= 0)
		close(fd);
	free(holes);
	holes = NULL;
	n_holes = 0;
}

/* Bytes [s, e) of the image written back as they are (whole blocks;
 * a partial last block byte by byte). */
static errcode_t rewrite(io_channel ch, int fd, off_t s, off_t e, char *buf)
{
	errcode_t err = 0;

	s -= s % UNDO_BS;
	while (!err && s + UNDO_BS <= e) {
		off_t n = (e - s) / UNDO_BS;

		if (n > CHUNK)
			n = CHUNK;
		err = io_channel_read_blk64(ch, s / UNDO_BS, (int)n, buf);
		if (!err)
			err = io_channel_write_blk64(ch, s / UNDO_BS, (int)n,
						     buf);
		s += n * UNDO_BS;
	}
	if (!err && s < e) {
		ssize_t r = pread(fd, buf, (size_t)(e - s), s);

		if (r != (ssize_t)(e - s))
			return r < 0 ? errno : EXT2_ET_SHORT_READ;
		err = io_channel_write_byte(ch, (unsigned long)s, (int)r, buf);
	}
	return err;
}

/* Every data run of [0, size): SEEK_DATA where the file has them. */
static errcode_t save_all(io_channel ch, int fd, off_t size, int is_dev)
{
	char *buf = malloc((size_t)UNDO_BS * CHUNK);
	errcode_t err = 0;
	off_t d = 0, h;

	if (!buf)
		return EXT2_ET_NO_MEMORY;
	while (!err && d < size) {
		if (!is_dev) {
			off_t from = d;

			d = lseek(fd, d, SEEK_DATA);
			if (d < 0 && errno == ENXIO) {
				note_hole(from, size);	/* to the end */
				break;
			}
			if (d < 0) {
				/* no SEEK_DATA here: all of it */
				d = 0;
				is_dev = 1;
			} else {
				note_hole(from, d < size ? d : size);
			}
		}
		h = is_dev ? size : lseek(fd, d, SEEK_HOLE);
		if (h < 0 || h > size)
			h = size;
		undo_leak_off();
		err = rewrite(ch, fd, d, h, buf);
		undo_leak_on();
		d = h;
	}
	free(buf);
	return err;
}

int undo_build_begin(const struct mkfs_opts *o, const struct mkfs_target *t)
{
	errcode_t err;
	int fd;

	if (unlink(o->undo) < 0 && errno != ENOENT) {
		error_line("%s: cannot replace the undo file %s: %s", o->image,
			   o->undo, strerror(errno));
		return -1;
	}
	err = set_undo_io_backing_manager(unix_io_manager);
	if (!err)
		err = undo_file_set(o->undo);
	if (!err)
		err = undo_io_manager->open(o->image, IO_FLAG_RW, &undo_chan);
	if (!err)
		err = io_channel_set_blksize(undo_chan, UNDO_BS);
	fd = err ? -1 : open(o->image, O_RDONLY | O_CLOEXEC);
	if (!err && fd < 0)
		err = errno;
	if (!err)
		err = save_all(undo_chan, fd, (off_t)t->orig_size,
			       t->is_blockdev);
	/* nothing of ours left in a cache for mke2fs to find stale */
	if (!err)
		err = io_channel_flush(undo_chan);
	if (fd >= 0)
		close(fd);
	if (err) {
		error_line("%s: %s while saving the image in the undo file %s",
			   o->image, error_message(err), o->undo);
		if (undo_chan)
			io_channel_close(undo_chan);
		undo_chan = NULL;
		unlink(o->undo);
		return -1;
	}
	return 0;
}

/* The run went through: the undo file records the new superblock. */
int undo_build_end(const struct mkfs_opts *o)
{
	errcode_t err = io_channel_close(undo_chan);

	undo_chan = NULL;
	free(holes);			/* nothing to punch: the run is kept */
	holes = NULL;
	n_holes = 0;
	if (err) {
		error_line("%s: %s while writing the undo file %s", o->image,
			   error_message(err), o->undo);
		return -1;
	}
	if (!o->quiet)
		printf("%s: the previous contents can be put back with: "
		       "e2undo %s %s\n", o->image, o->undo, o->image);
	return 0;
}

/* The run failed after the save: the image put back (an image the run
 * created or grew is removed or cut by cleanup.c after this). */
void undo_build_abort(const struct mkfs_opts *o)
{
	if (!undo_chan)
		return;
	io_channel_close(undo_chan);
	undo_chan = NULL;
	if (!run_e2undo(o, o->undo)) {
		punch_holes(o->image);
		error_line("%s: the image was put back as it was (e2undo %s)",
			   o->image, o->undo);
	}
}
