/*
 * jscan.c --- the scan of a dirty log: where it ends, and a record of
 * every tag and revoke record of its complete transactions, verified.
 *
 * A transaction is complete when its commit block is where the walk
 * expects it, with the expected tid and a checksum that verifies.  The
 * writer flushes every other block of a transaction before its commit
 * block, so a transaction with a bad descriptor, revoke or copy checksum
 * and no valid commit block is torn (the log ends before it), while one
 * whose commit block verifies is corrupt: an error, since replaying the
 * transactions before it and dropping those after would be neither state.
 * So is a revoke block whose r_count cannot be (the kernel's revoke pass
 * refuses it too), and a tag naming a block past the filesystem's end.
 *
 * The replay (jrecover.c) uses this record only: it never walks the log
 * again, so nothing it writes can change what it replays.
 */
#include <string.h>
#include "journal_int.h"
#include "base/xr_crc32c.h"

struct scan_ctx {
	struct xr_journal *j;
	struct xr_jscan	*s;
	blk64_t		nblocks;	/* filesystem blocks */
	size_t		tag0, rev0;	/* the current transaction's records */
	errcode_t	bad;		/* its first failed check */
	char		why[160];	/* ... in words */
};

static void fail(struct scan_ctx *c, errcode_t err, const char *why,
		 __u32 jblk)
{
	if (c->bad)
		return;
	c->bad = err;
	snprintf(c->why, sizeof(c->why), "%s at journal block %u", why, jblk);
}

static errcode_t add_tag(struct scan_ctx *c, const struct extref_jrec *r)
{
	struct xr_jscan *s = c->s;
	struct xr_jtagrec *t;
	errcode_t err;

	if (s->ntag == s->cap_tag) {
		s->cap_tag = s->cap_tag ? 2 * s->cap_tag : 64;
		err = ext2fs_resize_array(sizeof(*t), s->ntag, s->cap_tag,
					  &s->tag);
		if (err)
			return err;
	}
	t = &s->tag[s->ntag++];
	t->fsblk = r->fsblk;
	t->jblk = r->jblk;
	t->tid = r->tid;
	t->flags = r->flags;
	t->crc = xr_crc32c(~0U, r->data, c->j->bs);
	return 0;
}

static errcode_t add_revoke(struct scan_ctx *c, const struct extref_jrec *r)
{
	struct xr_jscan *s = c->s;
	errcode_t err;

	if (s->nrev == s->cap_rev) {
		s->cap_rev = s->cap_rev ? 2 * s->cap_rev : 64;
		err = ext2fs_resize_array(sizeof(*s->rev), s->nrev,
					  s->cap_rev, &s->rev);
		if (err)
			return err;
	}
	s->rev[s->nrev].fsblk = r->fsblk;
	s->rev[s->nrev].tid = r->tid;
	s->nrev++;
	return 0;
}

static errcode_t scan_block(struct scan_ctx *c, const struct extref_jrec *r)
{
	char why[96];

	if (!r->csum_ok) {
		snprintf(why, sizeof(why), "the copy of FS block %llu fails "
			 "its tag checksum", (unsigned long long)r->fsblk);
		fail(c, EXTREF_ERR_JNL_CORRUPT, why, r->jblk);
	}
	if (r->fsblk >= c->nblocks) {
		snprintf(why, sizeof(why), "FS block %llu, past the "
			 "filesystem's end (%llu blocks), is logged",
			 (unsigned long long)r->fsblk,
			 (unsigned long long)c->nblocks);
		fail(c, EXTREF_ERR_JNL_TARGET, why, r->jblk);
	}
	return add_tag(c, r);
}

/* The transaction's commit verifies: keep its records, or fail. */
static errcode_t commit(struct scan_ctx *c, const struct extref_jrec *r)
{
	if (c->bad) {
		xr_jdetail("transaction %u: %s", r->tid, c->why);
		return c->bad;
	}
	c->tag0 = c->s->ntag;
	c->rev0 = c->s->nrev;
	c->s->end = xr_jnext(c->j, r->jblk);
	c->s->end_tid = r->tid + 1;
	c->s->ntrans++;
	return 0;
}

/* The log ends: the records of an incomplete transaction go. */
static errcode_t torn(struct scan_ctx *c)
{
	c->s->ntag = c->tag0;
	c->s->nrev = c->rev0;
	return EXTREF_JWALK_STOP;
}

static errcode_t scan_rec(const struct extref_jrec *r, void *priv)
{
	struct scan_ctx *c = priv;

	switch (r->type) {
	case EXTREF_JREC_DESC:
		if (!r->csum_ok)
			fail(c, EXTREF_ERR_JNL_CORRUPT,
			     "a descriptor block fails its checksum", r->jblk);
		return 0;
	case EXTREF_JREC_REVOKE_HDR:
		if (r->malformed)
			fail(c, EXTREF_ERR_JNL_BAD_REVOKE, "a revoke block's "
			     "r_count is impossible", r->jblk);
		else if (!r->csum_ok)
			fail(c, EXTREF_ERR_JNL_CORRUPT,
			     "a revoke block fails its checksum", r->jblk);
		return 0;
	case EXTREF_JREC_BLOCK:
		return scan_block(c, r);
	case EXTREF_JREC_REVOKE:
		return add_revoke(c, r);
	case EXTREF_JREC_COMMIT:
		if (r->csum_ok)
			return commit(c, r);
		return torn(c);		/* the log ends before it */
	case EXTREF_JREC_END:
		return torn(c);
	}
	return 0;
}

void xr_jscan_free(struct xr_jscan *s)
{
	if (!s)
		return;
	ext2fs_free_mem(&s->tag);
	ext2fs_free_mem(&s->rev);
	ext2fs_free_mem(&s);
}

errcode_t xr_jscan(struct xr_journal *j, struct xr_jscan **ret)
{
	struct scan_ctx c;
	errcode_t err;

	memset(&c, 0, sizeof(c));
	err = ext2fs_get_memzero(sizeof(*c.s), &c.s);
	if (err)
		return err;
	c.j = j;
	c.nblocks = ext2fs_blocks_count(j->fs->super);
	c.s->end = j->sb.start ? j->sb.start : j->sb.first;
	c.s->end_tid = j->sb.sequence;
	err = xr_journal_walk(j, scan_rec, &c);
	if (err) {
		xr_jscan_free(c.s);
		return err;
	}
	*ret = c.s;
	return 0;
}
