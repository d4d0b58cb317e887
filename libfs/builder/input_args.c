/*
 * input_args.c --- a build's input named as mkfs.extref's -d arguments
 * (extref_build_input_opts.args): one argument is a path, "-" (the
 * archive on standard input, as for tar), "oci:DIR[:TAG]" (an OCI image
 * layout) or "layers:LIST" (a layer list); several are archive files,
 * applied in order as layers.  Told apart here, then opened as the
 * options that name them directly are.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "input_int.h"

static int is_prefixed(const char *s)
{
	return !strncmp(s, "oci:", 4) || !strncmp(s, "layers:", 7);
}

/* oci:DIR[:TAG] into a: the tag is what follows the last ':' after the
 * last '/' (as skopeo reads it).  a->oci_dir is malloc'd. */
static errcode_t oci_arg(const char *arg, struct extref_build_input_opts *a,
			 struct extref_build_input *in)
{
	char *dir = strdup(arg + 4), *slash, *colon;

	if (!dir)
		return xr_input_nomem(in);
	slash = strrchr(dir, '/');
	colon = strrchr(slash ? slash : dir, ':');
	if (colon)
		*colon++ = 0;
	a->oci_dir = dir;
	a->oci_tag = colon && *colon ? colon : NULL;
	if (!*dir)
		return xr_input_fail(in, EXT2_ET_INVALID_ARGUMENT,
				     "-d %s: no directory after oci:", arg);
	return 0;
}

/* The arguments of o as the fields that name a source directly, in a. */
static errcode_t args_to_opts(const struct extref_build_input_opts *o,
			      struct extref_build_input_opts *a,
			      struct extref_build_input *in)
{
	const char *one = o->args[0];
	struct stat st;

	*a = *o;
	a->args = NULL;
	a->n_args = 0;
	for (size_t i = 0; o->n_args > 1 && i < o->n_args; i++)
		if (is_prefixed(o->args[i]))
			return xr_input_fail(in, EXT2_ET_INVALID_ARGUMENT,
					     "-d %s: an OCI layout or a layer "
					     "list is the only -d", o->args[i]);
	if (o->n_args > 1) {
		a->layers = o->args;
		a->n_layers = o->n_args;
	} else if (!strncmp(one, "oci:", 4)) {
		return oci_arg(one, a, in);
	} else if (!strncmp(one, "layers:", 7)) {
		a->layer_list = one + 7;
	} else {
		a->path = one;
	}
	if (a->path && !strcmp(a->path, "-")) {
		if (!fstat(0, &st) && S_ISDIR(st.st_mode))
			return xr_input_fail(in, EXT2_ET_INVALID_ARGUMENT,
					     "-d -: standard input is a "
					     "directory, not an archive");
		a->flags |= EXTREF_SOURCE_ON_FD;
		a->fd = 0;
	}
	return 0;
}

errcode_t xr_input_args(const struct extref_build_input_opts *o,
			struct extref_build_input *in)
{
	struct extref_build_input_opts a;
	errcode_t err;

	memset(&a, 0, sizeof(a));
	err = args_to_opts(o, &a, in);
	if (!err)
		err = xr_input_named(&a, in);
	free((char *)a.oci_dir);
	return err;
}
