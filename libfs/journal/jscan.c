/*
 * jscan.c --- which transactions of a dirty log are complete.
 *
 * A transaction is complete when its commit block is where the walk
 * expects it, with the expected tid and a checksum that verifies.  The
 * writer flushes every other block of a transaction before its commit
 * block, so a transaction with a bad descriptor, revoke or copy checksum
 * and no valid commit block is torn (the log ends before it), while one
 * whose commit block verifies is corrupt: an error, since replaying the
 * transactions before it and dropping those after would be neither state.
 */
#include <string.h>
#include "journal_int.h"

struct scan_ctx {
	struct xr_journal *j;
	struct xr_jscan	*res;
	blk64_t		nblocks;	/* filesystem blocks */
	int		bad;		/* current transaction fails a check */
};

static errcode_t scan_rec(const struct xr_jrec *r, void *priv)
{
	struct scan_ctx *c = priv;

	switch (r->type) {
	case XR_JREC_DESC:
	case XR_JREC_REVOKE_HDR:
		c->bad |= !r->csum_ok;
		return 0;
	case XR_JREC_BLOCK:
	case XR_JREC_REVOKE:
		c->bad |= !r->csum_ok || r->fsblk >= c->nblocks;
		return 0;
	case XR_JREC_COMMIT:
		if (!r->csum_ok)
			return XR_JWALK_STOP;	/* torn: the log ends */
		if (c->bad)
			return EXTREF_ERR_JNL_CORRUPT;
		c->res->end = xr_jnext(c->j, r->jblk);
		c->res->end_tid = r->tid + 1;
		c->res->ntrans++;
		return 0;
	case XR_JREC_END:
		return 0;
	}
	return 0;
}

errcode_t xr_jscan(struct xr_journal *j, struct xr_jscan *res)
{
	struct scan_ctx c;

	memset(&c, 0, sizeof(c));
	c.j = j;
	c.res = res;
	c.nblocks = ext2fs_blocks_count(j->fs->super);
	res->end = j->sb.start ? j->sb.start : j->sb.first;
	res->end_tid = j->sb.sequence;
	res->ntrans = 0;
	return xr_journal_walk(j, scan_rec, &c);
}
