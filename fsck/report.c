/*
 * report.c --- how fsck.extref prints problems and progress.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
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
	static int last_named = -1;
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
	else if (o->verbose && done == total && pass > last_named) {
		/* a pass may report in several stretches: name it once */
		printf("%s\n", pass_name[pass & 3]);
		last_named = pass;
	}
	fflush(stdout);
}

void progress_done(const struct fsck_opts *o)
{
	if (o->progress_fd == 0 && isatty(1))
		printf("\r%60s\r", "");
}

/*
 * Asking, as e2fsck does when run on a terminal without -n, -p or -y:
 * "QUESTION<y>? " and an answer on a line: y or Enter is yes, n is no,
 * a is yes to this and every later question.  End of input is no.
 */
int ask_yes_no(struct fsck_opts *o, const char *question)
{
	char line[64];
	const char *a;

	if (o->answer_all) {
		printf("%s? yes\n\n", question);
		return 1;
	}
	for (;;) {
		printf("%s<y>? ", question);
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin)) {
			printf("no\n\n");
			return 0;
		}
		for (a = line; isspace((unsigned char)*a); a++)
			;
		switch (tolower((unsigned char)*a)) {
		case '\0':
		case 'y':
			printf("yes\n\n");
			return 1;
		case 'n':
			printf("no\n\n");
			return 0;
		case 'a':
			o->answer_all = 1;
			printf("yes to all\n\n");
			return 1;
		}
		printf("Please answer y (yes), n (no) or a (yes to all).\n");
	}
}

int ask_problem(const struct extref_problem_report *r, void *priv)
{
	struct fsck_opts *o = priv;
	char question[256];

	printf("%s\n", r->message);
	snprintf(question, sizeof(question), "%s", r->fix_text);
	if (question[0])
		question[0] = toupper((unsigned char)question[0]);
	return ask_yes_no(o, question);
}
