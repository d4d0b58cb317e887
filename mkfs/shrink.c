/*
 * shrink.c --- mkfs.extref --shrink and --convert --shrink: the image
 * file replaced by a fresh build of what it holds, in one call of the
 * library (extref_build_shrink, libfs/builder/build_shrink.c: the lock,
 * the checks, the copy in a hidden directory beside the image, the
 * rename); here the options it takes, the callbacks (stock e2fsck -fn,
 * the notes, cleanup.c's registrations) and what is said.  A signal
 * before the rename removes the hidden directory (cleanup.c) and says
 * "not shrunk; the image is as it was".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extref_builder.h"
#include "mkfs.h"

#ifdef EXTREF_FAULT_INJECTION
/* Crash tests only: EXTREF_FAULT_SHRINK_STEP=STEP sends the run SIGTERM
 * right after STEP (formatted, first, built, synced, renamed). */
static void fault_after(unsigned int step)
{
	static const char *const name[] = { NULL, NULL, "formatted", "first",
					    "built", "synced", "renamed" };
	const char *s = getenv("EXTREF_FAULT_SHRINK_STEP");

	if (s && step < 7 && name[step] && !strcmp(s, name[step]))
		raise(SIGTERM);
}
#else
#define fault_after(step)	do { } while (0)
#endif

/* Stock e2fsck -fn, on the image first, then on the copy. */
static errcode_t shrink_e2fsck(const char *image, void *priv)
{
	struct mkfs_opts on = *(const struct mkfs_opts *)priv;

	on.image = image;
	return run_e2fsck_fn(&on) ? EXTREF_ERR_E2FSCK_DAMAGED : 0;
}

static void shrink_note(int what, unsigned int n, void *priv)
{
	const struct mkfs_opts *o = priv;
	static char note[4096 + 64];

	if (what != EXTREF_NOTE_SHRINK) {
		replay_said(o, what, n);
		return;
	}
	if (n == EXTREF_SHRINK_COPYING) {
		snprintf(note, sizeof(note), "%s: %s: not shrunk; the image "
			 "is as it was", prog, o->image);
		cleanup_set_note(note);
	} else if (n == EXTREF_SHRINK_RENAMED) {
		cleanup_set_note(NULL);	/* shrunk: nothing to take back */
	}
	fault_after(n);
}

static int shrink_hidden(const char *dir, void *priv)
{
	(void)priv;
	return cleanup_add_tree(dir);
}

/* Refuse (exit) what cannot be shrunk, with nothing changed. */
static void shrink_refused(const struct mkfs_opts *o, errcode_t err,
			   const struct extref_build_shrink_result *r)
{
	const char *i = o->image;

	if (err == EXTREF_ERR_SHRINK_SYMLINK)
		fatal("%s: --shrink puts a new file in the image's place; %s "
		      "is a symbolic link (the link itself would be "
		      "replaced): give the path of the image it names; "
		      "nothing was changed", i, i);
	if (err == EXTREF_ERR_SHRINK_BLOCKDEV)
		fatal("%s: --shrink makes a new, smaller image file and puts "
		      "it in the file's place; %s is a block device: copy it "
		      "into a file (dd if=%s of=FILE), run mkfs.extref "
		      "%s--shrink FILE, and write FILE back (or use it); "
		      "nothing was changed", i, i, i,
		      o->convert ? "--convert " : "");
	if (r->step == EXTREF_STEP_REPLAY) {
		error_line("%s: %s while replaying its journal", i,
			   error_message(err));
		exit(1);
	}
	if (err == EXTREF_ERR_E2FSCK_DAMAGED)
		fatal("%s: e2fsck -fn finds it damaged (above): --shrink runs "
		      "only on a clean filesystem; run e2fsck -fy %s first; "
		      "%s", i, i, unchanged_note());
	if (err == EXTREF_ERR_NO_FEATURE)
		fatal("%s: not an extref image: --convert --shrink converts "
		      "and shrinks an ext4 image; %s", i, unchanged_note());
	if (r->step == EXTREF_STEP_WORK)
		fatal("%s: %s while checking the reference counts; %s", i,
		      error_message(err), unchanged_note());
	if (err == EXTREF_ERR_UNTRUSTED && r->problems)
		fatal("%s: fsck.extref -fn finds %d problem%s in the "
		      "reference counts: run fsck.extref -fy %s first; %s", i,
		      r->problems, r->problems == 1 ? "" : "s", i,
		      unchanged_note());
	if (r->stable_inodes)
		fatal("%s: --shrink: the filesystem has stable_inodes (inode "
		      "numbers must not change; the copy renumbers them); "
		      "%s", i, unchanged_note());
	fatal("%s: %s; %s", i, error_message(err), unchanged_note());
}

int shrink_image(const struct mkfs_opts *o)
{
	struct extref_build_shrink_opts so = {
		.flags = o->convert ? EXTREF_SHRINK_CONVERT : 0,
		.dedupe = o->dedup, .headroom = o->headroom,
		.mke2fs = mke2fs_path(), .mke2fs_env = "MKFS_EXTREF_MKE2FS",
		.check = shrink_e2fsck, .note = shrink_note,
		.hidden = shrink_hidden, .child = cleanup_child,
		.priv = (void *)o,
	};
	struct extref_build_shrink_result r;
	sigset_t signals;
	errcode_t err;

	build_opts_of(o, &so.build);
	cleanup_signals(&signals);
	so.signals = &signals;
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
