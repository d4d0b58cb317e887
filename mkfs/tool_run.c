/*
 * tool_run.c --- run the stock e2fsck -fn (the clean checks of --convert
 * and --shrink) and e2undo (convert_undo.c, steps.c's -z), as
 * mke2fs_run.c runs the stock mke2fs: through the library
 * (extref_build_run_tool) with cleanup.c's signals.
 *
 * They run with the terminating signals blocked (and we wait with them
 * blocked): a Ctrl-C neither kills them half-way nor leaves them running
 * alone; the signal is taken once they have finished.  Their output is
 * kept and printed only when they fail.  MKFS_EXTREF_E2FSCK and
 * MKFS_EXTREF_E2UNDO name other programs (tests); else /sbin/NAME, else
 * NAME on PATH.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <limits.h>

#include "extref_builder.h"
#include "mkfs.h"

int run_e2fs_tool(const struct mkfs_opts *o, const char *path,
		  const char *env_var, const char **argv, const char *conf,
		  int conf_fd, int hold, char **output, int *status)
{
	struct extref_build_tool t = {
		.name = argv[0], .path = path, .env_var = env_var,
		.conf = conf, .conf_fd = conf_fd, .hold_signals = hold,
		.child = cleanup_child,
	};
	struct extref_build_opts b;
	sigset_t sigs;
	errcode_t err;

	cleanup_signals(&sigs);
	t.signals = &sigs;
	build_opts_of(o, &b);
	err = extref_build_run_tool(argv, &b, &t);
	*output = t.output;
	*status = t.status;
	return (int)err;
}

/*
 * Run argv (tool name, overridable by env_var) to its end with the
 * terminating signals blocked; 0 when it exited 0, else -1 with its
 * output on standard error and *why set (an errno value, or 0: it ran
 * and failed, *status saying how).
 */
static int run_tool(const struct mkfs_opts *o, const char *env_var,
		    const char **argv, int *status, int *why)
{
	char path[64], *out = NULL;

	snprintf(path, sizeof(path), "/sbin/%s", argv[0]);
	*why = run_e2fs_tool(o, path, env_var, argv, NULL, -1, 1, &out,
			     status);
	if (!*why && (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0))
		fputs(out, stderr);
	free(out);
	return *why || !WIFEXITED(*status) || WEXITSTATUS(*status) ? -1 : 0;
}

int run_e2fsck_fn(const struct mkfs_opts *o)
{
	const char *argv[] = { "e2fsck", "-fn", o->image, NULL };
	int status, why;

	return run_tool(o, "MKFS_EXTREF_E2FSCK", argv, &status, &why);
}

static void say_failed(const struct mkfs_opts *o, const char *tool,
		       int status, int why)
{
	if (why)
		error_line("%s: cannot run %s: %s", o->image, tool,
			   strerror(why));
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		error_line("%s: cannot run %s: not found (install e2fsprogs)",
			   o->image, tool);
	else
		error_line("%s: %s failed (%s %d)", o->image, tool,
			   WIFEXITED(status) ? "exit status" : "signal",
			   WIFEXITED(status) ? WEXITSTATUS(status) :
			   WTERMSIG(status));
}

/* e2undo puts back what was written: 0, or -1 (the undo file kept). */
int run_e2undo(const struct mkfs_opts *o, const char *undo)
{
	const char *argv[] = { "e2undo", undo, o->image, NULL };
	int status, why;

	if (!run_tool(o, "MKFS_EXTREF_E2UNDO", argv, &status, &why)) {
		unlink(undo);
		return 0;
	}
	say_failed(o, "e2undo", status, why);
	error_line("%s: the undo file %s is kept", o->image, undo);
	return -1;
}

const char *convert_undo_file(const struct mkfs_opts *o)
{
	static char path[PATH_MAX];

	if (extref_build_convert_undo_name(o->image, path, sizeof(path)))
		fatal("%s: name too long", o->image);
	return path;
}
