/*
 * archive_dl.c --- open libarchive at the first archive (archive_dl.h
 * says why it is not linked).  Once: the handle stays open for the life
 * of the process, and a failure is remembered with the loader's message.
 */
#define XR_ARCHIVE_LOADER
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "extref_err.h"
#include "archive_dl.h"

struct xr_archive_api xr_archive;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static errcode_t load_err;
static char load_why[256];

static void fail(const char *what)
{
	const char *e = dlerror();

	snprintf(load_why, sizeof(load_why), "%s: %s", what,
		 e ? e : "not found");
	load_err = EXTREF_ERR_ARCHIVE_LIB;
}

/* Look up every function; a missing one fails the whole load. */
static int lookup(void *h)
{
#define XR_ARCHIVE_SYM(name) \
	*(void **)&xr_archive.name = dlsym(h, #name); \
	if (!xr_archive.name) { \
		fail(XR_ARCHIVE_SONAME " lacks " #name); \
		return -1; \
	}
	XR_ARCHIVE_FUNCS(XR_ARCHIVE_SYM)
#undef XR_ARCHIVE_SYM
	return 0;
}

static void load(void)
{
	void *h = dlopen(XR_ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fail("cannot load libarchive, needed to read an archive");
		return;
	}
	if (lookup(h)) {
		memset(&xr_archive, 0, sizeof(xr_archive));
		dlclose(h);
	}
}

errcode_t xr_archive_load(const char **why)
{
	pthread_once(&load_once, load);
	if (load_err && why)
		*why = load_why;
	return load_err;
}
