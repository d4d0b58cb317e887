/*
 * build_update_grow.c --- extref_build_update_grow: mkfs.extref
 * --update --grow.  The update's need is measured by its dry run
 * (update_need.c), the image grown when it lacks the room
 * (build_grow.c: nothing done when it has it), and the update run.
 * Should the estimate fall short (the update runs out of room and
 * rolls back), the need is measured again on top of what is free and
 * the image grown and updated once more.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "build_int.h"

static int no_room(errcode_t err)
{
	return err == EXT2_ET_BLOCK_ALLOC_FAIL || err == ENOSPC ||
	       err == EXT2_ET_DIR_NO_SPACE_FOR_CSUM ||
	       err == EXT2_ET_INODE_ALLOC_FAIL;
}

errcode_t extref_build_update_grow(const char *image, const char *dir,
				   int layer_fd,
				   const struct extref_build_opts *o,
				   struct extref_update *u,
				   struct extref_build_update_stats *st,
				   struct extref_build_grow *g, int *step)
{
	struct extref_update_need n;
	errcode_t err;
	int dummy, again;

	if (!step)
		step = &dummy;
	memset(st, 0, sizeof(*st));
	*step = EXTREF_STEP_OPEN;
	if (extref_image_is_blockdev(image))
		return EXTREF_ERR_GROW_DEVICE;
	*step = EXTREF_STEP_CHECK;	/* the user's first (undo_left.c) */
	err = extref_build_left(image, 0);
	if (err)
		return err;
	for (again = 0; ; again++) {
		*step = EXTREF_STEP_CHECK;
		err = extref_build_update_need(image, dir, layer_fd, u, &n);
		if (err)
			return err;
		g->need_blocks = n.blocks + (again ? n.free_blocks : 0);
		g->need_inodes = n.inodes + (again ? n.free_inodes : 0);
		err = extref_build_grow(image, o, g, step);
		if (err)
			return err;
		*step = EXTREF_STEP_WORK;
		if (layer_fd >= 0 && lseek(layer_fd, 0, SEEK_SET) < 0)
			return errno ? (errcode_t)errno : EXT2_ET_LLSEEK_FAILED;
		err = extref_build_update(image, dir, layer_fd, o, u, st);
		if (again || !no_room(err))
			return err;
		extref_update_free(u);
	}
}
