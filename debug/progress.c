/*
 * progress.c --- a long command's progress on a terminal: one line on
 * stderr, redrawn in place at most five times a second ("reflinking
 * 1200 of 5000 entries (24%)"), ended with a newline.  Nothing when
 * stderr is not a terminal, so scripts and tests see the output alone.
 */
#include <time.h>
#include <unistd.h>
#include "debugfs.h"

static struct {
	int		drawn;
	struct timespec	last;
} pg;

static int due(void)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - pg.last.tv_sec) * 1000LL +
	     (now.tv_nsec - pg.last.tv_nsec) / 1000000;
	if (pg.drawn && ms < 200)
		return 0;
	pg.last = now;
	return 1;
}

void shell_progress(const char *phase, __u64 done, __u64 total, void *priv)
{
	(void)priv;
	if (!total || (done < total && !due()))
		return;
	fprintf(stderr, "\r%s %llu of %llu entries (%llu%%)", phase,
		(unsigned long long)done, (unsigned long long)total,
		(unsigned long long)(done >= total ? 100 : done * 100 / total));
	pg.drawn = 1;
}

/* The progress function for a command, or NULL off a terminal. */
extref_progress_func shell_progress_on(void)
{
	pg.drawn = 0;
	return isatty(STDERR_FILENO) ? shell_progress : NULL;
}

void shell_progress_end(void)
{
	if (pg.drawn)
		fputc('\n', stderr);
	pg.drawn = 0;
}
