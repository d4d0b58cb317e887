/*
 * e2fsck_run.c --- run the stock e2fsck, the tool made for the ext4 part:
 * fsck.extref runs it before checking the counts, mkfs.extref to leave a
 * new image's directories as e2fsck would (indexed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
#include "extref_fsck.h"

#define MAX_ARGS	16

errcode_t extref_run_e2fsck(const char *image, const char *const *args,
			    int flags, int *status)
{
	const char *argv[MAX_ARGS + 3];
	int argc = 0, st;
	pid_t pid;

	argv[argc++] = "e2fsck";
	while (args && *args && argc <= MAX_ARGS)
		argv[argc++] = *args++;
	if (args && *args)
		return EXT2_ET_INVALID_ARGUMENT;
	argv[argc++] = image;
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		if (flags & EXTREF_E2FSCK_QUIET) {
			int null = open("/dev/null", O_WRONLY);

			if (null >= 0)
				dup2(null, 1);
		}
		execvp("e2fsck", (char **)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return errno;
	/* 127: not found (the shell's convention, as execvp failed) */
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 127)
		return EXTREF_ERR_E2FSCK;
	*status = WEXITSTATUS(st);
	return 0;
}
