/*
 * input.c --- extref_build_input_open: the source of a build opened and
 * checked before the image is made, and why one is refused, said.
 *
 * Paths that are to be files are opened without blocking
 * (xr_open_noblock): open(2) of a FIFO with no writer waits forever, so
 * the path is opened O_NONBLOCK (which a FIFO opened for reading honours
 * at once) and O_NONBLOCK is cleared again before the descriptor is
 * used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <et/com_err.h>
#include "input_int.h"

errcode_t xr_input_fail(struct extref_build_input *in, errcode_t err,
			const char *fmt, ...)
{
	va_list ap;

	if (in->why)
		return err;		/* the first reason stands */
	va_start(ap, fmt);
	if (vasprintf(&in->why, fmt, ap) < 0)
		in->why = NULL;
	va_end(ap);
	return err;
}

errcode_t xr_input_errno(struct extref_build_input *in, const char *name)
{
	int e = errno;

	return xr_input_fail(in, e, "%s: %s", name, strerror(e));
}

errcode_t xr_input_unreadable(struct extref_build_input *in,
			      const char *name)
{
	int e = errno;

	return xr_input_fail(in, e, "cannot read %s: %s", name, strerror(e));
}

errcode_t xr_input_nomem(struct extref_build_input *in)
{
	return xr_input_fail(in, EXT2_ET_NO_MEMORY, "out of memory");
}

errcode_t xr_input_measure_fail(const struct extref_build_input_opts *o,
				struct extref_build_input *in, errcode_t err,
				const char *name, char *why)
{
	if (err == EXT2_ET_NO_MEMORY)	/* not the source's fault */
		xr_input_fail(in, err, "%s: %s while reading %s",
			      o->image ? o->image : "the image",
			      error_message(err), name);
	else
		xr_input_fail(in, err, "%s: %s", name, why ? why :
			      error_message(err));
	free(why);
	return err;
}

errcode_t xr_input_add_layer(struct extref_build_input *in, char *name,
			     int fd)
{
	size_t n = in->src.n_layers;
	int *fds = realloc((int *)in->src.layer_fds, (n + 1) * sizeof(*fds));
	char **names = NULL;

	if (fds) {
		in->src.layer_fds = fds;
		names = realloc(in->names, (n + 1) * sizeof(*names));
	}
	if (!names) {
		free(name);
		close(fd);
		return xr_input_nomem(in);
	}
	in->names = names;
	fds[n] = fd;
	names[n] = name;
	in->src.n_layers = n + 1;
	return 0;
}

int xr_open_noblock(const char *path, int flags)
{
	int fd = open(path, flags | O_NONBLOCK);
	int fl;

	if (fd < 0 || (flags & O_NONBLOCK))
		return fd;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

errcode_t extref_build_input_open(const struct extref_build_input_opts *o,
				  struct extref_build_input *in)
{
	int kinds = !!o->path + !!o->n_layers + !!o->layer_list +
		    !!o->oci_dir;
	errcode_t err;

	memset(in, 0, sizeof(*in));
	in->src.archive_fd = -1;
	if (kinds != 1 || ((o->flags & EXTREF_SOURCE_ON_FD) && !o->path))
		return EXT2_ET_INVALID_ARGUMENT;
	err = o->path ? xr_input_path(o, in) : xr_input_layers(o, in);
	if (!err && (o->flags & EXTREF_SOURCE_DIGEST))
		err = xr_input_digest(o, in);
	return err;
}

void extref_build_input_close(struct extref_build_input *in)
{
	for (size_t i = 0; i < in->src.n_layers; i++) {
		close(in->src.layer_fds[i]);
		free(in->names[i]);
	}
	free((int *)in->src.layer_fds);
	free(in->names);
	if (in->src.archive_fd >= 0)
		close(in->src.archive_fd);
	free(in->why);
	memset(in, 0, sizeof(*in));
	in->src.archive_fd = -1;
}
