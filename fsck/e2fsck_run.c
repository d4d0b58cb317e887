/*
 * e2fsck_run.c --- run the stock e2fsck first, in the matching mode, so
 * that directories, link counts, bitmaps and the journal are checked by
 * the tool made for them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "fsck.h"

/* e2fsck's exit status, or FSCK_ERROR when it could not be run. */
int run_e2fsck(const struct fsck_opts *o)
{
	const char *argv[8];
	char fdbuf[16];
	int argc = 0, status;
	pid_t pid;

	argv[argc++] = "e2fsck";
	argv[argc++] = "-f";
	/* ASK: no mode option, e2fsck asks on the same terminal */
	if (o->mode != EXTREF_FSCK_ASK)
		argv[argc++] = o->mode == EXTREF_FSCK_NO ? "-n" :
			       o->mode == EXTREF_FSCK_PREEN ? "-p" : "-y";
	if (o->progress_fd >= 0) {
		snprintf(fdbuf, sizeof(fdbuf), "%d", o->progress_fd);
		argv[argc++] = "-C";
		argv[argc++] = fdbuf;
	}
	argv[argc++] = o->image;
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: cannot run e2fsck: %s\n", prog,
			strerror(errno));
		return FSCK_ERROR;
	}
	if (pid == 0) {
		execvp("e2fsck", (char **)argv);
		fprintf(stderr, "%s: e2fsck not found (%s); install e2fsprogs "
			"or skip it with -E no_e2fsck\n", prog, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return FSCK_ERROR;
	if (WEXITSTATUS(status) == 127)
		return FSCK_ERROR;
	return WEXITSTATUS(status);
}
