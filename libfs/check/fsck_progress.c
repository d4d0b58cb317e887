/*
 * fsck_progress.c --- the progress reports of the passes and of the
 * driver (fsck.c), through the caller's extref_fsck_opts.progress.
 */
#include "extref_fsck_int.h"

/*
 * Progress, told once: a full run after the probe passes over the
 * reports the probe made (the same ones, in the same order: the probe
 * stops early, never goes another way).
 */
void xr_fsck_progress(struct xr_fsck *c, int pass, __u64 done, __u64 total)
{
	if (!c->opts->progress)
		return;
	if (c->progress_skip) {
		c->progress_skip--;
		return;
	}
	c->progress_calls++;
	c->opts->progress(pass, done, total, c->opts->priv);
}
