/*
 * report.c --- how fsck.extref prints problems and progress.
 */
#include <stdio.h>
#include <unistd.h>
#include "fsck.h"

void print_problem(const struct extref_problem_report *r, void *priv)
{
	const struct fsck_opts *o = priv;

	if (o->mode == EXTREF_FSCK_PREEN)
		printf("%s: %s\n", o->image, r->message);
	else
		printf("%s\n", r->message);
}

static const char *pass_name[] = {
	"Pass R0: Checking the reference-count format",
	"Pass R1: Scanning extent mappings",
	"Pass R2: Checking the reference-count tree",
	"Pass R3: Comparing reference counts",
};

/*
 * -C FD: with FD > 0, lines "PASS DONE TOTAL IMAGE" as e2fsck writes
 * them for a front end; with FD 0, a percentage on a terminal.
 */
void print_progress(int pass, __u64 done, __u64 total, void *priv)
{
	const struct fsck_opts *o = priv;
	char line[256];
	int n;

	if (o->progress_fd > 0) {
		n = snprintf(line, sizeof(line), "%d %llu %llu %s\n",
			     pass + 10, (unsigned long long)done,
			     (unsigned long long)total, o->image);
		if (n > 0 && write(o->progress_fd, line, n) < 0)
			return;
		return;
	}
	if (o->progress_fd == 0 && isatty(1) && total)
		printf("\r%s: %3.0f%%", pass_name[pass & 3],
		       100.0 * done / total);
	else if (o->verbose && done == total)
		printf("%s\n", pass_name[pass & 3]);
	fflush(stdout);
}

void progress_done(const struct fsck_opts *o)
{
	if (o->progress_fd == 0 && isatty(1))
		printf("\r%60s\r", "");
}
