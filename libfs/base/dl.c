/*
 * dl.c --- open a library at its first use (xr_dl.h).  The handle stays
 * open for the life of the process.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "xr_dl.h"

static void fail(struct xr_dl *d, const char *what, const char *name)
{
	const char *e = dlerror();

	snprintf(d->why, sizeof(d->why), "%s%s%s: %s", what,
		 name ? " " : "", name ? name : "", e ? e : "not found");
	d->err = d->fail_code;
}

static void load(struct xr_dl *d)
{
	char what[128];
	void *h = dlopen(d->soname, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (!h) {
		snprintf(what, sizeof(what), "cannot load %s, needed %s",
			 d->soname, d->need);
		fail(d, what, NULL);
		return;
	}
	for (i = 0; i < d->n; i++) {
		d->slots[i] = dlsym(h, d->names[i]);
		if (!d->slots[i]) {
			snprintf(what, sizeof(what), "%s lacks", d->soname);
			fail(d, what, d->names[i]);
			memset(d->slots, 0, d->n * sizeof(*d->slots));
			dlclose(h);
			return;
		}
	}
}

errcode_t xr_dl_load(struct xr_dl *d, const char **why)
{
	pthread_mutex_lock(&d->lock);
	if (!d->done) {
		load(d);
		d->done = 1;
	}
	pthread_mutex_unlock(&d->lock);
	if (d->err && why)
		*why = d->why;
	return d->err;
}
