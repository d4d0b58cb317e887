/*
 * cleanup.c --- what mkfs.extref leaves behind on failure: nothing.
 *
 * The temporary tree (--shrink's hidden directory), the child tool
 * running and the image file mkfs.extref created (or grew) are
 * registered with the library (extref_build_guard_*), which undoes
 * them by system calls only.  It is run here at exit (error paths end
 * in exit()) and from the handler of every terminating signal a user or
 * a session sends (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, ...),
 * which prints the run's note and then re-raises the signal so the exit
 * status tells the caller what happened.  Registration happens with
 * those signals blocked.  SIGKILL cannot be caught.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extref_builder.h"
#include "mkfs.h"

static const int term_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2,
	SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF
};
#define N_SIGNALS (sizeof(term_signals) / sizeof(term_signals[0]))

static struct {
	char		text[PATH_MAX + 128];
	size_t		len;
	volatile sig_atomic_t set;
} note;

static const char size_msg[] =
	"mkfs.extref: cannot restore the size of the image\n";

/* Undo everything registered (extref_build_guard_run).  Async-signal-
 * safe. */
static void run_cleanup(void)
{
	if (extref_build_guard_run() < 0)
		(void)!write(2, size_msg, sizeof(size_msg) - 1);
}

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

static void block(sigset_t *old)
{
	sigset_t set;

	cleanup_signals(&set);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void at_exit(void)
{
	sigset_t old;

	/* a signal now would find the work half done: it waits */
	block(&old);
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

/* The terminating signals this file handles (the library blocks them
 * around a child it starts, and sets them back to default in it). */
void cleanup_signals(sigset_t *set)
{
	size_t i;

	sigemptyset(set);
	for (i = 0; i < N_SIGNALS; i++)
		sigaddset(set, term_signals[i]);
}

void cleanup_set_note(const char *text)
{
	sigset_t old;

	block(&old);
	note.set = 0;
	if (text) {
		snprintf(note.text, sizeof(note.text), "\n%s\n", text);
		note.len = strlen(note.text);
		note.set = 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}
