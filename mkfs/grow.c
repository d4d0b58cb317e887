/*
 * grow.c --- mkfs.extref --update --grow: the library's
 * extref_build_update_grow (the update's need measured, the image file
 * grown by the stock resize2fs when it lacks the room, then updated)
 * with cleanup.c's signals; the sizes said, or, when the grow failed,
 * what resize2fs wrote (update.c then says why).  A signal while
 * resize2fs runs is taken when it has ended (the library holds them):
 * the image is grown, unproven, resize2fs's undo file kept beside it,
 * and the note says what to do with it (undo_left.c's).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs.h"
#include "extref_builder.h"

#define MIB	(1024.0 * 1024.0)

/* From resize2fs's start to the grown image's proof: a signal's note. */
static void grow_note(int what, unsigned int n, void *priv)
{
	const struct extref_build_args *o = priv;
	char text[6 * 4096];

	(void)n;
	if (what == EXTREF_NOTE_WRITTEN) {
		update_set_note(o);
	} else if (what == EXTREF_NOTE_WRITING) {
		snprintf(text, sizeof(text), "%s: %s: interrupted while "
			 "growing, after resize2fs; %s", prog, o->image,
			 extref_build_left_note(o->image, EXTREF_ERR_GROW_LEFT));
		cleanup_set_note(text);
	}
}

errcode_t update_grow(const struct extref_build_args *o, int layer_fd,
		      const struct extref_build_opts *b, struct extref_update *u,
		      struct extref_build_update_stats *st)
{
	struct extref_build_grow g;
	sigset_t sigs;
	errcode_t err;

	memset(&g, 0, sizeof(g));
	cleanup_signals(&sigs);
	g.signals = &sigs;
	g.child = extref_build_guard_child;
	g.headroom = o->headroom;
	g.note = grow_note;
	g.priv = (void *)o;
	err = extref_build_update_grow(o->image, o->source, layer_fd, b, u, st,
				       &g, NULL);
	if (g.blocks_after > g.blocks_before && !o->quiet)
		printf("%s: grown from %.1f MiB to %.1f MiB (resize2fs)\n",
		       o->image, g.blocks_before * (double)g.blocksize / MIB,
		       g.blocks_after * (double)g.blocksize / MIB);
	if (err && !st->blocksize && g.output && *g.output) {
		progress_break();	/* what resize2fs said */
		fputs(g.output, stderr);
	}
	if (err && g.undone && err != EXTREF_ERR_GROW_FAILED)
		error_line("%s: the grown image failed its check: the grow "
			   "was undone (e2undo), the image is as it was",
			   o->image);
	free(g.output);
	return err;
}
