/*
 * build_undo.c --- extref_build_undo_*: one undo file for a whole build
 * (mkfs.extref -z UNDO_FILE), mke2fs's layout and the build written
 * after it alike.
 *
 * mke2fs -z would only save what mke2fs overwrites; the build that
 * follows (format.c, populate, labels) writes through other channels.
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

#include "build_int.h"

#define UNDO_BS	4096
#define CHUNK	64		/* blocks a read and write */

/* The holes of the image file before the run: e2undo puts back the
 * blocks that held data, these are punched again after it (abort). */
struct hole {
	off_t	start, end;
};

struct extref_build_undo {
	io_channel	chan;
	char		*image;
	struct hole	*holes;
	size_t		n_holes;
};

static void note_hole(struct extref_build_undo *u, off_t start, off_t end)
{
	struct hole *h;

	if (start >= end)
		return;
	h = realloc(u->holes, (u->n_holes + 1) * sizeof(*h));
	if (!h)
		return;		/* then the hole keeps what was written */
	u->holes = h;
	u->holes[u->n_holes].start = start;
	u->holes[u->n_holes++].end = end;
}

static void punch_holes(struct extref_build_undo *u)
{
	int fd = open(u->image, O_WRONLY | O_CLOEXEC);

	for (size_t i = 0; fd >= 0 && i < u->n_holes; i++)
		fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  u->holes[i].start,
			  u->holes[i].end - u->holes[i].start);
	if (fd >= 0)
		close(fd);
}

static void undo_free(struct extref_build_undo *u)
{
	free(u->holes);
	free(u->image);
	free(u);
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
static errcode_t save_all(struct extref_build_undo *u, int fd, off_t size,
			  int is_dev)
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
				note_hole(u, from, size);	/* to the end */
				break;
			}
			if (d < 0) {
				/* no SEEK_DATA here: all of it */
				d = 0;
				is_dev = 1;
			} else {
				note_hole(u, from, d < size ? d : size);
			}
		}
		h = is_dev ? size : lseek(fd, d, SEEK_HOLE);
		if (h < 0 || h > size)
			h = size;
		undo_leak_off();
		err = rewrite(u->chan, fd, d, h, buf);
		undo_leak_on();
		d = h;
	}
	free(buf);
	return err;
}

/* Every block of the image that holds data written back as it is,
 * through the undo channel: saved in the undo file first. */
static errcode_t save_image(struct extref_build_undo *u, __u64 size)
{
	errcode_t err;
	int fd = open(u->image, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno;
	err = save_all(u, fd, (off_t)size, extref_image_is_blockdev(u->image));
	/* nothing of ours left in a cache for mke2fs to find stale */
	if (!err)
		err = io_channel_flush(u->chan);
	close(fd);
	return err;
}

errcode_t extref_build_undo_begin(const char *image, const char *undo_file,
				  __u64 size, extref_build_undo_t *ret,
				  int *step)
{
	struct extref_build_undo *u;
	int dummy;
	errcode_t err;

	if (!step)
		step = &dummy;
	*step = EXTREF_STEP_OPEN;
	if (unlink(undo_file) < 0 && errno != ENOENT)
		return errno;
	*step = EXTREF_STEP_WORK;
	u = calloc(1, sizeof(*u));
	if (!u || !(u->image = strdup(image))) {
		free(u);
		return EXT2_ET_NO_MEMORY;
	}
	err = set_undo_io_backing_manager(unix_io_manager);
	if (!err) {
		/* a copy of the name is kept in a static it overwrites (and
		 * leaks) at the next call */
		undo_leak_off();
		err = set_undo_io_backup_file((char *)undo_file);
		undo_leak_on();
	}
	if (!err)
		err = undo_io_manager->open(image, IO_FLAG_RW, &u->chan);
	if (!err)
		err = io_channel_set_blksize(u->chan, UNDO_BS);
	if (!err)
		err = save_image(u, size);
	if (err) {
		if (u->chan)
			io_channel_close(u->chan);
		undo_free(u);
		unlink(undo_file);
		return err;
	}
	*ret = u;
	return 0;
}

/* The run went through: the undo file records the new superblock. */
errcode_t extref_build_undo_end(extref_build_undo_t u)
{
	errcode_t err = io_channel_close(u->chan);

	undo_free(u);		/* nothing to punch: the run is kept */
	return err;
}

int extref_build_undo_abort(extref_build_undo_t u,
			    int (*put_back)(void *priv), void *priv)
{
	int rc;

	io_channel_close(u->chan);
	rc = put_back(priv);
	if (!rc)
		punch_holes(u);
	undo_free(u);
	return rc;
}
