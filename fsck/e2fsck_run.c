/*
 * e2fsck_run.c --- run the stock e2fsck first, in the matching mode, so
 * that directories, link counts, bitmaps and the journal are checked by
 * the tool made for them.
 */
#include <stdio.h>
#include "fsck.h"

/* e2fsck's exit status, or FSCK_ERROR when it could not be run. */
int run_e2fsck(const struct fsck_opts *o)
{
	const char *args[6];
	char fdbuf[16];
	int n = 0, status;
	errcode_t err;

	args[n++] = "-f";
	/* ASK: no mode option, e2fsck asks on the same terminal */
	if (o->mode != EXTREF_FSCK_ASK)
		args[n++] = o->mode == EXTREF_FSCK_NO ? "-n" :
			    o->mode == EXTREF_FSCK_PREEN ? "-p" : "-y";
	if (o->progress_fd >= 0) {
		snprintf(fdbuf, sizeof(fdbuf), "%d", o->progress_fd);
		args[n++] = "-C";
		args[n++] = fdbuf;
	}
	args[n] = NULL;
	err = extref_run_e2fsck(o->image, args, 0, &status);
	if (err) {
		fprintf(stderr, "%s: e2fsck not found or failed (%s); install "
			"e2fsprogs or skip it with -E no_e2fsck\n", prog,
			error_message(err));
		return FSCK_ERROR;
	}
	return status;
}
