/*
 * layers.c --- mkfs.extref -d A.tar -d B.tar ..., -d layers:LIST, -d
 * oci:DIR[:TAG]: archives applied in order as the layers of an OCI
 * container image (extref_populate_layers): a later entry replaces an
 * earlier one, the whiteouts (.wh.NAME, .wh..wh..opq) delete.  The
 * library opens, checks and measures them (extref_build_input_open):
 * this reads the -d arguments and says what it refused.
 *
 * Unless --dedup says otherwise, layers are built with --dedup=block:
 * a block equal across layers (a file a later layer repeats or touches)
 * is stored once.  Every layer is a file (read twice without SIZE: once
 * to size the image, as the sum of the layers, then to build it).
 */
#include <stdlib.h>
#include <string.h>

#include <et/com_err.h>
#include "extref_builder.h"
#include "mkfs.h"

/* The layers, their names and descriptors, until the process ends. */
static struct extref_build_input layers = { .src = { .archive_fd = -1 } };

/* oci:DIR[:TAG] into io: the tag is what follows the last ':' after the
 * last '/' (as skopeo reads it).  The copy of DIR returned is io's. */
static char *oci_arg(const char *arg, struct extref_build_input_opts *io)
{
	char *dir = strdup(arg + 4), *slash, *colon;

	if (!dir)
		fatal("out of memory");
	slash = strrchr(dir, '/');
	colon = strrchr(slash ? slash : dir, ':');
	if (colon)
		*colon++ = 0;
	if (!*dir)
		fatal("-d %s: no directory after oci:", arg);
	io->oci_dir = dir;
	io->oci_tag = colon && *colon ? colon : NULL;
	return dir;
}

static int is_prefixed(const char *s)
{
	return !strncmp(s, "oci:", 4) || !strncmp(s, "layers:", 7);
}

int layers_check(struct mkfs_opts *o)
{
	struct extref_build_input_opts io;
	char *dir = NULL;
	errcode_t err;
	size_t i;

	if (o->nsources < 2 && !is_prefixed(o->source))
		return 0;
	for (i = 0; o->nsources > 1 && i < o->nsources; i++)
		if (is_prefixed(o->sources[i]))
			fatal("-d %s: an OCI layout or a layer list is the "
			      "only -d", o->sources[i]);
	memset(&io, 0, sizeof(io));
	if (!strncmp(o->source, "oci:", 4)) {
		dir = oci_arg(o->source, &io);
	} else if (!strncmp(o->source, "layers:", 7)) {
		io.layer_list = o->source + 7;
	} else {
		io.layers = o->sources;
		io.n_layers = o->nsources;
	}
	io.flags = o->size_arg ? EXTREF_SOURCE_SIZED : 0;
	io.image = o->image;
	io.blocksize = o->blocksize;
	io.dedupe = o->dedup;
	io.progress = progress_cb;
	err = extref_build_input_open(&io, &layers);
	progress_end();
	free(dir);
	if (err)
		fatal("%s", layers.why ? layers.why : error_message(err));
	o->layers = &layers;
	o->archive = layers.names[0];
	o->source_distinct = layers.size.distinct_blocks;
	if (o->size_arg) {	/* for the message when it is too small */
		o->source_need = layers.need;
		return 1;
	}
	plan_size(o, &layers.size);
	o->source_need = o->size_bytes;
	return 1;
}
