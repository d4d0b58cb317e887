/*
 * spawn.c --- start an e2fsprogs tool (mke2fs, e2fsck, e2undo) with
 * posix_spawn (a vfork and an exec: no copy of our address space for a
 * child that only execs).
 *
 * The child gets: /dev/null as standard input, the given descriptor as
 * standard output and error, mke2fs's configuration descriptor when it is
 * a memory file (kept open across the exec: MKE2FS_CONFIG names it
 * through /proc/self/fd), our environment less the variables that would
 * change the tool's work (LC_ALL=C, and the fixed time of
 * SOURCE_DATE_EPOCH, set again), and the signal mask and dispositions we
 * had before cleanup.c took the terminating signals.  A variable
 * (MKFS_EXTREF_MKE2FS, ...) names another binary; else the path found at
 * build time, else the name on PATH.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mkfs.h"

#ifndef MKE2FS_PATH
#define MKE2FS_PATH "/sbin/mke2fs"
#endif

extern char **environ;

/* Variables of ours that mke2fs must not see (set again below or not). */
static const char *const dropped[] = {
	"MKE2FS_CONFIG", "LC_ALL", "MKE2FS_SYNC", "MKE2FS_FIRST_META_BG",
	"MKE2FS_DEVICE_SECTSIZE", "MKE2FS_DEVICE_PHYS_SECTSIZE",
	"E2FSPROGS_FAKE_TIME"
};

static int is_dropped(const char *var)
{
	size_t n = strcspn(var, "=");

	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		if (strlen(dropped[i]) == n && !strncmp(var, dropped[i], n))
			return 1;
	return 0;
}

/* The child's environment; the strings of ours in own[] (MKE2FS_CONFIG
 * only with conf). */
static char **child_env(const struct mkfs_opts *o, const char *conf,
			char *own[3])
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!is_dropped(environ[i]) ||
		    (!conf && !strncmp(environ[i], "MKE2FS_CONFIG=", 14)))
			env[k++] = environ[i];	/* no conf: the user's */
	own[0] = own[1] = own[2] = NULL;
	if ((conf && asprintf(&own[0], "MKE2FS_CONFIG=%s", conf) < 0) ||
	    !(own[1] = strdup("LC_ALL=C")) ||
	    (o->have_epoch &&
	     asprintf(&own[2], "E2FSPROGS_FAKE_TIME=%lld", o->epoch) < 0)) {
		free(own[0]);
		free(own[1]);
		free(env);
		return NULL;
	}
	for (int i = 0; i < 3; i++)
		if (own[i])
			env[k++] = own[i];
	return env;
}

static int spawn_one(pid_t *pid, const char *path, int search,
		     const posix_spawn_file_actions_t *fa,
		     const posix_spawnattr_t *at, const char **argv,
		     char **env)
{
	if (search)
		return posix_spawnp(pid, path, fa, at, (char **)argv, env);
	return posix_spawn(pid, path, fa, at, (char **)argv, env);
}

int spawn_tool(const struct mkfs_opts *o, const struct spawn_req *r,
	       const char **argv, int out, const sigset_t *mask, pid_t *pid)
{
	const char *alt = getenv(r->env_var);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t def;
	char *own[3], **env = child_env(o, r->conf, own);
	int err;

	if (!env)
		return ENOMEM;
	cleanup_child_sigdefault(&def);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	err = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY,
					       0);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, out, 1);
	if (!err)
		err = posix_spawn_file_actions_adddup2(&fa, out, 2);
	/* the same descriptor: kept open across the exec */
	if (!err && r->conf_fd >= 0)
		err = posix_spawn_file_actions_adddup2(&fa, r->conf_fd,
						       r->conf_fd);
	if (!err)
		err = posix_spawnattr_setsigdefault(&at, &def);
	if (!err)
		err = posix_spawnattr_setsigmask(&at, mask);
	if (!err)
		err = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF |
						    POSIX_SPAWN_SETSIGMASK);
	if (!err && alt && *alt) {
		err = spawn_one(pid, alt, 0, &fa, &at, argv, env);
	} else if (!err) {
		err = spawn_one(pid, r->path, 0, &fa, &at, argv, env);
		if (err)
			err = spawn_one(pid, r->name, 1, &fa, &at, argv, env);
	}
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 3; i++)
		free(own[i]);
	free(env);
	return err;
}

int spawn_mke2fs(const struct mkfs_opts *o, const char **argv,
		 const char *conf, int conf_fd, int out, const sigset_t *mask,
		 pid_t *pid)
{
	const struct spawn_req r = {
		"mke2fs", MKE2FS_PATH, "MKFS_EXTREF_MKE2FS", conf, conf_fd
	};

	return spawn_tool(o, &r, argv, out, mask, pid);
}
