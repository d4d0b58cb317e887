/*
 * selinux_dl.c --- open libselinux at the first label (selinux_dl.h says
 * why it is not linked).  Once: the handle stays open for the life of the
 * process, and a failure is remembered with the loader's message.
 */
#define XR_SELINUX_LOADER
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "extref_err.h"
#include "selinux_dl.h"

struct xr_selinux_api xr_selinux;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static errcode_t load_err;
static char load_why[256];

static void fail(const char *what)
{
	const char *e = dlerror();

	snprintf(load_why, sizeof(load_why), "%s: %s", what,
		 e ? e : "not found");
	load_err = EXTREF_ERR_SELINUX_LIB;
}

/* Look up every function; a missing one fails the whole load. */
static int lookup(void *h)
{
#define XR_SELINUX_SYM(name) \
	*(void **)&xr_selinux.name = dlsym(h, #name); \
	if (!xr_selinux.name) { \
		fail(XR_SELINUX_SONAME " lacks " #name); \
		return -1; \
	}
	XR_SELINUX_FUNCS(XR_SELINUX_SYM)
#undef XR_SELINUX_SYM
	return 0;
}

static void load(void)
{
	void *h = dlopen(XR_SELINUX_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fail("cannot load libselinux");
		return;
	}
	if (lookup(h)) {
		memset(&xr_selinux, 0, sizeof(xr_selinux));
		dlclose(h);
	}
}

errcode_t xr_selinux_load(const char **why)
{
	pthread_once(&load_once, load);
	if (load_err && why)
		*why = load_why;
	return load_err;
}
