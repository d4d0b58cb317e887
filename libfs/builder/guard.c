/*
 * guard.c --- what a build leaves behind when it fails or is stopped:
 * nothing (extref_build_guard_*).
 *
 * One registry per process, for a tool's signal handlers and its exit:
 * the build's temporary tree (a shrink's hidden directory), the child
 * tool running (mke2fs, e2fsck, e2undo, resize2fs) and the image file
 * the build created (or grew).  extref_build_guard_run undoes them with
 * system calls only: no stdio, no malloc, no nftw (the tree goes by
 * extref_build_remove_tree, which is made so), so that a signal
 * handler may call it.  The caller registers with its terminating
 * signals blocked, so that a thing is either registered or does not
 * exist yet.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "extref.h"
#include "extref_builder.h"

static struct {
	char		tree[PATH_MAX];
	char		image[PATH_MAX];
	off_t		image_size;	/* size to restore, or -1: remove */
	volatile sig_atomic_t have_tree, have_image;
	volatile pid_t	child;
} reg;

/* The image as it was: removed, or cut back to its size; 0 or -1
 * (errno set).  Async-signal-safe. */
static int restore_image(void)
{
	reg.have_image = 0;
	if (reg.image_size < 0)
		return unlink(reg.image);
	return truncate(reg.image, reg.image_size);
}

int extref_build_guard_run(void)
{
	pid_t child = reg.child;

	if (child > 0) {
		reg.child = 0;
		kill(child, SIGKILL);
		while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (reg.have_tree) {
		reg.have_tree = 0;
		extref_build_remove_tree(reg.tree);
	}
	if (reg.have_image && restore_image() < 0 && reg.image_size >= 0)
		return -1;
	return 0;
}

void extref_build_guard_child(pid_t pid, void *priv)
{
	(void)priv;
	reg.child = pid;
}

static int copy_path(char *dst, const char *src)
{
	size_t n = strlen(src);

	if (n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dst, src, n + 1);
	return 0;
}

int extref_build_guard_tree(const char *path)
{
	if (copy_path(reg.tree, path))
		return -1;
	reg.have_tree = 1;
	return 0;
}

int extref_build_guard_image(const char *path, int created, __u64 orig_size)
{
	char abs[PATH_MAX];

	/* the image's name is kept absolute: cleanup may run after a chdir */
	if (path[0] != '/') {
		if (!getcwd(abs, sizeof(abs)) ||
		    strlen(abs) + strlen(path) + 2 > sizeof(abs)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		strcat(abs, "/");
		strcat(abs, path);
		path = abs;
	}
	if (copy_path(reg.image, path))
		return -1;
	reg.image_size = created ? -1 : (off_t)orig_size;
	reg.have_image = 1;
	return 0;
}

void extref_build_guard_keep(void)
{
	reg.have_image = 0;
}

int extref_build_guard_undo(void)
{
	if (reg.have_image && restore_image() < 0 && reg.image_size >= 0)
		return -1;
	return 0;
}
