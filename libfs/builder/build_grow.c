/*
 * build_grow.c --- extref_build_grow: an image file grown by the stock
 * resize2fs, under the image's write lock, or left as it was.
 *
 * The walk: the lock; one read-write open under it, which replays a
 * journal that needs recovery and proves the counts (by the stamp, or in
 * full) before anything grows, and says whether another tool wrote
 * since our last close; the target (grow_size.c); resize2fs with an
 * undo file beside the image (IMAGE.grow.e2undo: an interrupted run's is
 * found by the next writer, undo_left.c, and this one refuses while it
 * is there); one more read-write open that proves every count against
 * every mapping of the grown image and, when no foreign write was met
 * before, records the image as this library's (resize2fs is the tool we
 * ran: fsck.extref then has nothing to say).  A failure after
 * resize2fs started puts its undo file back with e2undo and truncates
 * the file to its old length (a refused open writes nothing).  The file
 * goes when the grow is proven or put back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/xr_image.h"
#include "image/xr_seen.h"
#include "grow_int.h"

struct grow {
	const char	*image;
	const struct extref_build_opts *o;
	struct extref_build_grow *g;
	extref_image_lock_t lock;
	char		undo[4096];	/* IMAGE.grow.e2undo */
	off_t		size;		/* the file's, before */
};

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_NO_MEMORY;
}

/* Run a tool to its end; 0 when it exited 0 (its output kept in
 * g->output either way, the last run's).  It inherits the image's lock,
 * which then lasts until it ends: a SIGKILL of ours leaves resize2fs
 * running alone (undo_left.c), and no writer opens the image under it. */
static errcode_t run(struct grow *w, const char *name, const char *env,
		     const char *const *argv, int *ok)
{
	char path[64];
	struct extref_build_tool t = {
		.name = name, .path = path, .env_var = env,
		.conf_fd = xr_image_lock_fd(w->lock),
		.signals = w->g->signals, .hold_signals = 1,
		.child = w->g->child, .priv = w->g->priv,
	};
	errcode_t err;

	snprintf(path, sizeof(path), "/sbin/%s", name);
	err = extref_build_run_tool(argv, w->o, &t);
	*ok = !err && WIFEXITED(t.status) && !WEXITSTATUS(t.status);
	if (!err) {
		free(w->g->output);
		w->g->output = t.output;
	}
	return err;
}

/* resize2fs's note of the undo file (ours to run, and gone after), cut
 * out of its output. */
static void drop_undo_note(char *out)
{
	char *a = out ? strstr(out, "Overwriting existing filesystem") : NULL,
	     *b = a ? strstr(a, "e2undo ") : NULL;

	if (b && (b = strchr(b, '\n'))) {
		while (*b == '\n')
			b++;
		memmove(a, b, strlen(b) + 1);
	}
}

/* The undo file put back (when resize2fs wrote one), the file cut back. */
static errcode_t put_back(struct grow *w)
{
	const char *argv[] = { "e2undo", w->undo, w->image, NULL };
	const char *force[] = { "e2undo", "-f", w->undo, w->image, NULL };
	struct stat st;
	char *out;
	int ok = 1;

	if (!stat(w->undo, &st) && st.st_size > 0) {
		out = w->g->output;	/* resize2fs's, the one to show */
		w->g->output = NULL;
		if (run(w, "e2undo", "EXTREF_E2UNDO", argv, &ok) || !ok)
			run(w, "e2undo", "EXTREF_E2UNDO", force, &ok);
		free(w->g->output);
		w->g->output = out;
	}
	if (ok && truncate(w->image, w->size) < 0)
		ok = 0;
	if (!ok && asprintf(&out, "%sthe undo file is kept: %s\n",
			    w->g->output ? w->g->output : "", w->undo) >= 0) {
		free(w->g->output);
		w->g->output = out;
	}
	return ok ? 0 : EXTREF_ERR_GROW_UNDO;
}

#ifdef EXTREF_FAULT_INJECTION
/* Tests: EXTREF_FAULT_GROW=prove makes the proof of the grown image
 * fail (after its open, abandoned), as a damaged tree would. */
static int fault_prove(void)
{
	const char *s = getenv("EXTREF_FAULT_GROW");

	return s && !strcmp(s, "prove");
}
#else
#define fault_prove()	0	/* no symbol of it in a production build */
#endif

/* The grown image proven, recorded as ours unless a foreign write came
 * before: 0, or the proof's error (nothing written then).  resize2fs ran
 * at the options' clock (E2FSPROGS_FAKE_TIME), so the record takes it
 * too: a grow under SOURCE_DATE_EPOCH stays reproducible. */
static errcode_t prove(struct grow *w, int foreign, int *step)
{
	extref_fs_t xfs;
	errcode_t err;

	*step = EXTREF_STEP_CHECK;
	err = xr_fs_open_held(w->image, EXTREF_OPEN_RW | EXTREF_OPEN_STAMP |
			      EXTREF_OPEN_VERIFY, &xfs, NULL);
	if (!err && fault_prove()) {
		extref_fs_abort(xfs);
		err = EXTREF_ERR_UNTRUSTED;
	}
	if (err)
		return err;
	xr_build_clock(extref_fs_ext2(xfs), w->o);
	w->g->blocks_after = ext2fs_blocks_count(extref_fs_ext2(xfs)->super);
	if (!foreign && w->o && (w->o->flags & EXTREF_BUILD_EPOCH))
		xr_seen_accept_run(xfs);
	else if (!foreign)
		extref_fs_accept(xfs);
	*step = EXTREF_STEP_WRITE;
	return extref_fs_close(xfs);
}

static errcode_t resize(struct grow *w, blk64_t target, int foreign,
			int *step)
{
	char blocks[32];
	const char *argv[] = { "resize2fs", "-z", w->undo, w->image, blocks,
			       NULL };
	struct stat st;
	errcode_t err, back;
	int ok, moved = 0;

	if (stat(w->image, &st) < 0)
		return errno_code();
	w->size = st.st_size;
	snprintf(blocks, sizeof(blocks), "%llu", (unsigned long long)target);
	*step = EXTREF_STEP_WORK;
	if (w->g->note)
		w->g->note(EXTREF_NOTE_WRITING, 0, w->g->priv);
	err = run(w, "resize2fs", "EXTREF_RESIZE2FS", argv, &ok);
	drop_undo_note(w->g->output);
	if (!err && !ok)
		err = EXTREF_ERR_GROW_FAILED;
	if (!err && (err = extref_image_lock_same(w->lock, w->image)))
		moved = 1;	/* the name is another file's: not touched */
	if (!err)
		err = prove(w, foreign, step);
	if (w->g->note)
		w->g->note(EXTREF_NOTE_WRITTEN, 0, w->g->priv);
	if (moved || !err || *step == EXTREF_STEP_WRITE)
		return err;
	back = put_back(w);
	w->g->undone = !back;
	return back ? back : err;
}

/* Under the lock: the look, the target, the grow. */
static errcode_t grow_held(struct grow *w, int *step)
{
	extref_fs_t xfs;
	blk64_t target;
	ext2_filsys fs;
	errcode_t err;
	int foreign;

	*step = EXTREF_STEP_REPLAY;
	err = xr_fs_open_held(w->image, EXTREF_OPEN_RW | EXTREF_OPEN_STAMP,
			      &xfs, NULL);
	if (err)
		return err;
	fs = extref_fs_ext2(xfs);
	xr_build_clock(fs, w->o);
	if (w->g->note && extref_fs_replayed(xfs))
		w->g->note(EXTREF_NOTE_REPLAYED, extref_fs_replayed(xfs),
			   w->g->priv);
	w->g->blocksize = fs->blocksize;
	w->g->blocks_before = w->g->blocks_after = ext2fs_blocks_count(fs->super);
	foreign = extref_fs_foreign(xfs);
	*step = EXTREF_STEP_CHECK;
	err = xr_grow_target(fs, w->g->need_blocks, w->g->need_inodes,
			     w->g->headroom, &target);
	if (err) {
		extref_fs_abort(xfs);
		return err;
	}
	err = extref_fs_close(xfs);
	if (!err)
		err = extref_image_lock_same(w->lock, w->image);
	if (err || target <= w->g->blocks_before)
		return err;
	return resize(w, target, foreign, step);
}

/* The undo file's name, and no run's left there (under the lock). */
static errcode_t undo_file(struct grow *w)
{
	errcode_t err;

	err = extref_build_grow_undo_name(w->image, w->undo, sizeof(w->undo));
	return err ? err : extref_build_left(w->image, EXTREF_LEFT_LOCKED);
}

errcode_t extref_build_grow(const char *image,
			    const struct extref_build_opts *o,
			    struct extref_build_grow *g, int *step)
{
	struct grow w = { .image = image, .o = o, .g = g };
	errcode_t err;
	int dummy;

	if (!step)
		step = &dummy;
	g->output = NULL;
	g->undone = 0;
	g->blocks_before = g->blocks_after = 0;
	*step = EXTREF_STEP_OPEN;
	if (extref_image_is_blockdev(image))
		return EXTREF_ERR_GROW_DEVICE;
	*step = EXTREF_STEP_LOCK;
	err = extref_image_lock(image, EXTREF_LOCK_WRITE, &w.lock);
	if (err)
		return err;
	*step = EXTREF_STEP_CHECK;
	err = undo_file(&w);
	if (!err) {
		err = grow_held(&w, step);
		if (err != EXTREF_ERR_GROW_UNDO)
			unlink(w.undo);
	}
	extref_image_unlock(w.lock);
	return err;
}
