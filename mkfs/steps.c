/*
 * steps.c --- the library's build steps (extref_build_*, extref_builder.h)
 * called for mkfs.extref, and what they did or why they failed said.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <et/com_err.h>
#include <uuid/uuid.h>

#include "extref_builder.h"
#include "mkfs.h"

void build_opts_of(const struct extref_build_args *o, struct extref_build_opts *b)
{
	extref_build_opts_of(o, b);
	b->progress = progress_cb;
}

static void print_made(const char *image, const struct extref_image_info *s)
{
	unsigned long long bytes = s->blocks * s->blocksize;
	char uuid[37];

	uuid_unparse(s->uuid, uuid);
	printf("%s: made an extref filesystem on %s\n", prog, image);
	printf("  size:                 %llu bytes (%.1f MiB), %llu blocks "
	       "of %u bytes\n", bytes, bytes / 1048576.0,
	       (unsigned long long)s->blocks, s->blocksize);
	printf("  inodes:               %u of %u bytes\n", s->inodes,
	       s->inode_size);
	if (s->label[0])
		printf("  label:                %s\n", s->label);
	printf("  UUID:                 %s\n", uuid);
	printf("  journal:              %s\n", s->journal ? "yes" : "no");
	printf("  reference-count tree: empty, in inode %d\n", EXTREF_INO);
}

int format_image(const struct extref_build_args *o)
{
	struct extref_build_opts b;
	struct extref_image_info s;
	errcode_t err;
	int step = 0;

	build_opts_of(o, &b);
	err = extref_build_format(o->image, &b, &s, &step);
	if (err == EXTREF_ERR_NO_EXTENTS)
		error_line("%s: mke2fs made a filesystem without extents "
			   "(from the types of its mke2fs.conf, -t or -T), "
			   "which the extref toolkit requires (-O extent)",
			   o->image);
	else if (err == EXTREF_ERR_BIGALLOC)
		error_line("%s: mke2fs made a bigalloc filesystem (from the "
			   "types of its mke2fs.conf, -t or -T), which the "
			   "extref toolkit does not support", o->image);
	else if (err && step == EXTREF_STEP_OPEN)
		com_err(prog, err, "while opening %s", o->image);
	else if (err && step == EXTREF_STEP_WORK)
		com_err(prog, err, "while creating the reference-count tree "
			"on %s", o->image);
	else if (err)
		com_err(prog, err, "while writing %s", o->image);
	if (err)
		return -1;
	/* a build (-d) has only begun: its summary comes at the end */
	if (!o->quiet && !o->source)
		print_made(o->image, &s);
	return 0;
}

int labels_apply(const struct extref_build_args *o)
{
	struct extref_build_labels l = { .file_contexts = o->file_contexts };
	struct extref_build_opts b;
	errcode_t err;

	build_opts_of(o, &b);
	err = extref_build_label(o->image, &b, &l);
	if (err == EXTREF_ERR_SELINUX_LIB)
		fatal("%s: %s", o->file_contexts, l.why);
	else if (err && !l.path)
		error_line("%s: %s", o->file_contexts, strerror((int)err));
	else if (err && l.bad_ctx)
		error_line("%s: %s: context '%s' of %s: %s", o->image,
			   o->file_contexts, l.bad_ctx, l.path,
			   error_message(err));
	else if (err)
		error_line("%s: %s while labeling %s", o->image,
			   error_message(err), l.path);
	extref_build_labels_free(&l);
	return err ? 1 : 0;
}

/* Without SIZE: the size, the inode count unless -N, the journal and
 * -m 0 of an image for what s says the source holds. */
void plan_size(struct extref_build_args *o, const struct extref_source_size *s)
{
	static char inodes[32], journal[32];
	struct extref_build_plan p = { .blocksize = o->blocksize,
				       .headroom = o->headroom,
				       .journal_mib = o->journal_mib };
	errcode_t err;

	if (o->inode_size)
		sscanf(o->inode_size, "%u", &p.inode_size);
	err = extref_build_plan_size(s, &p);
	if (err)
		fatal("%s: %s while sizing the image", o->image,
		      error_message(err));
	plan.size_bytes = p.bytes;
	o->size_arg = "computed from SOURCE";
	snprintf(journal, sizeof(journal), "size=%u", p.journal_mib);
	plan.journal_opt = journal;
	plan.reserved_zero = 1;
	snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)p.inodes);
	plan.inodes = inodes;	/* unless -N */
}

static double mib(uint64_t bytes)
{
	return bytes / 1048576.0;
}

/* On standard output: file data, stored, saved, sizes in MiB; 0 or 1. */
int summary_print(const struct extref_build_args *o)
{
	struct extref_image_usage u;
	uint64_t file, stored, size;
	errcode_t err;

	err = extref_image_usage(o->image, &u);
	if (err) {
		error_line("%s: %s while reading the summary", o->image,
			   error_message(err));
		return 1;
	}
	file = u.file_blocks * u.blocksize;
	stored = u.stored_blocks * u.blocksize;
	size = u.blocks * u.blocksize;
	printf("%s: %s\n", prog, o->image);
	printf("  file data:             %10.1f MiB (%llu blocks)\n",
	       mib(file), (unsigned long long)u.file_blocks);
	printf("  stored data:           %10.1f MiB (%llu blocks)\n",
	       mib(stored), (unsigned long long)u.stored_blocks);
	printf("  saved:                 %10.1f MiB\n", mib(file - stored));
	printf("  image size:            %10.1f MiB (%u-byte blocks)\n",
	       mib(size), u.blocksize);
	if (u.host_bytes >= 0)
		printf("  allocated on the host: %10.1f MiB\n",
		       mib((uint64_t)u.host_bytes));
	return 0;
}

int dedupe_new(const struct extref_build_args *o)
{
	struct extref_build_opts b;
	errcode_t err;
	int step = 0;

	build_opts_of(o, &b);
	err = extref_build_dedupe(o->image, o->dedup, &b, NULL, NULL, &step);
	progress_end();
	if (err && step == EXTREF_STEP_PUNCH)
		error_line("%s: %s while punching the freed blocks out",
			   o->image, error_message(err));
	else if (err && step == EXTREF_STEP_WRITE)
		error_line("%s: %s while writing", o->image,
			   error_message(err));
	else if (err)
		error_line("%s: %s while deduplicating", o->image,
			   error_message(err));
	return err ? 1 : 0;
}

/* -z: the run's undo file (extref_build_undo_*), held to the end. */
static extref_build_undo_t undo;

int undo_build_begin(const struct extref_build_args *o, const struct extref_build_target *t)
{
	errcode_t err;
	int step = 0;

	err = extref_build_undo_begin(o->image, o->undo, t->orig_size, &undo,
				      &step);
	if (err && step == EXTREF_STEP_OPEN)
		error_line("%s: cannot replace the undo file %s: %s", o->image,
			   o->undo, strerror((int)err));
	else if (err)
		error_line("%s: %s while saving the image in the undo file %s",
			   o->image, error_message(err), o->undo);
	return err ? -1 : 0;
}

int undo_build_end(const struct extref_build_args *o)
{
	errcode_t err = extref_build_undo_end(undo);

	undo = NULL;
	if (err) {
		error_line("%s: %s while writing the undo file %s", o->image,
			   error_message(err), o->undo);
		return -1;
	}
	if (!o->quiet)
		printf("%s: the previous contents can be put back with: "
		       "e2undo %s %s\n", o->image, o->undo, o->image);
	return 0;
}

static int put_back(void *priv)
{
	const struct extref_build_args *o = priv;

	return run_e2undo(o, o->undo);
}

/* The run failed after the save: the image put back (an image the run
 * created or grew is removed or cut by cleanup.c after this). */
void undo_build_abort(const struct extref_build_args *o)
{
	if (!undo)
		return;
	if (!extref_build_undo_abort(undo, put_back, (void *)o))
		error_line("%s: the image was put back as it was (e2undo %s)",
			   o->image, o->undo);
	undo = NULL;
}
