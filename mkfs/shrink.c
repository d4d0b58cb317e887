/* shrink.c --- mkfs.extref [--convert] --shrink: one library call
 * (extref_build_shrink, libfs/builder/build_shrink.c), its options and
 * callbacks (stock e2fsck -fn, notes, cleanup.c's registrations: a signal
 * before the rename says "not shrunk..."), and what is said. */
#include <stdio.h>
#include <stdlib.h>

#include "extref_builder.h"
#include "mkfs.h"

/* Stock e2fsck -fn, on the image first, then on the copy. */
static errcode_t shrink_e2fsck(const char *image, void *priv)
{
	struct extref_build_args on = *(const struct extref_build_args *)priv;

	on.image = image;
	return run_e2fsck_fn(&on) ? EXTREF_ERR_E2FSCK_DAMAGED : 0;
}

static void shrink_note(int what, unsigned int n, void *priv)
{
	const struct extref_build_args *o = priv;
	static char note[4096 + 64];

	if (what != EXTREF_NOTE_SHRINK)
		replay_said(o, what, n);
	else if (n == EXTREF_SHRINK_COPYING) {
		snprintf(note, sizeof(note), "%s: %s: not shrunk; the image "
			 "is as it was", prog, o->image);
		cleanup_set_note(note);
	} else if (n == EXTREF_SHRINK_RENAMED)
		cleanup_set_note(NULL);	/* shrunk: nothing to take back */
}

static int shrink_hidden(const char *dir, void *priv)
{
	(void)priv;
	return extref_build_guard_tree(dir);
}

/* Refuse (exit) what cannot be shrunk: nothing changed but a replay. */
static void shrink_refused(const struct extref_build_args *o, errcode_t err,
			   const struct extref_build_shrink_result *r)
{
	const char *i = o->image;
	char w[3 * 4096];

	if (r->step == EXTREF_STEP_REPLAY)
		fatal("%s: %s while replaying its journal", i,
		      error_message(err));
	snprintf(w, sizeof(w), "%s", error_message(err));
	if (err == EXTREF_ERR_SHRINK_SYMLINK)
		snprintf(w, sizeof(w), "--shrink puts a new file in the "
			 "image's place; %s is a symbolic link (the link itself "
			 "would be replaced): give the path of the image it "
			 "names", i);
	else if (err == EXTREF_ERR_SHRINK_BLOCKDEV)
		snprintf(w, sizeof(w), "--shrink makes a new, smaller image "
			 "file and puts it in the file's place; %s is a block "
			 "device: copy it into a file (dd if=%s of=FILE), run "
			 "mkfs.extref %s--shrink FILE, and write FILE back (or "
			 "use it)", i, i, o->convert ? "--convert " : "");
	else if (err == EXTREF_ERR_E2FSCK_DAMAGED)
		snprintf(w, sizeof(w), "e2fsck -fn finds it damaged (above): "
			 "--shrink runs only on a clean filesystem; run e2fsck "
			 "-fy %s first", i);
	else if (err == EXTREF_ERR_NO_FEATURE)
		snprintf(w, sizeof(w), "not an extref image: --convert "
			 "--shrink converts and shrinks an ext4 image");
	else if (r->step == EXTREF_STEP_WORK)
		snprintf(w, sizeof(w), "%s while checking the reference "
			 "counts", error_message(err));
	else if (err == EXTREF_ERR_UNTRUSTED && r->problems)
		snprintf(w, sizeof(w), "fsck.extref -fn finds %d problem%s in "
			 "the reference counts: run fsck.extref -fy %s first",
			 r->problems, r->problems == 1 ? "" : "s", i);
	else if (r->stable_inodes)
		snprintf(w, sizeof(w), "--shrink: the filesystem has "
			 "stable_inodes (inode numbers must not change; the "
			 "copy renumbers them)");
	error_line("%s: %s; %s", i, w, unchanged_note());
	lock_said(i, err);
	exit(1);
}

int shrink_image(const struct extref_build_args *o)
{
	struct extref_build_shrink_opts so;
	struct extref_build_shrink_result r;
	sigset_t signals;
	errcode_t err;

	extref_build_shrink_of(o, &so);
	so.build.progress = progress_cb;
	so.mke2fs = mke2fs_path();
	so.mke2fs_env = "MKFS_EXTREF_MKE2FS";
	so.check = shrink_e2fsck;
	so.note = shrink_note;
	so.hidden = shrink_hidden;
	so.child = extref_build_guard_child;
	so.signals = &signals;
	so.priv = (void *)o;
	cleanup_signals(&signals);
	err = extref_build_shrink(o->image, &so, &r);
	progress_end();
	cleanup_set_note(NULL);
	if (err && r.step < EXTREF_STEP_COPY)
		shrink_refused(o, err, &r);
	if (err && r.step == EXTREF_STEP_COPY_CHECK)
		error_line("%s: e2fsck -fn finds the copy damaged (above)",
			   o->image);
	else if (err)
		error_line("%s", r.why);
	if (err && !r.replaced)
		error_line("%s: not shrunk; the image is as it was", o->image);
	if (err)
		return 1;
	if (!o->quiet)
		printf("%s: shrunk from %llu to %llu blocks (%.1f MiB)\n",
		       o->image, (unsigned long long)r.blocks_before,
		       (unsigned long long)r.blocks_after,
		       (double)r.blocks_after * r.blocksize / 1048576.0);
	return 0;
}
