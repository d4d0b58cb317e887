/*
 * logdump.c --- logdump [-a] [-S]: the journal's log from s_start, in
 * stock debugfs's words: "Journal starts at block B, transaction T", one
 * "Found expected sequence ..." line per descriptor, revoke and commit
 * block, and the line that ends the log.  -a also lists each descriptor's
 * tags ("FS block N logged at journal block M (flags 0xF)") and each
 * revoke block's records; -S prints the journal superblock first.
 *
 * The log is walked by the library (xr_journal_walk), read-only, through
 * the image's channel; every count and block number in it is checked
 * there before use.
 */
#include <e2p/e2p.h>
#include "debugfs.h"
#include "journal/xr_journal.h"
#include "txn/xr_txio.h"

struct ld_ctx {
	int	all;		/* -a */
};

static const char *type_name(unsigned type)
{
	switch (type) {
	case JBD2_DESCRIPTOR_BLOCK:	return "descriptor block";
	case JBD2_COMMIT_BLOCK:		return "commit block";
	case JBD2_SUPERBLOCK_V1:	return "V1 superblock";
	case JBD2_SUPERBLOCK_V2:	return "V2 superblock";
	case JBD2_REVOKE_BLOCK:		return "revoke table";
	}
	return "unrecognised type";
}

static void found(const struct xr_jrec *r)
{
	printf("Found expected sequence %u, type %u (%s) at block %u\n",
	       r->tid, r->blocktype, type_name(r->blocktype), r->jblk);
}

static void print_end(const struct xr_jrec *r)
{
	switch (r->end) {
	case XR_JEND_NO_MAGIC:
		printf("No magic number at block %u: end of journal.\n",
		       r->jblk);
		break;
	case XR_JEND_SEQ:
		printf("Found sequence %u (not %u) at block %u: "
		       "end of journal.\n", r->found, r->tid, r->jblk);
		break;
	case XR_JEND_TYPE:
		found(r);
		printf("Unexpected block type %u at block %u.\n",
		       r->blocktype, r->jblk);
		break;
	case XR_JEND_LOOPED:
		printf("The whole log was walked at block %u: "
		       "end of journal.\n", r->jblk);
		break;
	case XR_JEND_EMPTY:
		break;
	}
}

static errcode_t ld_rec(const struct xr_jrec *r, void *priv)
{
	struct ld_ctx *c = priv;

	switch (r->type) {
	case XR_JREC_DESC:
		found(r);
		if (c->all)
			printf("Dumping descriptor block, sequence %u, at "
			       "block %u:\n", r->tid, r->jblk);
		break;
	case XR_JREC_BLOCK:
		if (c->all)
			printf("  FS block %llu logged at journal block %u "
			       "(flags 0x%x)\n", (unsigned long long)r->fsblk,
			       r->jblk, r->flags);
		break;
	case XR_JREC_REVOKE_HDR:
		found(r);
		if (r->malformed)
			printf("Revoke block's r_count invalid at block %u\n",
			       r->jblk);
		if (c->all)
			printf("Dumping revoke block, sequence %u, at "
			       "block %u:\n", r->tid, r->jblk);
		break;
	case XR_JREC_REVOKE:
		if (c->all)
			printf("  Revoke FS block %llu\n",
			       (unsigned long long)r->fsblk);
		break;
	case XR_JREC_COMMIT:
		found(r);
		break;
	case XR_JREC_END:
		print_end(r);
		break;
	}
	return 0;
}

int impl_logdump(struct cmd_args *a)
{
	struct ld_ctx c = { a->opts['a'] != 0 };
	struct xr_journal *j;
	struct xr_jinfo info;
	errcode_t err;

	/* the journal on disk, not as an in-memory replay shows it */
	err = xr_journal_open(sh.fs, xr_disk_io(sh.fs->io), &j);
	if (err)
		return cmd_err(a, err, "while opening the journal");
	xr_journal_info(j, &info);
	if (a->opts['S']) {
		e2p_list_journal_super(stdout, (char *)info.raw,
				       sh.fs->blocksize, 0);
		putchar('\n');
	}
	printf("Journal starts at block %u, transaction %u\n", info.start,
	       info.sequence);
	err = xr_journal_walk(j, ld_rec, &c);
	xr_journal_close(j);
	if (err)
		return cmd_err(a, err, "while reading the journal");
	return 0;
}
