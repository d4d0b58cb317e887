/*
 * logdump.c --- logdump [-a] [-S]: the journal's log from s_start, in
 * stock debugfs's words: "Journal starts at block B, transaction T", one
 * "Found expected sequence ..." line per descriptor, revoke and commit
 * block, and the line that ends the log.  -a also lists each descriptor's
 * tags ("FS block N logged at journal block M (flags 0xF)") and each
 * revoke block's records; -S prints the journal superblock first.
 *
 * The log is walked by the library (extref_journal_walk), read-only, through
 * the image's channel; every count and block number in it is checked
 * there before use.
 */
#include <e2p/e2p.h>
#include "debugfs.h"

struct ld_ctx {
	int	all;		/* -a */
};

static const char *type_name(unsigned type)
{
	switch (type) {
	case EXTREF_JBLOCK_DESCRIPTOR:	return "descriptor block";
	case EXTREF_JBLOCK_COMMIT:		return "commit block";
	case EXTREF_JBLOCK_SUPER_V1:	return "V1 superblock";
	case EXTREF_JBLOCK_SUPER_V2:	return "V2 superblock";
	case EXTREF_JBLOCK_REVOKE:		return "revoke table";
	}
	return "unrecognised type";
}

static void found(const struct extref_jrec *r)
{
	printf("Found expected sequence %u, type %u (%s) at block %u\n",
	       r->tid, r->blocktype, type_name(r->blocktype), r->jblk);
}

static void print_end(const struct extref_jrec *r)
{
	switch (r->end) {
	case EXTREF_JEND_NO_MAGIC:
		printf("No magic number at block %u: end of journal.\n",
		       r->jblk);
		break;
	case EXTREF_JEND_SEQ:
		printf("Found sequence %u (not %u) at block %u: "
		       "end of journal.\n", r->found, r->tid, r->jblk);
		break;
	case EXTREF_JEND_TYPE:
		found(r);
		printf("Unexpected block type %u at block %u.\n",
		       r->blocktype, r->jblk);
		break;
	case EXTREF_JEND_LOOPED:
		printf("The whole log was walked at block %u: "
		       "end of journal.\n", r->jblk);
		break;
	case EXTREF_JEND_EMPTY:
		break;
	}
}

static errcode_t ld_rec(const struct extref_jrec *r, void *priv)
{
	struct ld_ctx *c = priv;

	switch (r->type) {
	case EXTREF_JREC_DESC:
		found(r);
		if (c->all)
			printf("Dumping descriptor block, sequence %u, at "
			       "block %u:\n", r->tid, r->jblk);
		break;
	case EXTREF_JREC_BLOCK:
		if (c->all)
			printf("  FS block %llu logged at journal block %u "
			       "(flags 0x%x)\n", (unsigned long long)r->fsblk,
			       r->jblk, r->flags);
		break;
	case EXTREF_JREC_REVOKE_HDR:
		found(r);
		if (r->malformed)
			printf("Revoke block's r_count invalid at block %u\n",
			       r->jblk);
		if (c->all)
			printf("Dumping revoke block, sequence %u, at "
			       "block %u:\n", r->tid, r->jblk);
		break;
	case EXTREF_JREC_REVOKE:
		if (c->all)
			printf("  Revoke FS block %llu\n",
			       (unsigned long long)r->fsblk);
		break;
	case EXTREF_JREC_COMMIT:
		found(r);
		break;
	case EXTREF_JREC_END:
		print_end(r);
		break;
	}
	return 0;
}

int impl_logdump(struct cmd_args *a)
{
	struct ld_ctx c = { a->opts['a'] != 0 };
	struct extref_jinfo info;
	errcode_t err;

	/* the journal on disk, not as an in-memory replay shows it: the
	 * superblock first (-S), so the walk prints after it */
	err = extref_journal_walk(sh.xfs, &info, NULL, NULL);
	if (err)
		return cmd_err(a, err, "while opening the journal");
	if (a->opts['S']) {
		e2p_list_journal_super(stdout, (char *)info.raw,
				       sh.fs->blocksize, 0);
		putchar('\n');
	}
	printf("Journal starts at block %u, transaction %u\n", info.start,
	       info.sequence);
	err = extref_journal_walk(sh.xfs, &info, ld_rec, &c);
	if (err)
		return cmd_err(a, err, "while reading the journal");
	return 0;
}
