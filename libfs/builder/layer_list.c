/*
 * layer_list.c --- layers as a build's input (extref_build_input_open):
 * archive files applied in order as the layers of an OCI container
 * image, given one by one, named in a list (one archive a line; empty
 * lines and lines starting with # skipped; a relative name is taken from
 * the current directory) or read from an OCI image layout
 * (oci_layout.c).  Every layer is a regular file, opened without
 * blocking, and read twice: once here to measure it (the sum of the
 * layers is an upper bound of what they need), then to build.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input_int.h"

/* The archive name, opened: a regular file. */
static errcode_t add_file(struct extref_build_input *in, const char *name)
{
	struct stat st;
	char *copy = NULL;
	int fd = xr_open_noblock(name, O_RDONLY | O_CLOEXEC), e = errno;
	errcode_t err = 0;

	if (fd < 0)
		return xr_input_fail(in, e, "cannot read the layer %s: %s",
				     name, strerror(e));
	if (fstat(fd, &st) < 0) {
		err = xr_input_errno(in, name);
	} else if (!S_ISREG(st.st_mode)) {
		err = xr_input_fail(in, EXTREF_ERR_SOURCE_TYPE, "%s: not a "
				    "regular file: a layer must be an archive "
				    "file (not a pipe nor a directory)", name);
	} else if (!(copy = strdup(name))) {
		err = xr_input_nomem(in);
	}
	if (err) {
		close(fd);
		return err;
	}
	return xr_input_add_layer(in, copy, fd);
}

/* A layer list: one archive a line. */
static errcode_t read_list(struct extref_build_input *in, const char *list)
{
	FILE *f = fopen(list, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	errcode_t err = 0;

	if (!f) {
		int e = errno;

		return xr_input_fail(in, e, "cannot read the layer list %s: "
				     "%s", list, strerror(e));
	}
	while (!err && (len = getline(&line, &cap, f)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len && line[0] != '#')
			err = add_file(in, line);
	}
	if (!err && ferror(f)) {
		int e = errno ? errno : EIO;

		err = xr_input_fail(in, e, "cannot read the layer list %s: %s",
				    list, strerror(e));
	}
	free(line);
	fclose(f);
	if (!err && !in->src.n_layers)
		err = xr_input_fail(in, EXTREF_ERR_LAYER_LIST, "%s: the layer "
				    "list names no archive", list);
	return err;
}

/* Every layer measured, then rewound; their sum. */
static errcode_t measure(const struct extref_build_input_opts *o,
			 struct extref_build_input *in)
{
	struct extref_source_size *sum = &in->size;

	for (size_t i = 0; i < in->src.n_layers; i++) {
		struct extref_source_size s = { 0 };
		const char *name = in->names[i];
		char *why = NULL;
		errcode_t err;

		err = extref_archive_measure2(in->src.layer_fds[i],
					      o->blocksize, o->dedupe,
					      o->progress, o->priv, &s, &why);
		if (err)
			return xr_input_measure_fail(o, in, err, name, why);
		if (lseek(in->src.layer_fds[i], 0, SEEK_SET) < 0)
			return xr_input_errno(in, name);
		sum->entries += s.entries;
		sum->data_blocks += s.data_blocks;
		sum->distinct_blocks += s.distinct_blocks;
		sum->meta_blocks += s.meta_blocks;
		sum->dir_blocks += s.dir_blocks;
	}
	if (o->flags & EXTREF_SOURCE_SIZED)
		in->need = (sum->data_blocks + sum->meta_blocks) *
			o->blocksize + sum->entries * 256 + 32 * 1024 * 1024;
	return 0;
}

errcode_t xr_input_layers(const struct extref_build_input_opts *o,
			  struct extref_build_input *in)
{
	errcode_t err = 0;

	in->src.layer_flags = EXTREF_LAYERS_OCI;
	if (o->oci_dir)
		err = xr_oci_read(in, o->oci_dir, o->oci_tag);
	else if (o->layer_list)
		err = read_list(in, o->layer_list);
	for (size_t i = 0; !err && i < o->n_layers; i++)
		err = add_file(in, o->layers[i]);
	if (!err)
		err = measure(o, in);
	return err;
}
