/*
 * cleanup.c --- what mkfs.extref leaves behind on failure: nothing.
 *
 * The temporary tree (--shrink's hidden directory), the child tool
 * running and the image file mkfs.extref created (or grew) are
 * registered here.  One routine removes them: at
 * exit (error paths end in exit()) and from the handler of every
 * terminating signal a user or a session sends (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT, SIGPIPE, ...), which then re-raises the signal so the exit
 * status tells the caller what happened.  The routine runs in a signal
 * handler, so it uses system calls only: no stdio, no malloc, no nftw
 * (the tree goes by extref_build_remove_tree, which is made so).
 * Registration happens with those signals blocked, so a thing is either
 * registered or does not exist yet.  SIGKILL cannot be caught.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "extref_builder.h"
#include "mkfs.h"

static const int term_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2,
	SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF
};
#define N_SIGNALS (sizeof(term_signals) / sizeof(term_signals[0]))

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

static const char size_msg[] =
	"mkfs.extref: cannot restore the size of the image\n";

/* Undo everything registered.  Async-signal-safe. */
static void run_cleanup(void)
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
		(void)!write(2, size_msg, sizeof(size_msg) - 1);
}

static struct {
	char		text[PATH_MAX + 128];
	size_t		len;
	volatile sig_atomic_t set;
} note;

static void on_signal(int sig)
{
	sigset_t set;

	if (note.set)
		(void)!write(2, note.text, note.len);
	run_cleanup();
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);	/* a signal whose default is not to end us */
}

static void at_exit(void)
{
	sigset_t old;

	/* a signal now would find the work half done: it waits */
	cleanup_block(&old);
	run_cleanup();
}

void cleanup_init(void)
{
	struct sigaction sa, old;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	cleanup_signals(&sa.sa_mask);
	for (i = 0; i < N_SIGNALS; i++) {
		/* a signal ignored on entry (nohup) stays ignored */
		if (sigaction(term_signals[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(term_signals[i], &sa, NULL);
	}
	atexit(at_exit);
}

void cleanup_block(sigset_t *old)
{
	sigset_t set;

	cleanup_signals(&set);
	sigprocmask(SIG_BLOCK, &set, old);
}

void cleanup_unblock(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* The terminating signals this file handles (the library blocks them
 * around a child it starts, and sets them back to default in it). */
void cleanup_signals(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < N_SIGNALS; i++)
		sigaddset(set, term_signals[i]);
}

/* The child to kill and wait for on a signal (0: none), as the library
 * starts and reaps it. */
void cleanup_child(pid_t pid, void *priv)
{
	(void)priv;
	reg.child = pid;
}

static int copy_path(char *dst, const char *src)
{
	size_t n = strlen(src);

	if (n >= PATH_MAX)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

/* Each call is made with the signals blocked (cleanup_block). */
int cleanup_add_tree(const char *path)
{
	if (copy_path(reg.tree, path))
		return -1;
	reg.have_tree = 1;
	return 0;
}

int cleanup_add_image(const char *path, int created, off_t orig_size)
{
	char abs[PATH_MAX];

	/* the image's name is kept absolute: cleanup may run after a chdir */
	if (path[0] != '/') {
		if (!getcwd(abs, sizeof(abs)) ||
		    strlen(abs) + strlen(path) + 2 > sizeof(abs))
			return -1;
		strcat(abs, "/");
		strcat(abs, path);
		path = abs;
	}
	if (copy_path(reg.image, path))
		return -1;
	reg.image_size = created ? -1 : orig_size;
	reg.have_image = 1;
	return 0;
}

void cleanup_keep_image(void)
{
	reg.have_image = 0;
}

void cleanup_undo_image(void)
{
	if (reg.have_image && restore_image() < 0 && reg.image_size >= 0)
		error_line("cannot restore the size of %s: %s", reg.image,
			   strerror(errno));
}

void cleanup_set_note(const char *text)
{
	sigset_t old;

	cleanup_block(&old);
	note.set = 0;
	if (text) {
		snprintf(note.text, sizeof(note.text), "\n%s\n", text);
		note.len = strlen(note.text);
		note.set = 1;
	}
	cleanup_unblock(&old);
}
