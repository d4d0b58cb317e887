/*
 * convert_left.c --- the undo file mkfs.extref --convert keeps beside an
 * image file while it writes (IMAGE.convert.e2undo: build_convert.c),
 * and what to do when an interrupted run (a SIGKILL, a crash, a signal
 * during the sharing) left it.
 *
 * Such a run leaves the image as a crash does: with a journal, what was
 * committed (fsck.extref -fy, or e2fsck, replays it: a converted image
 * with part of the sharing, or the image as it was); without, counts for
 * fsck.extref -fy to lower.  The undo file holds every block the run
 * wrote, as it was, but not its last index: stock e2undo puts them back
 * and asks for e2fsck; it refuses when the superblock was the last block
 * written (its copy in the file is then older), which e2undo -f
 * overrides.  A run stopped before its first write leaves a file with no
 * undo header, which holds nothing to put back: not a leftover.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "build_int.h"

#define UNDO_MAGIC	"E2UNDO02"	/* e2fsprogs' undo file header */

errcode_t extref_build_convert_undo_name(const char *image, char *name,
					 size_t len)
{
	int n = snprintf(name, len, "%s.convert.e2undo", image);

	return n < 0 || (size_t)n >= len ? EXT2_ET_INVALID_ARGUMENT : 0;
}

int xr_undo_left(const char *undo)
{
	char magic[sizeof(UNDO_MAGIC) - 1];
	int fd = open(undo, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, magic, sizeof(magic));
	close(fd);
	return n == (ssize_t)sizeof(magic) &&
	       !memcmp(magic, UNDO_MAGIC, sizeof(magic));
}

int xr_held_by_a_writer(const char *image)
{
	extref_image_lock_t lock;

	if (extref_image_lock(image, EXTREF_LOCK_WRITE, &lock))
		return 1;
	extref_image_unlock(lock);
	return 0;
}

int extref_build_convert_left(const char *image, int flags)
{
	char undo[4096];

	return !extref_build_convert_undo_name(image, undo, sizeof(undo)) &&
	       xr_undo_left(undo) &&
	       ((flags & EXTREF_LEFT_LOCKED) || !xr_held_by_a_writer(image));
}

const char *extref_build_convert_left_note(const char *image)
{
	static __thread char note[4 * 4096 + 1024];
	char undo[4096];

	if (extref_build_convert_undo_name(image, undo, sizeof(undo)))
		snprintf(undo, sizeof(undo), "IMAGE.convert.e2undo");
	snprintf(note, sizeof(note), "%s is left from an interrupted "
		 "mkfs.extref --convert: 'e2undo %s %s' puts the image back as "
		 "it was (e2undo -f when e2undo says the superblock does not "
		 "match; then e2fsck -fy %s, as e2undo asks, and delete the "
		 "file); or delete the file to keep the image as it is (then "
		 "fsck.extref -fy %s replays its journal and repairs what the "
		 "interruption left)", undo, undo, image, image, image);
	return note;
}
