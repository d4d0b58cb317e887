/*
 * jrecover.c --- replay the journal as the kernel and e2fsck do.
 *
 * Three walks of the log: the scan (jscan.c, run by xr_journal_open)
 * finds the complete transactions and verifies them, so nothing is written unless the whole
 * journal verified; the second gathers the revoke records; the third
 * writes every logged block home unless a revoke record of the same or a
 * later transaction names it.  Then the journal is marked empty with
 * s_sequence one past the first incomplete transaction (as the kernel
 * does, so that the torn transaction's blocks can never match), and
 * needs_recovery is cleared.
 */
#include <string.h>
#include <stdlib.h>
#include "journal_int.h"

struct revoke {
	blk64_t	blk;
	__u32	tid;
};

struct replay_ctx {
	struct xr_journal *j;
	__u32		end_tid;	/* first tid not replayed */
	__u32		first_tid;	/* s_sequence */
	struct revoke	*rv;
	size_t		nrv, cap;
};

/* tid within [first_tid, end_tid) */
static int replayed(const struct replay_ctx *c, __u32 tid)
{
	return tid - c->first_tid < c->end_tid - c->first_tid;
}

static errcode_t gather(const struct xr_jrec *r, void *priv)
{
	struct replay_ctx *c = priv;
	errcode_t err;

	if (r->type == XR_JREC_END)
		return 0;
	if (!replayed(c, r->tid))
		return XR_JWALK_STOP;
	if (r->type != XR_JREC_REVOKE)
		return 0;
	if (c->nrv == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		err = ext2fs_resize_array(sizeof(struct revoke), c->nrv,
					  c->cap, &c->rv);
		if (err)
			return err;
	}
	c->rv[c->nrv].blk = r->fsblk;
	c->rv[c->nrv].tid = r->tid;
	c->nrv++;
	return 0;
}

static int cmp_revoke(const void *a, const void *b)
{
	const struct revoke *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

/* Keep one record a block, with the latest tid revoking it. */
static void sort_revokes(struct replay_ctx *c)
{
	size_t i, n = 0;

	if (!c->nrv)
		return;
	qsort(c->rv, c->nrv, sizeof(*c->rv), cmp_revoke);
	for (i = 0; i < c->nrv; i++) {
		if (n && c->rv[n - 1].blk == c->rv[i].blk) {
			if (xr_tid_gt(c->rv[i].tid, c->rv[n - 1].tid))
				c->rv[n - 1].tid = c->rv[i].tid;
			continue;
		}
		c->rv[n++] = c->rv[i];
	}
	c->nrv = n;
}

static int revoked(const struct replay_ctx *c, blk64_t blk, __u32 tid)
{
	struct revoke key = { blk, 0 }, *hit;

	if (!c->nrv)
		return 0;
	hit = bsearch(&key, c->rv, c->nrv, sizeof(key), cmp_revoke);
	return hit && !xr_tid_gt(tid, hit->tid);
}

static errcode_t replay(const struct xr_jrec *r, void *priv)
{
	struct replay_ctx *c = priv;

	if (r->type == XR_JREC_END)
		return 0;
	if (!replayed(c, r->tid))
		return XR_JWALK_STOP;
	if (r->type != XR_JREC_BLOCK || revoked(c, r->fsblk, r->tid))
		return 0;
	return io_channel_write_blk64(c->j->io, r->fsblk, 1, r->data);
}

/* The replay proper, once the scan found end_tid. */
static errcode_t replay_log(struct xr_journal *j, __u32 end_tid)
{
	struct replay_ctx c;
	errcode_t err;

	memset(&c, 0, sizeof(c));
	c.j = j;
	c.first_tid = j->sb.sequence;
	c.end_tid = end_tid;
	err = xr_jwalk(j, 1, gather, &c);	/* revoke records only */
	if (!err) {
		sort_revokes(&c);
		err = xr_journal_walk(j, replay, &c);
	}
	ext2fs_free_mem(&c.rv);
	if (!err)
		err = io_channel_flush(j->io);
	return err;
}

errcode_t xr_journal_recover(ext2_filsys fs, io_channel io, unsigned *ntrans)
{
	struct xr_journal *j;
	errcode_t err;
	__u32 end_tid;

	*ntrans = 0;
	err = xr_journal_open(fs, io, &j);	/* scans a dirty log */
	if (err)
		return err;
	if (xr_journal_dirty(j)) {
		end_tid = j->tid;
		err = j->scan_err;
		if (!err)
			err = replay_log(j, end_tid);
		if (!err) {
			j->sb.start = 0;
			j->sb.sequence = end_tid + 1;
			err = xr_jsb_write(j);
		}
		if (!err)
			err = io_channel_flush(io);
		if (!err)
			*ntrans = j->ntrans;
	}
	if (!err)
		err = xr_journal_mark_recover(j, 0);
	xr_journal_close(j);
	return err;
}
