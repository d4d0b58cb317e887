/*
 * target.c --- check, create and (on failure) restore the image file,
 * by the library (libfs/builder/target.c, target_create.c, guard.c).
 *
 * Nothing writes to an existing file before every check has passed:
 * target_probe() only looks (extref_build_target_probe),
 * target_create() creates or grows the file
 * (extref_build_target_create), target_undo() removes what we created
 * or shrinks what we grew (extref_build_guard_undo).
 */
#include <errno.h>
#include <string.h>

#include "extref_builder.h"
#include "mkfs.h"

void target_probe(struct extref_build_args *o, struct extref_build_target *t)
{
	struct extref_build_target_opts p = {
		.image = o->image, .size_arg = o->size_arg,
		.size_bytes = plan.size_bytes, .blocksize = o->blocksize,
		.inode_size = o->inode_size, .force = o->force,
	};

	if (o->source && plan.source_need) {
		p.need_for = plan.archive ? plan.archive : o->source;
		p.need = plan.source_need;
	}
	if (extref_build_target_probe(&p, t))
		fatal("%s", t->why);
	o->blocksize = t->blocksize;
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

void target_create(const struct extref_build_args *o,
		   struct extref_build_target *t)
{
	sigset_t signals;

	cleanup_signals(&signals);
	if (extref_build_target_create(o->image, &signals, t))
		fatal("%s", t->why);
}

void target_undo(const struct extref_build_args *o)
{
	if (extref_build_guard_undo())
		error_line("cannot restore the size of %s: %s", o->image,
			   strerror(errno));
}
