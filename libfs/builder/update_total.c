/*
 * update_total.c --- the end of an update's progress bar: what the
 * source holds (the bytes of a directory's regular files, an archive's
 * size), given as the "updating" phase's total, which the walk itself
 * does not know (extref_build_update).
 */
#define _GNU_SOURCE
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>

#include "build_int.h"

static __thread __u64 walked;

static int count_file(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)path; (void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode))
		walked += (__u64)st->st_size;
	return 0;
}

static void total_note(int what, unsigned int n, void *priv)
{
	struct xr_update_total *t = priv;

	t->note(what, n, t->priv);
}

void xr_update_total_begin(struct xr_update_total *t, const char *dir,
			   int layer_fd, struct extref_update *u)
{
	struct stat st;

	memset(t, 0, sizeof(*t));
	if (!u->progress)
		return;
	if (layer_fd >= 0 && fstat(layer_fd, &st) == 0) {
		t->total = (__u64)st.st_size;
	} else if (layer_fd < 0) {
		walked = 0;
		nftw(dir, count_file, 64, FTW_PHYS);
		t->total = walked;
	}
	t->fn = u->progress;
	t->note = u->note;
	t->priv = u->priv;
	t->u = u;
	u->progress = xr_update_total_cb;
	if (u->note)	/* told the caller's priv still */
		u->note = total_note;
	u->priv = t;
}

void xr_update_total_cb(const char *phase, __u64 done, __u64 total,
			void *priv)
{
	struct xr_update_total *t = priv;

	if (!total && !strcmp(phase, "updating"))
		total = t->total > done ? t->total : done;
	t->fn(phase, done, total, t->priv);
}

void xr_update_total_end(struct xr_update_total *t)
{
	if (!t->u)
		return;
	t->u->progress = t->fn;
	t->u->note = t->note;
	t->u->priv = t->priv;
}
