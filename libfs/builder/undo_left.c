/*
 * undo_left.c --- the undo files an interrupted run leaves beside an
 * image file: --convert's (IMAGE.convert.e2undo: convert_left.c) and
 * --grow's, resize2fs's (IMAGE.grow.e2undo: build_grow.c); whether one
 * is there, and what to do.
 *
 * A SIGKILL of mkfs.extref during --grow's resize2fs leaves resize2fs
 * running on its own (its child: nothing kills it), holding the image's
 * lock (it inherited its descriptor: build_grow.c) until it finishes:
 * the image is grown and clean, the update not made, the undo file
 * complete.  A crash or a power cut, or a kill of both (the process
 * group, the cgroup), stops resize2fs halfway: the image is damaged
 * (stock e2fsck -fn finds the new groups half made) and the undo file
 * holds every block resize2fs wrote as it was: stock e2undo puts them
 * back (saying the record is incomplete, and asking for e2fsck).
 * Either way no writer opens the image while the file is there.
 */
#include <stdio.h>

#include "build_int.h"

errcode_t extref_build_grow_undo_name(const char *image, char *name,
				      size_t len)
{
	int n = snprintf(name, len, "%s.grow.e2undo", image);

	return n < 0 || (size_t)n >= len ? EXT2_ET_INVALID_ARGUMENT : 0;
}

static int grow_left(const char *image, int flags)
{
	char undo[4096];

	return !extref_build_grow_undo_name(image, undo, sizeof(undo)) &&
	       xr_undo_left(undo) &&
	       ((flags & EXTREF_LEFT_LOCKED) || !xr_held_by_a_writer(image));
}

errcode_t extref_build_left(const char *image, int flags)
{
	if (extref_build_convert_left(image, flags))
		return EXTREF_ERR_CONVERT_LEFT;
	return grow_left(image, flags) ? EXTREF_ERR_GROW_LEFT : 0;
}

static const char *grow_note(const char *image)
{
	static __thread char note[5 * 4096 + 1024];
	char undo[4096];

	if (extref_build_grow_undo_name(image, undo, sizeof(undo)))
		snprintf(undo, sizeof(undo), "IMAGE.grow.e2undo");
	snprintf(note, sizeof(note), "%s is left from an interrupted "
		 "mkfs.extref --update --grow (resize2fs's undo file): "
		 "'e2undo %s %s' puts the image back as it was before the grow "
		 "(then e2fsck -fy %s, as e2undo asks, and delete the file); "
		 "or, when stock e2fsck -fn %s finds the image clean "
		 "(resize2fs finished), delete the file to keep it grown (the "
		 "update was not made)", undo, undo, image, image, image);
	return note;
}

const char *extref_build_left_note(const char *image, errcode_t left)
{
	if (left == EXTREF_ERR_CONVERT_LEFT)
		return extref_build_convert_left_note(image);
	return grow_note(image);
}
