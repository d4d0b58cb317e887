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
 * Each run keeps an undo file (resize2fs -z, e2fsprogs' undo_io: the old
 * contents of every block it overwrites, saved before the write): when
 * resize2fs fails or is killed, or stock e2fsck -fn finds what it left
 * damaged (resize2fs 1.47.0 has been seen to corrupt extents when it
 * shrinks: e2fsprogs issue #146), e2undo puts every block back and the
 * image is as it was before the run.  The undo file is removed after a
 * run that succeeded and checked clean or was rolled back, and kept
 * (named in the error) when the rollback fails.
 *
 * It runs with the terminating signals blocked (and we wait with them
 * blocked): a Ctrl-C neither kills it half-way nor leaves it running
 * alone; the signal is taken once it has finished.  Its output is kept
 * and printed only when it fails.  MKFS_EXTREF_RESIZE2FS and
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

#include "mkfs.h"

/* What the tool printed (on failure), on standard error. */
static void print_output(int fd)
{
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf;

	if (size <= 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	    !(buf = malloc((size_t)size)))
		return;
	if (read(fd, buf, (size_t)size) == size)
		(void)!fwrite(buf, 1, (size_t)size, stderr);
	free(buf);
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
	int out = memfd_create("tool-output", MFD_CLOEXEC), err;
	char path[64];
	struct spawn_req r = { argv[0], path, env_var, NULL, -1 };
	sigset_t old, blocked;
	pid_t pid;

	*status = 0;
	if (out < 0) {
		*why = errno;
		return -1;
	}
	snprintf(path, sizeof(path), "/sbin/%s", argv[0]);
	fflush(stdout);
	cleanup_block(&old);
	sigprocmask(SIG_BLOCK, NULL, &blocked);
	err = spawn_tool(o, &r, argv, out, &blocked, &pid);
	if (!err)
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
	*why = err;
	if (!err && (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0))
		print_output(out);
	close(out);
	cleanup_unblock(&old);		/* a signal that came is taken now */
	return err || !WIFEXITED(*status) || WEXITSTATUS(*status) ? -1 : 0;
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

/* e2undo puts back what resize2fs wrote: 0, or -1 (the undo file kept). */
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

const char *undo_file(const struct mkfs_opts *o, enum undo_kind kind)
{
	static const char *const suffix[] = {
		[UNDO_CUT] = ".e2undo",
		[UNDO_TAIL] = ".tail.e2undo",
		[UNDO_LAYOUT] = ".layout.e2undo",
		[UNDO_CONVERT] = ".convert.e2undo",
	};
	static char path[4][PATH_MAX];

	if (snprintf(path[kind], sizeof(path[kind]), "%s%s", o->image,
		     suffix[kind]) >= (int)sizeof(path[kind]))
		fatal("%s: name too long", o->image);
	return path[kind];
}

/* A run that went through but left a damaged image: its undo file,
 * then the tail's (the file was cut). */
static int take_back_whole(const struct mkfs_opts *o, const char *undo)
{
	if (run_e2undo(o, undo))
		return -1;
	return run_e2undo(o, undo_file(o, UNDO_TAIL)) ? -1 : 0;
}

static int resize_or_undo(const struct mkfs_opts *o, const char **argv,
			  const char *size, const char *undo, blk64_t blocks)
{
	int status, why;
	errcode_t err;

	unlink(undo);
	err = resize_tail_save(o->image, blocks, undo_file(o, UNDO_TAIL));
	if (err) {
		error_line("%s: %s while saving the blocks above %s for the "
			   "undo file", o->image, error_message(err), size);
		return -2;	/* nothing changed */
	}
	if (!run_tool(o, "MKFS_EXTREF_RESIZE2FS", argv, &status, &why)) {
		/* kept until stock e2fsck finds the result clean */
		if (!run_e2fsck_fn(o)) {
			unlink(undo);
			unlink(undo_file(o, UNDO_TAIL));
			return 0;
		}
		error_line("%s: e2fsck -fn finds the image damaged after "
			   "resize2fs (above)", o->image);
		if (take_back_whole(o, undo))
			return -1;
	} else {
		say_failed(o, "resize2fs", status, why);
		/* it cuts the file only at the end of a run that went
		 * through: its own undo file is enough */
		unlink(undo_file(o, UNDO_TAIL));
		if (why || access(undo, F_OK))
			return -2;	/* never started: nothing changed */
		if (run_e2undo(o, undo))
			return -1;
	}
	error_line("%s: rolled back with e2undo: the image is as before the "
		   "cut to %s blocks", o->image, size);
	/*
	 * Never run again without the undo file: a failure there could not
	 * be taken back.  (e2fsprogs 1.47.0's undo manager fails a second
	 * resize2fs of some 1 KiB-block images with "Corrupt extent header"
	 * where a run without it succeeds: such an image stays at the first
	 * cut's size, sound.)
	 */
	return -2;
}

int run_resize2fs(const struct mkfs_opts *o, blk64_t blocks,
		  const char *undo)
{
	char size[32];
	const char *argv[] = { "resize2fs", "-f", "-z", undo, o->image, size,
			       NULL };
	sigset_t old;
	int rc;

	snprintf(size, sizeof(size), "%llu", (unsigned long long)blocks);
	/* a signal waits until the undo file is gone or named */
	cleanup_block(&old);
	rc = resize_or_undo(o, argv, size, undo, blocks);
	cleanup_unblock(&old);
	return rc;
}
