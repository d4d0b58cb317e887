/*
 * replay_note.c --- what a refusal after a journal replay may say.
 * --convert replays a journal that needs recovery first, as e2fsck does,
 * then checks the replayed state; a refusal then must not say "nothing
 * was changed": the replay wrote the journal's blocks home.
 */
#include <stdio.h>

#include "mkfs.h"

static int replayed;		/* replay_noted was called */
static unsigned int transactions;

void replay_noted(unsigned int n)
{
	replayed = 1;
	transactions = n;
}

const char *unchanged_note(void)
{
	static char text[160];

	if (!replayed)
		return "nothing was changed";
	snprintf(text, sizeof(text), "the journal was replayed: %u "
		 "transaction%s written home, as e2fsck would; nothing else "
		 "was changed", transactions, transactions == 1 ? "" : "s");
	return text;
}
