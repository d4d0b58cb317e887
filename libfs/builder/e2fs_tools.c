/*
 * e2fs_tools.c --- the stock e2fsck -fn (a clean check before a build
 * writes) and e2undo (an image put back) run for a build, as
 * extref_build_run_tool runs a tool, holding the caller's terminating
 * signals: a Ctrl-C neither kills them half-way nor leaves them running
 * alone; the signal is taken once they have finished.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build_int.h"

/* argv[0] run holding the signals (/sbin/NAME unless t->path); 0 when
 * it exited 0, else an errno value or EXTREF_ERR_TOOL_FAILED with why
 * the line that says so ("IMAGE: ..."). */
static errcode_t run_held(const char *image, const char *const *argv,
			  const struct extref_build_opts *o,
			  struct extref_build_tool *t, char *why, size_t len)
{
	const char *given = t->path, *name = argv[0];
	char path[64];
	errcode_t err;
	int st;

	snprintf(path, sizeof(path), "/sbin/%s", name);
	t->name = name;
	t->path = given ? given : path;
	t->conf = NULL;
	t->conf_fd = -1;
	t->hold_signals = 1;
	err = extref_build_run_tool(argv, o, t);
	t->path = given;
	st = t->status;
	if (err)
		snprintf(why, len, "%s: cannot run %s: %s", image, name,
			 strerror((int)err));
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	else if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		snprintf(why, len, "%s: cannot run %s: not found (install "
			 "e2fsprogs)", image, name);
	else
		snprintf(why, len, "%s: %s failed (%s %d)", image, name,
			 WIFEXITED(st) ? "exit status" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return err ? err : EXTREF_ERR_TOOL_FAILED;
}

errcode_t extref_build_e2fsck_fn(const char *image,
				 const struct extref_build_opts *o,
				 struct extref_build_tool *t,
				 char *why, size_t len)
{
	const char *argv[] = { "e2fsck", "-fn", image, NULL };

	return run_held(image, argv, o, t, why, len);
}

errcode_t extref_build_e2undo(const char *undo_file, const char *image,
			      const struct extref_build_opts *o,
			      struct extref_build_tool *t,
			      char *why, size_t len)
{
	const char *argv[] = { "e2undo", undo_file, image, NULL };
	errcode_t err = run_held(image, argv, o, t, why, len);

	if (!err)
		unlink(undo_file);
	return err;
}
