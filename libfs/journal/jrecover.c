/*
 * jrecover.c --- replay the journal as the kernel and e2fsck do, from
 * what the scan verified.
 *
 * The scan (jscan.c, run by xr_journal_open) walked the log once,
 * verified every descriptor, tag, revoke block and commit, and recorded
 * the tags and revoke records of the complete transactions.  The replay
 * uses that record only: it drops the tags a revoke record of the same or
 * a later transaction names, keeps the last copy of each block, and
 * before the first write checks that every target lies inside the
 * filesystem and outside the log being replayed, that the journal's
 * blocks are its own (jown.c), and that a replayed superblock and group descriptors
 * would open (jvalid.c).  Each copy is read again as it is written and
 * must still match the checksum the scan computed.  Then the journal is
 * marked empty with s_sequence one past the first incomplete transaction
 * (as the kernel does, so that the torn transaction's blocks can never
 * match), and needs_recovery is cleared.
 */
#define _GNU_SOURCE		/* qsort_r */
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include "journal_int.h"
#include "extref.h"
#include "base/xr_crc32c.h"

struct replay {
	struct xr_journal *j;
	struct xr_jscan	*s;
	size_t		*w;		/* tags to write, by fsblk */
	size_t		nw;
};

static int cmp_revoke(const void *a, const void *b)
{
	const struct xr_jrevrec *x = a, *y = b;

	return x->fsblk < y->fsblk ? -1 : x->fsblk > y->fsblk;
}

/* Keep one record a block, with the latest tid revoking it. */
static void sort_revokes(struct xr_jscan *s)
{
	size_t i, n = 0;

	if (!s->nrev)
		return;
	qsort(s->rev, s->nrev, sizeof(*s->rev), cmp_revoke);
	for (i = 0; i < s->nrev; i++) {
		if (n && s->rev[n - 1].fsblk == s->rev[i].fsblk) {
			if (xr_tid_gt(s->rev[i].tid, s->rev[n - 1].tid))
				s->rev[n - 1].tid = s->rev[i].tid;
			continue;
		}
		s->rev[n++] = s->rev[i];
	}
	s->nrev = n;
}

static int revoked(const struct xr_jscan *s, const struct xr_jtagrec *t)
{
	struct xr_jrevrec key = { t->fsblk, 0 }, *hit;

	if (!s->nrev)
		return 0;
	hit = bsearch(&key, s->rev, s->nrev, sizeof(key), cmp_revoke);
	return hit && !xr_tid_gt(t->tid, hit->tid);
}

/* By block, then by place in the log. */
static int cmp_write(const void *a, const void *b, void *tags)
{
	const struct xr_jtagrec *x = (struct xr_jtagrec *)tags +
				     *(const size_t *)a;
	const struct xr_jtagrec *y = (struct xr_jtagrec *)tags +
				     *(const size_t *)b;

	if (x->fsblk != y->fsblk)
		return x->fsblk < y->fsblk ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 :
	       *(const size_t *)a > *(const size_t *)b;
}

/* The tags to write: the last unrevoked copy of each block. */
static errcode_t plan(struct replay *rp)
{
	struct xr_jscan *s = rp->s;
	size_t i, n = 0;
	errcode_t err;

	sort_revokes(s);
	err = ext2fs_get_array(s->ntag + 1, sizeof(size_t), &rp->w);
	if (err)
		return err;
	for (i = 0; i < s->ntag; i++)
		if (!revoked(s, &s->tag[i]))
			rp->w[n++] = i;
	qsort_r(rp->w, n, sizeof(size_t), cmp_write, s->tag);
	rp->nw = 0;
	for (i = 0; i < n; i++) {
		if (rp->nw && s->tag[rp->w[rp->nw - 1]].fsblk ==
			      s->tag[rp->w[i]].fsblk)
			rp->nw--;	/* a later copy of the same block */
		rp->w[rp->nw++] = rp->w[i];
	}
	return 0;
}

static int cmp_blk(const void *a, const void *b)
{
	blk64_t x = *(const blk64_t *)a, y = *(const blk64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * No target is a block of the log being replayed (s_start up to the end
 * the scan found, around the ring) or the journal superblock: the copies
 * a replay reads must stay as the scan verified them.  Elsewhere in the
 * journal a target is harmless (the journal is emptied next), and stock
 * e2fsck writes it too.
 */
static errcode_t check_targets(struct replay *rp)
{
	struct xr_journal *j = rp->j;
	__u32 jb, n = 0, len = xr_jdist(j, j->sb.start, rp->s->end) + 1;
	blk64_t *live;
	size_t i;
	errcode_t err;

	err = ext2fs_get_array(len, sizeof(blk64_t), &live);
	if (err)
		return err;
	live[n++] = j->map[0];
	for (jb = j->sb.start; n < len; jb = xr_jnext(j, jb))
		live[n++] = j->map[jb];
	qsort(live, n, sizeof(blk64_t), cmp_blk);
	for (i = 0; !err && i < rp->nw; i++) {
		const struct xr_jtagrec *t = &rp->s->tag[rp->w[i]];

		if (bsearch(&t->fsblk, live, n, sizeof(blk64_t), cmp_blk)) {
			xr_jdetail("transaction %u: FS block %llu, a block of "
				   "the log being replayed, is logged at "
				   "journal block %u", t->tid,
				   (unsigned long long)t->fsblk, t->jblk);
			err = EXTREF_ERR_JNL_TARGET;
		}
	}
	ext2fs_free_mem(&live);
	return err;
}

/* The copy of tag i, unescaped, as the scan verified it. */
static errcode_t read_copy(struct replay *rp, size_t i, void *buf)
{
	const struct xr_jtagrec *t = &rp->s->tag[i];
	errcode_t err = xr_jread(rp->j, t->jblk, buf);

	if (err)
		return err;
	if (t->flags & JBD2_FLAG_ESCAPE)
		xr_put_be32(buf, JBD2_MAGIC);
	if (xr_crc32c(~0U, buf, rp->j->bs) != t->crc) {
		xr_jdetail("transaction %u: the copy of FS block %llu at "
			   "journal block %u changed since the scan", t->tid,
			   (unsigned long long)t->fsblk, t->jblk);
		return EXTREF_ERR_JNL_CORRUPT;
	}
	return 0;
}

static const size_t *find(struct replay *rp, blk64_t blk)
{
	size_t lo = 0, hi = rp->nw, mid;
	blk64_t b;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		b = rp->s->tag[rp->w[mid]].fsblk;
		if (b == blk)
			return &rp->w[mid];
		if (b < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int has_final(void *priv, blk64_t blk)
{
	return find(priv, blk) != NULL;
}

/* Block blk as the replay leaves it. */
static errcode_t read_final(void *priv, blk64_t blk, void *buf)
{
	struct replay *rp = priv;
	const size_t *hit = find(rp, blk);

	if (hit)
		return read_copy(rp, *hit, buf);
	return io_channel_read_blk64(rp->j->io, blk, 1, buf);
}

static errcode_t write_home(struct replay *rp)
{
	unsigned char *buf = NULL;
	errcode_t err;
	size_t i;

	err = ext2fs_get_mem(rp->j->bs, &buf);
	for (i = 0; !err && i < rp->nw; i++) {
		err = read_copy(rp, rp->w[i], buf);
		if (!err)
			err = io_channel_write_blk64(rp->j->io,
				rp->s->tag[rp->w[i]].fsblk, 1, buf);
	}
	ext2fs_free_mem(&buf);
	if (!err)
		err = io_channel_flush(rp->j->io);
	return err;
}

/* Name the transaction whose superblock copy failed validation. */
static void name_super(struct replay *rp)
{
	const size_t *hit = find(rp, SUPERBLOCK_OFFSET / rp->j->bs);
	char was[256];

	if (!hit)
		return;
	snprintf(was, sizeof(was), "%s", extref_journal_detail());
	xr_jdetail("transaction %u (the superblock, logged at journal block "
		   "%u): %s", rp->s->tag[*hit].tid, rp->s->tag[*hit].jblk,
		   was);
}

/* The replay proper, once the scan verified the log. */
static errcode_t replay_log(struct xr_journal *j, int flags)
{
	struct replay rp;
	errcode_t err;

	memset(&rp, 0, sizeof(rp));
	rp.j = j;
	rp.s = j->scan;
	err = plan(&rp);
	if (!err)
		err = check_targets(&rp);
	if (!err)
		err = xr_journal_check_blocks(j);
	if (!err) {
		err = xr_jvalid_fs(j->fs, flags, read_final, has_final, &rp);
		if (err == EXTREF_ERR_JNL_BAD_FS ||
		    err == EXTREF_ERR_JNL_RESIZED)
			name_super(&rp);
	}
	if (!err)
		err = write_home(&rp);
	ext2fs_free_mem(&rp.w);
	return err;
}

errcode_t xr_journal_recover(ext2_filsys fs, io_channel io, int flags,
			     unsigned *ntrans)
{
	struct xr_journal *j;
	errcode_t err;

	*ntrans = 0;
	err = xr_journal_open(fs, io, &j);	/* scans a dirty log */
	if (err)
		return err;
	if (xr_journal_dirty(j)) {
		err = j->scan_err;
		if (!err)
			err = replay_log(j, flags);
		if (!err) {
			j->sb.start = 0;
			j->sb.sequence = j->tid + 1;
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
