/*
 * e2fsck_run.c --- run the stock e2fsck first, in the matching mode, so
 * that directories, link counts, bitmaps and the journal are checked by
 * the tool made for them.
 */
#include <stdio.h>
#include "fsck.h"

/*
 * -n on an image whose journal holds committed transactions (a change
 * interrupted after its commit: an --update, a repair, a write): stock
 * e2fsck -n does not replay a journal, so it would check a state nobody
 * will see, and report what those transactions change as errors.  It is
 * not run then; the check is the library's, of the image as the replay
 * leaves it (open_checked).  Returns how many there are (0: none, or a
 * journal the library cannot replay, e2fsck's to judge).
 */
unsigned journal_pending(const struct fsck_opts *o)
{
	extref_fs_t xfs;
	unsigned n;

	if (o->mode != EXTREF_FSCK_NO || o->no_replay || !o->needs_recovery)
		return 0;
	if (extref_fs_open(o->image, EXTREF_OPEN_NO_TREE, &xfs, NULL))
		return 0;
	n = extref_fs_replay_error(xfs) ? 0 : extref_fs_replayed(xfs);
	extref_fs_abort(xfs);
	if (n)
		printf("%s: stock e2fsck -n not run: it does not replay a "
		       "journal, and this one holds %u committed transaction%s "
		       "(a change interrupted after its commit), which it would "
		       "report as errors\n", o->image, n, n == 1 ? "" : "s");
	return n;
}

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
