/*
 * txn_cmds.c --- begin, commit, rollback: several commands as one
 * transaction of the image's journal (extref_tx_begin, extref.h).
 *
 * Outside a batch every command that writes is a transaction of its own
 * (cmds.c).  A failed command inside a batch rolls the whole batch back;
 * close and the end of the session commit a batch still open.  An image
 * without a journal has no transactions: begin says so and does nothing.
 */
#include <et/com_err.h>
#include "debugfs.h"
#include "cmds_gen.h"

static int need_rw(struct cmd_args *a)
{
	if (!sh.rw)
		return cmd_fail(a, "needs an image opened with -w");
	if (!extref_fs_journaled(sh.xfs))
		return cmd_fail(a, "%s has no journal: every command is "
				"written as it runs, and none can be rolled "
				"back", sh.image);
	return 0;
}

int impl_begin(struct cmd_args *a)
{
	errcode_t err;

	if (need_rw(a))
		return 1;
	if (sh.batch)
		return cmd_fail(a, "a transaction is already open "
				"(commit or rollback it first)");
	err = extref_tx_begin(sh.xfs);
	if (err)
		return cmd_fail(a, "%s", error_message(err));
	sh.batch = 1;
	return 0;
}

static int end_batch(struct cmd_args *a, errcode_t result)
{
	errcode_t err;

	if (need_rw(a))
		return 1;
	if (!sh.batch)
		return cmd_fail(a, "no transaction is open (begin starts one)");
	sh.batch = 0;
	err = extref_tx_end(sh.xfs, result);
	if (!result && err)
		return cmd_fail(a, "%s; the image is as it was at begin",
				error_message(err));
	if (result && err != result)
		return cmd_fail(a, "%s", error_message(err));
	return 0;
}

int impl_commit(struct cmd_args *a)
{
	return end_batch(a, 0);
}

int impl_rollback(struct cmd_args *a)
{
	return end_batch(a, EXTREF_ERR_ROLLED_BACK);
}

/*
 * A command too big for the journal (a recursive reflink) was rolled
 * back, nothing changed: the journal grows to hold it (extref_journal_fit:
 * what its commit needs and an eighth more, when the free space holds the
 * growth besides the command's blocks), and cmds.c runs it again, one
 * transaction still.  The new length is inode 8's (the journal's) size.
 */
errcode_t shell_grow_journal(const char *who)
{
	struct ext2_inode in;
	__u64 before = 0, after = 0;
	errcode_t err;

	if (!ext2fs_read_inode(sh.fs, EXT2_JOURNAL_INO, &in))
		before = EXT2_I_SIZE(&in) / sh.fs->blocksize;
	err = extref_journal_fit(sh.xfs);
	if (err)
		return err;
	if (!ext2fs_read_inode(sh.fs, EXT2_JOURNAL_INO, &in))
		after = EXT2_I_SIZE(&in) / sh.fs->blocksize;
	printf("%s: the journal grew from %llu to %llu blocks to hold it as "
	       "one transaction\n", who, (unsigned long long)before,
	       (unsigned long long)after);
	return 0;
}

void shell_batch_failed(const char *who)
{
	errcode_t err;

	sh.batch = 0;
	err = extref_tx_end(sh.xfs, EXTREF_ERR_ROLLED_BACK);
	if (err != EXTREF_ERR_ROLLED_BACK)
		com_err(who, err, "while rolling the transaction back");
	else
		fprintf(stderr, "%s: the transaction begun by \"begin\" was "
			"rolled back: the image is as it was before it\n",
			who);
}
