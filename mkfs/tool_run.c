/*
 * tool_run.c --- run the stock e2fsck -fn (the clean checks of --convert
 * and --shrink) and e2undo (convert_undo.c, steps.c's -z), as
 * mke2fs_run.c runs the stock mke2fs: through the library
 * (extref_build_e2fsck_fn, _e2undo: signals held while they run) with
 * cleanup.c's signals.  Their output is printed only when they fail.
 * MKFS_EXTREF_E2FSCK and MKFS_EXTREF_E2UNDO name other programs (tests);
 * else /sbin/NAME, else NAME on PATH.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "extref_builder.h"
#include "mkfs.h"

/* The library's run of a stock tool with cleanup.c's signals and child;
 * its output on standard error when it ran and failed. */
static errcode_t run(const struct extref_build_args *o, const char *env_var,
		     const char *undo, char *why, size_t len)
{
	struct extref_build_tool t = { .env_var = env_var,
				       .child = extref_build_guard_child };
	struct extref_build_opts b;
	sigset_t sigs;
	errcode_t err;

	cleanup_signals(&sigs);
	t.signals = &sigs;
	build_opts_of(o, &b);
	err = undo ? extref_build_e2undo(undo, o->image, &b, &t, why, len) :
		     extref_build_e2fsck_fn(o->image, &b, &t, why, len);
	if (err == EXTREF_ERR_TOOL_FAILED)
		fputs(t.output, stderr);
	free(t.output);
	return err;
}

int run_e2fsck_fn(const struct extref_build_args *o)
{
	char why[PATH_MAX + 128];

	return run(o, "MKFS_EXTREF_E2FSCK", NULL, why, sizeof(why)) ? -1 : 0;
}

/* e2undo puts back what was written: 0, or -1 (the undo file kept). */
int run_e2undo(const struct extref_build_args *o, const char *undo)
{
	char why[PATH_MAX + 128];

	if (!run(o, "MKFS_EXTREF_E2UNDO", undo, why, sizeof(why)))
		return 0;
	error_line("%s", why);
	error_line("%s: the undo file %s is kept", o->image, undo);
	return -1;
}

const char *convert_undo_file(const struct extref_build_args *o)
{
	static char path[PATH_MAX];

	if (extref_build_convert_undo_name(o->image, path, sizeof(path)))
		fatal("%s: name too long", o->image);
	return path;
}
