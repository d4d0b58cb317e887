/*
 * tool.c --- extref_build_run_tool: an e2fsprogs tool (mke2fs, e2fsck,
 * e2undo) run to its end for a build, with posix_spawn (a vfork and an
 * exec: no copy of our address space for a child that only execs).
 *
 * The child gets: /dev/null as standard input, a memory file as standard
 * output and error (read back once it has ended), mke2fs's configuration
 * descriptor when it is a memory file (kept open across the exec:
 * MKE2FS_CONFIG names it through /proc/self/fd), our environment less
 * the variables that would change the tool's work (LC_ALL=C, and the
 * fixed time of SOURCE_DATE_EPOCH, set again), and the signal mask the
 * caller had before it blocked its terminating signals; their handlers
 * are the caller's, which the exec sets back to the default (POSIX: a
 * caught signal's action is reset at exec, an ignored one stays
 * ignored, as under nohup).
 * A variable (MKFS_EXTREF_MKE2FS, ...) names another binary; else the
 * path given, else the name on PATH.
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

#include "build_int.h"

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
static char **child_env(const struct extref_build_opts *o, const char *conf,
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
	    (o && (o->flags & EXTREF_BUILD_EPOCH) &&
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

static int spawn_tool(const struct extref_build_opts *o,
		      const struct extref_build_tool *r, const char **argv,
		      int out, const sigset_t *mask, pid_t *pid)
{
	const char *alt = r->env_var ? getenv(r->env_var) : NULL;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	char *own[3], **env = child_env(o, r->conf, own);
	int err;

	if (!env)
		return ENOMEM;
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
		err = posix_spawnattr_setsigmask(&at, mask);
	if (!err)
		err = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
	if (!err && alt && *alt) {
		err = spawn_one(pid, alt, 0, &fa, &at, argv, env);
	} else if (!err) {
		err = r->path ? spawn_one(pid, r->path, 0, &fa, &at, argv,
					  env) : ENOENT;
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

/* Everything the child wrote into fd (a memory file), NUL-ended. */
static char *read_back(int fd)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf;

	if (size < 0)
		size = 0;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return NULL;
	if (lseek(fd, 0, SEEK_SET) < 0 || read(fd, buf, (size_t)size) != size)
		size = 0;
	buf[size] = 0;
	return buf;
}

static void block(const struct extref_build_tool *t, sigset_t *old)
{
	sigprocmask(SIG_BLOCK, t->signals, old);
}

static void told(const struct extref_build_tool *t, pid_t pid)
{
	if (t->child)
		t->child(pid, t->priv);
}

/* Started with the signals blocked and registered (t->child) before one
 * can come; the child's mask: the caller's as it was, or, holding them,
 * blocked. */
static errcode_t start(const char *const *argv,
		       const struct extref_build_opts *o,
		       const struct extref_build_tool *t, int out,
		       sigset_t *old, pid_t *pid)
{
	sigset_t blocked;
	int err;

	block(t, old);
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	err = spawn_tool(o, t, (const char **)argv, out,
			 t->hold_signals ? &blocked : old, pid);
	if (!err)
		told(t, *pid);
	if (!t->hold_signals)
		sigprocmask(SIG_SETMASK, old, NULL);
	return err;
}

/* Reaped and unregistered with no signal in between, so a handler never
 * kills a pid that is no longer the caller's. */
static void reap(const struct extref_build_tool *t, pid_t pid, int *status)
{
	siginfo_t si;
	sigset_t old;

	if (!t->hold_signals)
		while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 &&
		       errno == EINTR)
			;
	if (!t->hold_signals)
		block(t, &old);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	told(t, 0);
	if (!t->hold_signals)
		sigprocmask(SIG_SETMASK, &old, NULL);
}

errcode_t extref_build_run_tool(const char *const *argv,
				const struct extref_build_opts *o,
				struct extref_build_tool *t)
{
	int out = memfd_create("tool-output", MFD_CLOEXEC), err;
	sigset_t old;
	pid_t pid;

	t->output = NULL;
	t->status = 0;
	if (out < 0)
		return errno;
	fflush(stdout);
	err = start(argv, o, t, out, &old, &pid);
	if (!err)
		reap(t, pid, &t->status);
	if (t->hold_signals)	/* a signal that came is taken now */
		sigprocmask(SIG_SETMASK, &old, NULL);
	if (!err && !(t->output = read_back(out)))
		err = ENOMEM;
	close(out);
	return err;
}
