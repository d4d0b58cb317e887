/*
 * target.c --- check, create and (on failure) restore the image file.
 *
 * Nothing here writes to an existing file before every check has passed:
 * target_probe() only looks (the library's extref_build_target_probe:
 * libfs/builder/target.c), target_create() creates or grows the file,
 * target_undo() removes what we created or shrinks what we grew.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "extref_builder.h"
#include "mkfs.h"

void target_probe(struct extref_build_args *o, struct mkfs_target *t)
{
	struct extref_build_target_opts p = {
		.image = o->image, .size_arg = o->size_arg,
		.size_bytes = plan.size_bytes, .blocksize = o->blocksize,
		.inode_size = o->inode_size, .force = o->force,
	};
	struct extref_build_target bt;

	if (o->source && plan.source_need) {
		p.need_for = plan.archive ? plan.archive : o->source;
		p.need = plan.source_need;
	}
	if (extref_build_target_probe(&p, &bt))
		fatal("%s", bt.why);
	o->blocksize = bt.blocksize;
	t->exists = bt.exists;
	t->is_blockdev = bt.is_blockdev;
	t->orig_size = bt.orig_size;
	t->fs_bytes = bt.fs_bytes;
}

void target_whole(struct extref_build_args *o)
{
	struct extref_build_target t;

	if (extref_build_target_size(o->image, &t))
		fatal("%s", t.why);
	if (!t.exists || (!t.orig_size && !t.is_blockdev))
		return;			/* target_probe says why; an empty
					 * file: as a new one */
	plan.whole = 1;
	plan.size_bytes = t.orig_size;
	o->size_arg = "the whole image";
}

void target_create(const struct extref_build_args *o, struct mkfs_target *t)
{
	sigset_t old;
	int fd, e;

	if (t->exists && (t->is_blockdev || t->fs_bytes <= t->orig_size))
		return;
	/* created or grown and registered for undoing, with no signal
	 * in between (cleanup.c) */
	cleanup_block(&old);
	if (t->exists) {
		fd = open(o->image, O_RDWR | O_CLOEXEC);
	} else {
		fd = open(o->image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0666);
		if (fd >= 0)
			t->created = 1;
	}
	e = errno;
	if (fd >= 0 && cleanup_add_image(o->image, t->created,
					 (off_t)t->orig_size)) {
		e = ENAMETOOLONG;
		close(fd);
		fd = -1;
		if (t->created)
			unlink(o->image);
		t->created = 0;
	}
	cleanup_unblock(&old);
	if (fd < 0)
		fatal("cannot open %s: %s", o->image, strerror(e));
	if (ftruncate(fd, (off_t)t->fs_bytes) < 0) {
		e = errno;
		close(fd);
		fatal("%s: cannot make the file %llu bytes long: %s",
		      o->image, (unsigned long long)t->fs_bytes, strerror(e));
	}
	if (t->exists)
		t->extended = 1;
	close(fd);
}

void target_undo(const struct extref_build_args *o, const struct mkfs_target *t)
{
	(void)o; (void)t;
	cleanup_undo_image();
}
