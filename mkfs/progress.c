/*
 * progress.c --- one progress bar on a terminal for each long phase.
 *
 * A phase is named by its caller; its bar is redrawn in place with "\r"
 * and only moves forward (a report below what is shown changes nothing).
 * Redraws are throttled to PROGRESS_HZ a second, whatever the rate of
 * the reports (the library reports once per range deduplicated); the
 * first report of a phase and its end are always drawn.  A phase ends
 * when another begins or at progress_end(): its bar is drawn full and
 * stays on its own line.  Nothing is printed unless progress_init() was
 * told the output is a terminal.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mkfs.h"

#define PROGRESS_HZ	5
#define BAR_WIDTH	30
#define PHASE_WIDTH	24

static struct {
	int		on;
	int		active;		/* a bar is on the current line */
	char		phase[64];
	int		shown;		/* percent drawn; -1 none yet */
	uint64_t	bytes;		/* done, of a phase without a total */
	struct timespec	last;		/* time of the last redraw */
} pg;

void progress_init(int on)
{
	memset(&pg, 0, sizeof(pg));
	pg.on = on;
}

static long long ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000LL +
	       (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* pct < 0: a phase whose size is not known; its name, and the bytes
 * done so far when there are any. */
static void draw(int pct)
{
	char bar[BAR_WIDTH + 1];
	int fill = pct < 0 ? 0 : pct * BAR_WIDTH / 100;

	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '-', (size_t)(BAR_WIDTH - fill));
	bar[BAR_WIDTH] = 0;
	if (pct < 0 && pg.bytes)
		printf("\r%-*s ... %.1f MiB", PHASE_WIDTH, pg.phase,
		       (double)pg.bytes / (1 << 20));
	else if (pct < 0)
		printf("\r%-*s ...", PHASE_WIDTH, pg.phase);
	else
		printf("\r%-*s [%s] %3d%%", PHASE_WIDTH, pg.phase, bar, pct);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &pg.last);
	pg.shown = pct;
}

void progress_end(void)
{
	if (!pg.on || !pg.active)
		return;
	if (pg.shown >= 0 && pg.shown < 100)
		draw(100);
	printf(pg.shown < 0 ? " done\n" : "\n");
	fflush(stdout);
	pg.active = 0;
}

void progress_break(void)
{
	if (!pg.on || !pg.active)
		return;
	printf("\n");
	fflush(stdout);
	pg.active = 0;
}

void progress_update(const char *phase, uint64_t done, uint64_t total)
{
	int pct;

	if (!pg.on)
		return;
	if (!pg.active || strcmp(phase, pg.phase)) {
		progress_end();
		snprintf(pg.phase, sizeof(pg.phase), "%s", phase);
		pg.active = 1;
		pg.shown = -1;
		pg.bytes = total ? 0 : done;
		draw(total ? (int)(done >= total ? 100 : done * 100 / total)
			   : -1);
		return;
	}
	if (!total) {		/* a count of bytes, redrawn as the bar is */
		if (done > pg.bytes && ms_since(&pg.last) >= 1000 / PROGRESS_HZ) {
			pg.bytes = done;
			draw(-1);
		}
		return;
	}
	pct = done >= total ? 100 : (int)(done * 100 / total);
	if (pct <= pg.shown || ms_since(&pg.last) < 1000 / PROGRESS_HZ)
		return;
	draw(pct);
}

void progress_cb(const char *phase, __u64 done, __u64 total, void *priv)
{
	(void)priv;
	progress_update(phase, done, total);
}
