/*
 * journal_fix.c --- a journal inode whose blocks are not its own (also
 * group metadata, mapped by another inode, or twice in its own map):
 * said, asked and counted here; the library finds it, clears it before
 * e2fsck runs and makes a new journal of the same size after it
 * (extref_fsck_journal_clear, extref_fsck_journal_remake: "Creating
 * journal ... journal has been regenerated", e2fsck's words).
 */
#include <stdio.h>
#include <et/com_err.h>
#include "fsck.h"

/* The problem found: said, and under ASK asked; non-zero to clear. */
static int report(void *priv)
{
	struct fsck_opts *o = priv;
	int fix = o->mode != EXTREF_FSCK_NO;
	const char *fix_text = "clear the journal; a new one is made after "
			       "e2fsck";

	printf("0x%04x journal inode's blocks are not its own: %s (%s%s)\n",
	       PR_X_JOURNAL_OVERLAP, extref_journal_detail(),
	       fix ? "" : "would ", fix_text);
	if (o->mode == EXTREF_FSCK_ASK)
		return ask_yes_no(o, "Clear the journal");
	return fix;
}

int fix_journal_blocks(struct fsck_opts *o, blk64_t *recreate)
{
	struct extref_fsck_journal_fix jf = {
		.write = o->mode != EXTREF_FSCK_NO,
		.confirm = report,
		.priv = o,
	};
	errcode_t err = extref_fsck_journal_clear(o->image, &jf);

	*recreate = jf.nblocks;
	if (err) {
		com_err(prog, err, "while %s the journal of %s",
			jf.found ? "clearing" : "checking", o->image);
		return FSCK_ERROR;
	}
	if (!jf.found)
		return 0;
	if (!jf.cleared)
		return FSCK_UNCORRECTED;
	printf("*** journal has been deleted ***\n\n");
	return FSCK_NONDESTRUCT;
}

/* What the library does, said as e2fsck says it. */
static void say(int what, unsigned int blocks, void *priv)
{
	(void)priv;
	if (what == EXTREF_FSCK_JOURNAL_CREATING) {
		printf("Creating journal (%u blocks): ", blocks);
		fflush(stdout);
	} else {
		printf("%s\n", what == EXTREF_FSCK_JOURNAL_MADE ? "Done." :
		       "failed");
	}
}

/* After e2fsck: a journal of the cleared one's size, as e2fsck makes. */
int remake_journal(struct fsck_opts *o, blk64_t nblocks)
{
	errcode_t err = extref_fsck_journal_remake(o->image, nblocks, say,
						   NULL);

	if (!err) {
		printf("\n*** journal has been regenerated ***\n");
		return 0;
	}
	com_err(prog, err, "while making a new journal for %s", o->image);
	return FSCK_UNCORRECTED;
}
