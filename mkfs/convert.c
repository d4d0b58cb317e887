/*
 * convert.c --- mkfs.extref --convert: an existing ext4 image becomes an
 * extref image in place, and --dedup shares the data it already holds.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mkfs.h"
#include "extref_builder.h"

/*
 * The user's image, stopped by a signal between two writes, is as a
 * crash leaves it: consistent for fsck.extref to repair, or put back
 * from the undo file left beside an image file.  Say so.
 */
static void set_interrupted_note(const struct extref_build_args *o, int journaled)
{
	char text[8 * 4096 + 128];

	if (!extref_image_is_blockdev(o->image))
		snprintf(text, sizeof(text), "%s: %s: interrupted; %s", prog,
			 o->image, extref_build_convert_left_note(o->image));
	else if (journaled)
		snprintf(text, sizeof(text), "%s: %s: interrupted while "
			 "deduplicating; its journal holds what was committed: "
			 "run fsck.extref -fy %s (or e2fsck -p) to replay it",
			 prog, o->image, o->image);
	else
		snprintf(text, sizeof(text), "%s: %s: interrupted while "
			 "deduplicating; run fsck.extref -fy %s to repair it",
			 prog, o->image, o->image);
	cleanup_set_note(text);
}

/* A journal replayed first, said as e2fsck says it (and remembered for
 * the refusals that may follow: replay_note.c). */
void replay_said(const struct extref_build_args *o, int what, unsigned int n)
{
	if (what == EXTREF_NOTE_REPLAYED)
		replay_noted(n);
	if (o->quiet)
		return;
	if (what == EXTREF_NOTE_REPLAYING)
		printf("%s: recovering journal\n", o->image);
	else
		printf("%s: journal recovered (%u transaction%s)\n", o->image,
		       n, n == 1 ? "" : "s");
}

/* What the conversion tells on the way (extref_build_convert). */
static void convert_note(int what, unsigned int n, void *priv)
{
	const struct extref_build_args *o = priv;

	if (what == EXTREF_NOTE_REPLAYING || what == EXTREF_NOTE_REPLAYED)
		replay_said(o, what, n);
	else if (what == EXTREF_NOTE_NO_JOURNAL && !o->quiet)
		printf("%s: no journal: each deduplicated range is written "
		       "with its own flushes (slower), and a crash can leave "
		       "counts for fsck.extref to lower; tune2fs -O "
		       "has_journal adds one\n", o->image);
	else if (what == EXTREF_NOTE_WRITING)
		set_interrupted_note(o, n);
	else if (what == EXTREF_NOTE_WRITTEN) {
		progress_end();
		cleanup_set_note(NULL);
	} else if (what == EXTREF_NOTE_CONVERTED && !o->quiet)
		printf("%s: converted to an extref image%s\n", o->image, n ?
		       " (adopted: the blocks its files share kept shared)" : "");
}

/* Stock e2fsck -fn, before anything is written (the image open beside
 * it, unwritten): its report printed when it finds the image damaged. */
static int e2fsck_damaged;

static errcode_t convert_e2fsck(const char *image, void *priv)
{
	const struct extref_build_args *o = priv;

	(void)image;
	e2fsck_damaged = run_e2fsck_fn(o) != 0;
	return e2fsck_damaged ? EXTREF_ERR_E2FSCK : 0;
}

/* Why the conversion failed; 1 (the image put back when it was
 * written: convert_undo_take_back). */
static int convert_failed(const struct extref_build_args *o, errcode_t err, int step,
			  const struct extref_build_convert *c)
{
	if (step == EXTREF_STEP_REPLAY) {
		error_line("%s: %s while replaying its journal", o->image,
			   error_message(err));
		return 1;
	}
	if (step == EXTREF_STEP_CHECK && e2fsck_damaged)
		fatal("%s: e2fsck -fn finds it damaged (above): --convert "
		      "runs only on a clean filesystem; run e2fsck -fy %s "
		      "first; %s", o->image, o->image, unchanged_note());
	if (err == EXTREF_ERR_DESC_CSUM)
		fatal("%s: group descriptor %u has a wrong checksum (e2fsck "
		      "-fn reports it): --convert runs only on a clean "
		      "filesystem; run e2fsck -fy %s first; %s", o->image,
		      (unsigned)c->bad_group, o->image, unchanged_note());
	if (step == EXTREF_STEP_CHECK)
		fatal("%s: %s; %s", o->image, err == EXTREF_ERR_CONVERT_LEFT ?
		      extref_build_convert_left_note(o->image) :
		      error_message(err), unchanged_note());
	if (step == EXTREF_STEP_PUNCH) {
		error_line("%s: %s while punching the freed blocks out",
			   o->image, error_message(err));
		return 1;
	}
	if (step == EXTREF_STEP_WRITE)
		error_line("%s: %s while writing", o->image,
			   error_message(err));
	else if (o->dedup != EXTREF_DEDUPE_NONE && step == EXTREF_STEP_WORK)
		error_line("%s: %s while converting", o->image,
			   error_message(err));
	else
		error_line("%s: %s", o->image, error_message(err));
	lock_said(o->image, err);
	return c->undo_made ? convert_undo_take_back(o, 1) : 1;
}

/* --convert: one walk in the library (extref_build_convert). */
static int convert_run(const struct extref_build_args *o)
{
	struct extref_build_convert c;
	struct extref_build_opts b;
	errcode_t err;
	int step = 0;

	memset(&c, 0, sizeof(c));
	build_opts_of(o, &b);
	c.dedupe = o->dedup;
	c.undo_file = extref_image_is_blockdev(o->image) ? NULL :
		      convert_undo_file(o);
	c.check = convert_e2fsck;
	c.note = convert_note;
	c.priv = (void *)o;
	err = extref_build_convert(o->image, &b, &c, &step);
	progress_end();
	return err ? convert_failed(o, err, step, &c) : 0;
}

int convert_image(const struct extref_build_args *o)
{
	if (o->shrink)		/* a new image from this one (shrink.c), with
				 * --convert or alone */
		return shrink_image(o) ? 1 : o->quiet ? 0 : summary_print(o);
	if (convert_run(o))
		return 1;
	return o->quiet ? 0 : summary_print(o);
}
