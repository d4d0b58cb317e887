/*
 * xr_dl.h --- a library opened at its first use (dl.c), for the few
 * paths that need one the tools do not link (libarchive, libselinux: see
 * build/archive_dl.h and ops/selinux_dl.h for why).
 */
#ifndef XR_DL_H
#define XR_DL_H

#include <pthread.h>
#include <stddef.h>
#include <ext2fs/ext2fs.h>

struct xr_dl {
	const char	*soname;
	const char	*need;		/* what it is needed for, in messages */
	errcode_t	fail_code;	/* the error a failed load returns */
	const char *const *names;	/* the functions looked up, */
	void		**slots;	/* and where their addresses go */
	size_t		n;
	/* the loader's state: loaded once, a failure remembered */
	pthread_mutex_t	lock;
	int		done;
	errcode_t	err;
	char		why[256];
};

/*
 * Open d->soname and look up every name into its slot, once per process
 * (later calls return the first answer).  A library that is missing or
 * lacks a function leaves every slot NULL: d->fail_code and, when why is
 * not NULL, the loader's message in *why (d's own; do not free).
 */
errcode_t xr_dl_load(struct xr_dl *d, const char **why);

#endif /* XR_DL_H */
