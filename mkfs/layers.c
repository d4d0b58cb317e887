/*
 * layers.c --- mkfs.extref -d A.tar -d B.tar ..., -d layers:LIST, -d
 * oci:DIR[:TAG]: archives applied in order as the layers of an OCI
 * container image (extref_populate_layers): a later entry replaces an
 * earlier one, the whiteouts (.wh.NAME, .wh..wh..opq) delete; the
 * library reads an image layout's layers (extref_build_input_open).
 * LIST names one archive a line (empty lines and lines starting with #
 * skipped; a relative name is taken from the current directory).
 *
 * Unless --dedup says otherwise, layers are built with --dedup=block:
 * a block equal across layers (a file a later layer repeats or touches)
 * is stored once.  Every layer is a file (read twice without SIZE: once
 * to size the image, as the sum of the layers, then to build it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <et/com_err.h>
#include "extref_builder.h"
#include "mkfs.h"

void layers_add(struct mkfs_layers *l, const char *name, int fd)
{
	const char **names = realloc(l->names, (l->n + 1) * sizeof(*names));
	int *fds = realloc(l->fds, (l->n + 1) * sizeof(*fds));

	if (!names || !fds)
		fatal("out of memory");
	names[l->n] = name;
	fds[l->n] = fd;
	l->names = names;
	l->fds = fds;
	l->n++;
}

/* The archive name, opened: a regular file. */
static void add_file(struct mkfs_layers *l, const char *name)
{
	struct stat st;
	int fd = open_noblock(name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fatal("cannot read the layer %s: %s", name, strerror(errno));
	if (fstat(fd, &st) < 0)
		fatal("%s: %s", name, strerror(errno));
	if (!S_ISREG(st.st_mode))
		fatal("%s: not a regular file: a layer must be an archive "
		      "file (not a pipe nor a directory)", name);
	layers_add(l, name, fd);
}

/* layers:LIST: one archive a line. */
static void read_list(struct mkfs_layers *l, const char *list)
{
	FILE *f = fopen(list, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f)
		fatal("cannot read the layer list %s: %s", list,
		      strerror(errno));
	while ((len = getline(&line, &cap, f)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (!len || line[0] == '#')
			continue;
		char *name = strdup(line);

		if (!name)
			fatal("out of memory");
		add_file(l, name);
	}
	if (ferror(f))
		fatal("cannot read the layer list %s: %s", list,
		      strerror(errno));
	free(line);
	fclose(f);
	if (!l->n)
		fatal("%s: the layer list names no archive", list);
}

/* oci:DIR[:TAG]: the tag is what follows the last ':' after the last
 * '/' (as skopeo reads it). */
static void read_oci(struct mkfs_layers *l, const char *arg)
{
	char *dir = strdup(arg + 4), *slash, *colon;
	struct extref_build_input_opts io = { 0 };
	struct extref_build_input in;
	errcode_t err;

	if (!dir)
		fatal("out of memory");
	slash = strrchr(dir, '/');
	colon = strrchr(slash ? slash : dir, ':');
	if (colon)
		*colon++ = 0;
	if (!*dir)
		fatal("-d %s: no directory after oci:", arg);
	io.oci_dir = dir;
	io.oci_tag = colon && *colon ? colon : NULL;
	err = extref_build_input_open(&io, &in);
	if (err)
		fatal("%s", in.why ? in.why : error_message(err));
	for (size_t i = 0; i < in.src.n_layers; i++)	/* l's now */
		layers_add(l, in.names[i], in.src.layer_fds[i]);
	in.src.n_layers = 0;
	extref_build_input_close(&in);
	free(dir);
}

static int is_prefixed(const char *s)
{
	return !strncmp(s, "oci:", 4) || !strncmp(s, "layers:", 7);
}

/* The sum of every layer's measure: an upper bound of what they need. */
static void plan(struct mkfs_opts *o, struct mkfs_layers *l)
{
	struct extref_source_size sum = { 0 };

	for (size_t i = 0; i < l->n; i++) {
		struct extref_source_size s = { 0 };
		char *why = NULL;
		errcode_t err;

		err = extref_archive_measure2(l->fds[i], o->blocksize,
					      o->dedup, progress_cb, NULL,
					      &s, &why);
		progress_end();
		if (err == EXT2_ET_NO_MEMORY)
			fatal("%s: %s while reading %s", o->image,
			      error_message(err), l->names[i]);
		if (err) {
			error_line("%s: %s", l->names[i], why ? why :
				   error_message(err));
			free(why);
			exit(1);
		}
		if (lseek(l->fds[i], 0, SEEK_SET) < 0)
			fatal("%s: %s", l->names[i], strerror(errno));
		sum.entries += s.entries;
		sum.data_blocks += s.data_blocks;
		sum.distinct_blocks += s.distinct_blocks;
		sum.meta_blocks += s.meta_blocks;
	}
	o->source_distinct = sum.distinct_blocks;
	if (o->size_arg) {	/* for the message when it is too small */
		o->source_need = (sum.data_blocks + sum.meta_blocks) *
			o->blocksize + sum.entries * 256 + 32 * 1024 * 1024;
		return;
	}
	plan_size(o, &sum);
	o->source_need = o->size_bytes;
}

/* The layers, and their names, until the process ends. */
static struct mkfs_layers *layers;

static void layers_free(void)
{
	for (size_t i = 0; i < layers->n; i++) {
		if (layers->owned)
			free((char *)layers->names[i]);
		close(layers->fds[i]);
	}
	free(layers->names);
	free(layers->fds);
	free(layers);
	layers = NULL;
}

int layers_check(struct mkfs_opts *o)
{
	struct mkfs_layers *l;
	size_t i;

	if (o->nsources < 2 && !is_prefixed(o->source))
		return 0;
	for (i = 0; o->nsources > 1 && i < o->nsources; i++)
		if (is_prefixed(o->sources[i]))
			fatal("-d %s: an OCI layout or a layer list is the "
			      "only -d", o->sources[i]);
	layers = l = calloc(1, sizeof(*l));
	if (!l || atexit(layers_free))
		fatal("out of memory");
	l->oci = 1;
	l->owned = is_prefixed(o->source);	/* names made here */
	if (!strncmp(o->source, "oci:", 4))
		read_oci(l, o->source);
	else if (!strncmp(o->source, "layers:", 7))
		read_list(l, o->source + 7);
	else
		for (i = 0; i < o->nsources; i++)
			add_file(l, o->sources[i]);
	o->layers = l;
	o->archive = l->names[0];
	o->archive_fd = l->fds[0];
	plan(o, l);
	return 1;
}
