/*
 * convert_left.c --- an image an interrupted mkfs.extref --convert (or
 * --update --grow) left its undo file beside (extref_build_left).  Its two ways out
 * are the user's: put the image back with stock e2undo, or delete the
 * file and repair the image as it is.  A repair first would decide for
 * them (e2undo then refuses the changed image, or with -f puts back
 * blocks over the repair): -n checks the image and says so, -p and -y
 * change nothing and say what to do.  Asked before the image's lock is
 * taken (the library tries it: a running --convert's own file is no
 * leftover).
 */
#include <stdio.h>

#include "extref_builder.h"
#include "fsck.h"

int convert_left(const struct fsck_opts *o)
{
	errcode_t left = extref_build_left(o->image, 0);

	if (!left)
		return 0;
	if (o->mode == EXTREF_FSCK_NO) {
		printf("%s: warning: %s\n", o->image,
		       extref_build_left_note(o->image, left));
		return 0;
	}
	fprintf(stderr, "%s: %s: %s; nothing was changed (-n checks it as "
		"it is)\n", prog, o->image,
		extref_build_left_note(o->image, left));
	return FSCK_ERROR;
}
