/*
 * resize_run.c --- run the stock resize2fs to cut a converted image down
 * (mkfs.extref --convert --shrink), as mke2fs_run.c runs the stock mke2fs.
 *
 * resize2fs moves every block in use above the new end into free blocks
 * below it through one translation table (each old block has one new
 * block, whoever maps it: a block several inodes share stays shared),
 * moves the inodes of the groups it cuts off and rewrites their directory
 * entries, and rewrites the descriptors and the superblock last.
 *
 * It runs with the terminating signals blocked (and we wait with them
 * blocked): a Ctrl-C neither kills it half-way nor leaves it running
 * alone; the signal is taken once it has finished.  Its output is kept
 * and printed only when it fails.  MKFS_EXTREF_RESIZE2FS names another
 * resize2fs (tests); else /sbin/resize2fs, else resize2fs on PATH.
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

#include "mkfs.h"

extern char **environ;

/* Our environment, with LC_ALL=C and the fixed time of SOURCE_DATE_EPOCH
 * (own[] holds what was allocated). */
static char **resize_env(const struct mkfs_opts *o, char *own[2])
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LC_ALL=", 7) &&
		    strncmp(environ[i], "E2FSPROGS_FAKE_TIME=", 20))
			env[k++] = environ[i];
	own[0] = strdup("LC_ALL=C");
	own[1] = NULL;
	if (!own[0] || (o->have_epoch &&
			asprintf(&own[1], "E2FSPROGS_FAKE_TIME=%lld",
				 o->epoch) < 0)) {
		free(own[0]);
		free(env);
		return NULL;
	}
	env[k++] = own[0];
	if (own[1])
		env[k++] = own[1];
	return env;
}

static int spawn_resize(const char **argv, char **env, int out,
			const sigset_t *mask, pid_t *pid)
{
	const char *alt = getenv("MKFS_EXTREF_RESIZE2FS");
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t def;
	int err;

	cleanup_child_sigdefault(&def);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY,
					       0);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, out, 2);
	if (!err)
		err = posix_spawnattr_setsigdefault(&at, &def);
	if (!err)
		err = posix_spawnattr_setsigmask(&at, mask);
	if (!err)
		err = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF |
						    POSIX_SPAWN_SETSIGMASK);
	if (!err && alt && *alt) {
		err = posix_spawn(pid, alt, &fa, &at, (char **)argv, env);
	} else if (!err) {
		err = posix_spawn(pid, "/sbin/resize2fs", &fa, &at,
				  (char **)argv, env);
		if (err)
			err = posix_spawnp(pid, "resize2fs", &fa, &at,
					   (char **)argv, env);
	}
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return err;
}

/* What resize2fs printed (on failure), on standard error. */
static void print_output(int fd)
{
	char buf[4096];
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		(void)!fwrite(buf, 1, (size_t)n, stderr);
}

int run_resize2fs(const struct mkfs_opts *o, blk64_t blocks)
{
	char size[32], *own[2], **env = resize_env(o, own);
	const char *argv[] = { "resize2fs", "-f", o->image, size, NULL };
	int out = memfd_create("resize2fs-output", MFD_CLOEXEC), err, status;
	sigset_t old, blocked;
	pid_t pid;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)blocks);
	if (!env || out < 0) {
		error_line("%s: cannot run resize2fs: %s", o->image,
			   strerror(env ? errno : ENOMEM));
		if (out >= 0)
			close(out);
		free(env);
		return -1;
	}
	fflush(stdout);
	cleanup_block(&old);
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	err = spawn_resize(argv, env, out, &blocked, &pid);
	if (!err)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	free(own[0]);
	free(own[1]);
	free(env);
	if (err)
		error_line("%s: cannot run resize2fs: %s", o->image,
			   strerror(err));
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_output(out);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			error_line("%s: cannot run resize2fs: not found "
				   "(install e2fsprogs)", o->image);
		else
			error_line("%s: resize2fs failed (%s %d) shrinking "
				   "to %s blocks", o->image,
				   WIFEXITED(status) ? "exit status" :
				   "signal", WIFEXITED(status) ?
				   WEXITSTATUS(status) : WTERMSIG(status),
				   size);
		err = -1;
	}
	close(out);
	cleanup_unblock(&old);		/* a signal that came is taken now */
	return err ? -1 : 0;
}
