/*
 * input_int.h --- the input of a build (extref_build_input_open), inside
 * the library: input.c opens what the options name and keeps why it
 * refused it; source_kind.c tells a directory, an archive and an image
 * apart and measures it; layer_list.c opens layers (files, a list) and
 * measures them; oci_layout.c reads an OCI image layout's layers;
 * source_digest.c digests what the source holds.
 */
#ifndef EXTREF_INPUT_INT_H
#define EXTREF_INPUT_INT_H

#include "extref_builder.h"

/* err, with in->why (if not yet set) the message fmt makes. */
errcode_t xr_input_fail(struct extref_build_input *in, errcode_t err,
			const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* errno's error (read at once) as "name: strerror", or as "cannot read
 * name: strerror". */
errcode_t xr_input_errno(struct extref_build_input *in, const char *name);
errcode_t xr_input_unreadable(struct extref_build_input *in,
			      const char *name);
/* EXT2_ET_NO_MEMORY, said as "out of memory". */
errcode_t xr_input_nomem(struct extref_build_input *in);
/* The measure of the archive name failed with err: said as the
 * reader's why (malloc'd, may be NULL; freed), or, out of memory, as the
 * image's fault. */
errcode_t xr_input_measure_fail(const struct extref_build_input_opts *o,
				struct extref_build_input *in, errcode_t err,
				const char *name, char *why);
/* One more layer, name (malloc'd: in's now, or freed) open on fd (in's
 * now, or closed). */
errcode_t xr_input_add_layer(struct extref_build_input *in, char *name,
			     int fd);
/*
 * open(path, flags) that does not wait for a FIFO's writer (O_NONBLOCK,
 * cleared again before the descriptor is used); -1 and errno as open's.
 * The caller refuses what fstat of the descriptor (never the path: it
 * may have changed since) says is not a regular file.
 */
int xr_open_noblock(const char *path, int flags);

/* source_kind.c: o->path (a directory, an archive or an image), told
 * apart, opened and measured. */
errcode_t xr_input_path(const struct extref_build_input_opts *o,
			struct extref_build_input *in);

/* layer_list.c: the layers o names (files, a list or an OCI layout),
 * opened and measured. */
errcode_t xr_input_layers(const struct extref_build_input_opts *o,
			  struct extref_build_input *in);

/* oci_layout.c: the layers of the OCI image layout dir (tag's manifest,
 * or its only one), every blob verified, added to in. */
errcode_t xr_oci_read(struct extref_build_input *in, const char *dir,
		      const char *tag);

/* source_digest.c: in->digest, what the source opened in in holds
 * (EXTREF_SOURCE_DIGEST). */
errcode_t xr_input_digest(const struct extref_build_input_opts *o,
			  struct extref_build_input *in);

#endif /* EXTREF_INPUT_INT_H */
