/*
 * mke2fs_run.c --- extref_build_mke2fs_run: the stock mke2fs run for a
 * build, with our configuration (mke2fs.c) and the one line that says
 * why it failed.
 *
 * The configuration is a memory file (memfd) the child reads through
 * /proc/self/fd: nothing to remove.  Where there is none, it is a
 * temporary file that exists only while the caller's terminating
 * signals are blocked (mke2fs then runs holding them, as e2fsck does):
 * made, used and removed before a signal handler can run.  A dry run
 * (mke2fs -n) of an image that does not exist yet runs on a sparse
 * memory file of its size: no file is made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build_int.h"

/* The configuration in a memory file: its descriptor (closed at exec but
 * in the child, which keeps it), its name in path; -1: none here. */
static int conf_memfd(char *path, size_t len)
{
	const char *conf = extref_build_mke2fs_conf();
	size_t n = strlen(conf);
	int fd = memfd_create("mkfs.extref.conf", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	if (write(fd, conf, n) != (ssize_t)n || access(path, R_OK)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The configuration in a temporary file, its name in path (the caller
 * holds the signals); an errno value, why said. */
static errcode_t conf_file(char *path, size_t len, char *why, size_t wlen)
{
	const char *dir = getenv("TMPDIR"), *conf = extref_build_mke2fs_conf();
	size_t n = strlen(conf);
	int fd, e;

	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(path, len, "%s/mkfs.extref.conf.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0) {
		e = errno;
		snprintf(why, wlen, "cannot create a temporary file in %s: %s",
			 dir, strerror(e));
		return e;
	}
	if (write(fd, conf, n) != (ssize_t)n || close(fd) < 0) {
		e = errno ? errno : EIO;
		snprintf(why, wlen, "cannot write %s: %s", path, strerror(e));
		unlink(path);
		return e;
	}
	return 0;
}

/* mke2fs run, t's conf and conf_fd set; why said on failure. */
static errcode_t run(struct extref_build_mke2fs *m,
		     const struct extref_build_opts *o,
		     struct extref_build_tool *t, char *why, size_t len)
{
	errcode_t err = extref_build_run_tool(m->argv, o, t);

	if (err) {
		snprintf(why, len, "%s: cannot run mke2fs: %s", m->image,
			 strerror((int)err));
		return err;
	}
	if (WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0)
		return 0;
	extref_build_mke2fs_why(m, t->output, t->status, why, len);
	return EXTREF_ERR_MKE2FS;
}

/*
 * A dry run (mke2fs -n) for an image that does not exist yet: a sparse
 * memory file of the planned size (the child's too: not closed at exec),
 * named in m->image for the run; its descriptor, or -1 with why said.
 */
static int scratch_image(struct extref_build_mke2fs *m, char *path,
			 size_t plen, char *why, size_t len)
{
	int fd = memfd_create("mkfs.extref.dry-run", 0), e;

	if (fd < 0 || ftruncate(fd, (off_t)m->fs_bytes) < 0) {
		e = errno;
		snprintf(why, len, "%s: -n on a new image: cannot make a "
			 "memory file of %llu bytes: %s", m->image,
			 (unsigned long long)m->fs_bytes, strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	snprintf(path, plen, "/proc/self/fd/%d", fd);
	m->image = path;
	return fd;
}

static errcode_t run_conf(struct extref_build_mke2fs *m,
			  const struct extref_build_opts *o,
			  struct extref_build_tool *t, char *why, size_t len);

errcode_t extref_build_mke2fs_run(struct extref_build_mke2fs *m,
				  const struct extref_build_opts *o,
				  struct extref_build_tool *t,
				  char *why, size_t len)
{
	const char *image = m->image;
	char path[64];
	errcode_t err;
	int fd;

	t->output = NULL;
	if (!m->scratch)
		return run_conf(m, o, t, why, len);
	fd = scratch_image(m, path, sizeof(path), why, len);
	if (fd < 0)
		return errno;
	err = run_conf(m, o, t, why, len);
	close(fd);
	m->image = image;
	return err;
}

/* mke2fs run with our configuration (or the host's). */
static errcode_t run_conf(struct extref_build_mke2fs *m,
			  const struct extref_build_opts *o,
			  struct extref_build_tool *t, char *why, size_t len)
{
	char conf[4096];
	sigset_t old;
	errcode_t err;

	if (extref_build_mke2fs_argv(m)) {
		snprintf(why, len, "%s: the options for mke2fs are too long",
			 m->image);
		return EXT2_ET_INVALID_ARGUMENT;
	}
	t->conf = NULL;
	t->conf_fd = -1;
	t->hold_signals = 0;
	if (m->host_conf)	/* mke2fs's own (MKE2FS_CONFIG, /etc) */
		return run(m, o, t, why, len);
	t->conf = conf;
	t->conf_fd = conf_memfd(conf, sizeof(conf));
	if (t->conf_fd >= 0) {
		err = run(m, o, t, why, len);
		close(t->conf_fd);
		t->conf_fd = -1;
		t->conf = NULL;
		return err;
	}
	sigprocmask(SIG_BLOCK, t->signals, &old);
	t->hold_signals = 1;
	err = conf_file(conf, sizeof(conf), why, len);
	if (!err) {
		err = run(m, o, t, why, len);
		unlink(conf);
	}
	t->conf = NULL;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return err;
}
