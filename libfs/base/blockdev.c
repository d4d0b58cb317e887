/*
 * blockdev.c --- whether an image's name is a block device: a writer
 * opens a device with EXT2_FLAG_EXCLUSIVE (O_EXCL), so that nobody else
 * opens it meanwhile.  Below every layer that opens an image for
 * writing (image/open.c, check/fsck_feature.c, builder/build_undo.c).
 */
#include <sys/stat.h>
#include "extref.h"

int extref_image_is_blockdev(const char *name)
{
	struct stat st;

	return stat(name, &st) == 0 && S_ISBLK(st.st_mode);
}
