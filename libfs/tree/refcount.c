/*
 * refcount.c --- counts of block ranges: look up, iterate, raise, lower.
 *
 * A range change gathers the records that overlap or touch the range,
 * computes the replacement records (counts changed by one, records that
 * fall to one mapping dropped, equal neighbours merged), checks them all,
 * and only then replaces the old records in the tree.
 */
#include <string.h>
#include "extref_int.h"

#define NO_REC	0	/* piece of a range with no record: one mapping */

struct rec_vec {
	struct extref_rec	*v;
	size_t			n, cap;
	errcode_t		err;
};

static errcode_t vec_push(struct rec_vec *rv, blk64_t start, blk64_t len,
			  __u32 count)
{
	errcode_t err = xr_grow(&rv->v, &rv->cap, rv->n, sizeof(*rv->v));

	if (err)
		return err;
	rv->v[rv->n].start = start;
	rv->v[rv->n].len = len;
	rv->v[rv->n].count = count;
	rv->n++;
	return 0;
}

static int gather_one(const struct extref_rec *r, void *priv)
{
	struct rec_vec *rv = priv;

	rv->err = vec_push(rv, r->start, r->len, r->count);
	return rv->err != 0;
}

static errcode_t check_range(struct extref_tree *t, blk64_t start,
			     blk64_t len)
{
	blk64_t total = ext2fs_blocks_count(t->fs->super);

	if (len == 0 || start < t->fs->super->s_first_data_block ||
	    start >= total || len > total - start)
		return EXTREF_ERR_RANGE;
	return 0;
}

errcode_t extref_tree_get_count(extref_tree_t t, blk64_t blk, __u32 *count)
{
	struct rec_vec rv = { 0 };
	errcode_t err;

	if (t->broken)
		return t->broken;
	err = xr_visit(t, blk, blk + 1, gather_one, &rv);
	if (!err)
		err = rv.err;
	*count = (!err && rv.n) ? rv.v[0].count : 0;
	ext2fs_free_mem(&rv.v);
	return err;
}

struct iter_ctx {
	blk64_t		start, end;
	int		clip;
	extref_rec_func	func;
	void		*priv;
	errcode_t	err;		/* what func returned to stop */
};

static int iter_one(const struct extref_rec *r, void *priv)
{
	struct iter_ctx *c = priv;
	struct extref_rec out = *r;

	if (c->clip) {
		blk64_t s = r->start > c->start ? r->start : c->start;
		blk64_t e = r->start + r->len < c->end ? r->start + r->len
							 : c->end;
		out.start = s;
		out.len = e - s;
	}
	c->err = c->func(&out, c->priv);
	return c->err != 0;
}

errcode_t extref_tree_iterate(extref_tree_t t, blk64_t start, blk64_t len,
			      int clip, extref_rec_func func, void *priv)
{
	struct iter_ctx c = { start, start + len, clip, func, priv, 0 };
	errcode_t err;

	if (t->broken)
		return t->broken;
	if (len == 0 || start + len < start)
		c.end = ~0ULL;
	err = xr_visit(t, start, c.end, iter_one, &c);
	if (!err && c.err != EXTREF_ITER_STOP)
		err = c.err;
	return err;
}

/* Append a piece to the output, merging with the previous one. */
static errcode_t emit(struct rec_vec *out, blk64_t start, blk64_t len,
		      __u32 count)
{
	struct extref_rec *last = out->n ? &out->v[out->n - 1] : NULL;

	if (len == 0)
		return 0;
	if (last && last->count == count &&
	    last->start + last->len == start) {
		last->len += len;
		return 0;
	}
	return vec_push(out, start, len, count);
}

/* New count of a piece inside the changed range; freed when it hits 0. */
static errcode_t apply_delta(__u32 count, int delta, __u32 *ret, int *freed)
{
	*freed = 0;
	if (delta > 0) {
		if (count == EXTREF_MAX_COUNT)
			return EXTREF_ERR_COUNT_OVERFLOW;
		*ret = count == NO_REC ? 2 : count + 1;
	} else if (count == NO_REC) {
		*freed = 1;
		*ret = NO_REC;
	} else {
		*ret = count == 2 ? NO_REC : count - 1;
	}
	return 0;
}

/*
 * Cut the piece [s, e) of count c at the range's ends and emit each part,
 * changed inside [rs, re).
 */
static errcode_t emit_piece(struct rec_vec *out, struct rec_vec *freed,
			    blk64_t s, blk64_t e, __u32 c,
			    blk64_t rs, blk64_t re, int delta)
{
	blk64_t in_s = s > rs ? s : rs, in_e = e < re ? e : re;
	__u32 nc;
	int f;
	errcode_t err;

	if (in_s >= in_e)
		return emit(out, s, e - s, c);
	err = emit(out, s, in_s - s, c);
	if (!err)
		err = apply_delta(c, delta, &nc, &f);
	if (!err)
		err = emit(out, in_s, in_e - in_s, nc);
	if (!err && f)
		err = emit(freed, in_s, in_e - in_s, 1);
	if (!err)
		err = emit(out, in_e, e - in_e, c);
	return err;
}

/* The replacement pieces for the old records over the range. */
static errcode_t compute(const struct rec_vec *old, blk64_t rs, blk64_t re,
			 int delta, struct rec_vec *out, struct rec_vec *freed)
{
	blk64_t pos = rs;
	errcode_t err = 0;
	size_t i;

	if (old->n && old->v[0].start < pos)
		pos = old->v[0].start;
	for (i = 0; i < old->n && !err; i++) {
		const struct extref_rec *r = &old->v[i];

		if (pos < r->start)
			err = emit_piece(out, freed, pos, r->start, NO_REC,
					 rs, re, delta);
		if (!err)
			err = emit_piece(out, freed, r->start,
					 r->start + r->len, r->count,
					 rs, re, delta);
		pos = r->start + r->len;
	}
	if (!err && pos < re)
		err = emit_piece(out, freed, pos, re, NO_REC, rs, re, delta);
	return err;
}

/* Replace the old records by the new ones (NO_REC pieces dropped). */
static errcode_t replace(struct extref_tree *t, const struct rec_vec *old,
			 const struct rec_vec *out)
{
	struct extref_rec r;
	errcode_t err;
	size_t i;

	for (i = 0; i < old->n; i++) {
		err = xr_delete(t, old->v[i].start);
		if (err)
			return err;
	}
	for (i = 0; i < out->n; i++) {
		if (out->v[i].count == NO_REC)
			continue;
		r = out->v[i];
		while (r.len) {
			struct extref_rec part = r;

			if (part.len > EXTREF_MAX_REC_LEN)
				part.len = EXTREF_MAX_REC_LEN;
			err = xr_insert(t, &part);
			if (err)
				return err;
			r.start += part.len;
			r.len -= part.len;
		}
	}
	return 0;
}

/*
 * Whether the change is a new count for one record in place: the only
 * record overlapping or touching the range is the range itself (so no
 * neighbour merges), and its count stays a record's (2 or more).
 */
static int in_place(const struct rec_vec *old, blk64_t start, blk64_t len,
		    int delta, __u32 *nc)
{
	int freed;

	if (old->n != 1 || old->v[0].start != start || old->v[0].len != len)
		return 0;
	if (apply_delta(old->v[0].count, delta, nc, &freed) || freed)
		return 0;
	return *nc != NO_REC;
}

static errcode_t change_range(struct extref_tree *t, blk64_t start,
			      blk64_t len, int delta,
			      extref_freed_func freed_fn, void *priv)
{
	struct rec_vec old = { 0 }, out = { 0 }, freed = { 0 };
	blk64_t lo = start ? start - 1 : 0;
	__u32 nc;
	errcode_t err;
	size_t i;

	if (t->broken)
		return t->broken;
	if (!(t->flags & EXTREF_TREE_RW))
		return EXTREF_ERR_READ_ONLY;
	err = check_range(t, start, len);
	if (err)
		return err;
	/* Records overlapping or touching the range, for merging. */
	err = xr_visit(t, lo, start + len + 1, gather_one, &old);
	if (!err)
		err = old.err;
	if (!err && in_place(&old, start, len, delta, &nc)) {
		/* one record, exactly the range, no neighbour touching */
		err = xr_set_count(t, start, nc);
		if (err)
			t->broken = err;
		goto out;
	}
	if (!err)
		err = compute(&old, start, start + len, delta, &out, &freed);
	if (!err) {
		err = replace(t, &old, &out);
		if (err)
			t->broken = err;	/* memory tree half changed */
	}
	for (i = 0; !err && freed_fn && i < freed.n; i++)
		err = freed_fn(freed.v[i].start, freed.v[i].len, priv);
out:
	ext2fs_free_mem(&old.v);
	ext2fs_free_mem(&out.v);
	ext2fs_free_mem(&freed.v);
	return err;
}

errcode_t extref_tree_raise(extref_tree_t t, blk64_t start, blk64_t len)
{
	return change_range(t, start, len, +1, NULL, NULL);
}

errcode_t extref_tree_lower(extref_tree_t t, blk64_t start, blk64_t len,
			    extref_freed_func freed, void *priv)
{
	return change_range(t, start, len, -1, freed, priv);
}
