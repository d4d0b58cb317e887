/*
 * convert_undo.c --- mkfs.extref --convert is one transaction of the
 * image file, whatever the journal's transactions inside it: every block
 * is saved, before its first write, in IMAGE.convert.e2undo (e2fsprogs'
 * undo io manager: the library's extref_build_convert), a run that fails
 * puts them all back with stock e2undo (here), and one that succeeds
 * drops the file.  What the conversion
 * cannot convert it finds before writing (extref_convert's refusals, the
 * dedupe's checks); this is for what fails after.
 */
#include <stdio.h>
#include <unistd.h>

#include "mkfs.h"
#include "extref.h"

int convert_undo_take_back(const struct extref_build_args *o, int opened)
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
