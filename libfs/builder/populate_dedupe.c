/*
 * populate_dedupe.c --- the build's block deduplication, planned as the
 * data goes in: each distinct block is written once, and every later
 * copy maps it (EXTREF_DEDUPE_BLOCK in extref_populate).
 *
 * A table of the blocks written so far (a 64-bit hash, the block and
 * its count of mappings: 16 bytes, open addressing, at most 3/4 full)
 * is looked up for every non-zero block of every file, in the order the
 * populate path meets them (sorted, so the image does not depend on the
 * host's order).  A hash that matches is confirmed byte for byte against
 * the copy (still in the staging buffer, or read back from the image);
 * a block that matches nothing is given the next free block after the
 * previous one and staged for one write with its neighbours, so the
 * distinct data lies contiguously in the order it was met.  A block's
 * last bytes past the end of its file are zeros, so files ending alike
 * share their last blocks too.
 *
 * At the end the blocks mapped twice or more become the tree's records,
 * sorted and merged, bulk-loaded bottom-up in one pass (extref_stage.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "populate_int.h"
#include "tree/extref_stage.h"

struct xr_dd_slot {
	__u64	hash;
	__u32	pblk;		/* 0: an empty slot */
	__u32	refs;		/* mappings of pblk */
};

struct xr_pop_dd {
	struct xr_dd_slot	*v;
	size_t			mask;		/* slots - 1 */
	size_t			n;		/* slots in use */
	char			*cmp;		/* one block */
};

static errcode_t table_alloc(struct xr_pop_dd *dd, size_t slots)
{
	errcode_t err;

#ifdef EXTREF_FAULT_INJECTION
	if (xr_fault_nomem())	/* a growth, as xr_grow's */
		return EXT2_ET_NO_MEMORY;
#endif
	err = ext2fs_get_array(slots, sizeof(*dd->v), &dd->v);
	if (err)
		return err;
	memset(dd->v, 0, slots * sizeof(*dd->v));
	dd->mask = slots - 1;
	return 0;
}

/* The tree of a new image: empty (the bulk load at the end replaces
 * it, so an image with counts already is refused). */
errcode_t xr_pop_tree_is_empty(ext2_filsys fs)
{
	extref_tree_t t;
	errcode_t err = extref_tree_open(fs, 0, &t);

	if (err)
		return err;
	if (t->nrecords || t->root)
		err = EXTREF_ERR_INO5_BUSY;
	extref_tree_free(t);
	return err;
}

errcode_t xr_pop_dd_init(struct xr_pop *p, __u64 hint)
{
	struct xr_pop_dd *dd = NULL;
	size_t slots = 1024;
	errcode_t err;

	/* the table keeps 32-bit block numbers */
	if (ext2fs_blocks_count(p->fs->super) > 0xffffffffULL)
		return EFBIG;
	while (slots / 4 * 3 <= hint && slots < (1UL << 30))
		slots *= 2;
	err = xr_pop_tree_is_empty(p->fs);
	if (!err)
		err = ext2fs_get_memzero(sizeof(*dd), &dd);
	if (!err)
		err = ext2fs_get_mem(p->fs->blocksize, &dd->cmp);
	if (!err)
		err = table_alloc(dd, slots);
	if (err) {
		if (dd)
			ext2fs_free_mem(&dd->cmp);
		ext2fs_free_mem(&dd);
		return err;
	}
	p->dd = dd;
	return 0;
}

void xr_pop_dd_free(struct xr_pop *p)
{
	if (!p->dd)
		return;
	ext2fs_free_mem(&p->dd->v);
	ext2fs_free_mem(&p->dd->cmp);
	ext2fs_free_mem(&p->dd);
}

/* Twice the slots, every entry placed again. */
static errcode_t table_grow(struct xr_pop_dd *dd)
{
	struct xr_dd_slot *old = dd->v;
	size_t i, j, oslots = dd->mask + 1;
	errcode_t err = table_alloc(dd, oslots * 2);

	if (err) {
		dd->v = old;
		return err;
	}
	for (i = 0; i < oslots; i++) {
		if (!old[i].pblk)
			continue;
		for (j = old[i].hash & dd->mask; dd->v[j].pblk;
		     j = (j + 1) & dd->mask)
			;
		dd->v[j] = old[i];
	}
	ext2fs_free_mem(&old);
	return 0;
}

static errcode_t table_put(struct xr_pop_dd *dd, __u64 hash, blk64_t pblk)
{
	size_t j;
	errcode_t err;

	if ((dd->n + 1) * 4 > (dd->mask + 1) * 3) {
		err = table_grow(dd);
		if (err)
			return err;
	}
	for (j = hash & dd->mask; dd->v[j].pblk; j = (j + 1) & dd->mask)
		;
	dd->v[j].hash = hash;
	dd->v[j].pblk = (__u32)pblk;
	dd->v[j].refs = 1;
	dd->n++;
	return 0;
}

/* The blocks of this run allocated and staged, not yet written. */
struct pending {
	char		*buf;		/* the staging buffer, compacted */
	blk64_t		pblk, n;
};

/* Is the block at pblk (written, or pending) the same as src? */
static errcode_t same(struct xr_pop *p, const struct pending *w,
		      blk64_t pblk, const char *src, int *eq)
{
	unsigned int bs = p->fs->blocksize;
	errcode_t err = 0;

	if (w->n && pblk >= w->pblk && pblk < w->pblk + w->n) {
		*eq = !memcmp(w->buf + (pblk - w->pblk) * bs, src, bs);
		return 0;
	}
	err = xr_pop_read_block(p->fs, pblk, p->dd->cmp);
	*eq = !err && !memcmp(p->dd->cmp, src, bs);
	return err;
}

/* The slot of a block equal to src, or NULL. */
static errcode_t find(struct xr_pop *p, const struct pending *w, __u64 hash,
		      const char *src, struct xr_dd_slot **ret)
{
	struct xr_pop_dd *dd = p->dd;
	size_t j;
	int eq = 0;
	errcode_t err = 0;

	*ret = NULL;
	for (j = hash & dd->mask; !err && dd->v[j].pblk;
	     j = (j + 1) & dd->mask) {
		if (dd->v[j].hash != hash || !dd->v[j].refs)
			continue;	/* another block, or one given back */
		err = same(p, w, dd->v[j].pblk, src, &eq);
		if (!err && eq) {
			*ret = &dd->v[j];
			break;
		}
	}
	return err;
}

static errcode_t flush(struct xr_pop *p, struct pending *w)
{
	errcode_t err = 0;

	if (w->n)
		err = io_channel_write_blk64(p->fs->io, w->pblk, (int)w->n,
					     w->buf);
	w->n = 0;
	return err;
}

/* A new block for lblk's copy: the next free one after the last. */
static errcode_t place(struct xr_pop_data *d, struct pending *w,
		       const char *src, __u64 hash, blk64_t *pblk)
{
	ext2_filsys fs = d->p->fs;
	unsigned int bs = fs->blocksize;
	errcode_t err = ext2fs_new_block2(fs, d->goal, NULL, pblk);

	if (err)
		return err;
	ext2fs_block_alloc_stats2(fs, *pblk, +1);
	d->goal = *pblk + 1;
	if (w->n && *pblk != w->pblk + w->n)
		err = flush(d->p, w);
	if (err)
		return err;
	if (!w->n)
		w->pblk = *pblk;
	if (w->buf + w->n * bs != src)
		memmove(w->buf + w->n * bs, src, bs);
	w->n++;
	return table_put(d->p->dd, hash, *pblk);
}

/*
 * The staged run of d, deduplicated: each block maps the copy it
 * equals, or a new block written with its neighbours.
 */
errcode_t xr_pop_dd_write(struct xr_pop_data *d)
{
	struct xr_pop *p = d->p;
	unsigned int bs = p->fs->blocksize;
	struct pending w = { p->stage, 0, 0 };
	struct xr_dd_slot *s;
	blk64_t i, pblk;
	errcode_t err = 0;

	for (i = 0; !err && i < d->st_n; i++) {
		const char *src = p->stage + i * bs;
		__u64 hash = xr_block_hash(src, bs);

		err = find(p, &w, hash, src, &s);
		if (!err && s && s->refs < 0xffffffffU) {
			s->refs++;
			pblk = s->pblk;
		} else if (!err) {
			err = place(d, &w, src, hash, &pblk);
		}
		if (!err)
			err = xr_pop_data_map(d, d->st_lblk + i, pblk, 1);
	}
	if (!err)
		err = flush(p, &w);
	p->req->data_bytes += d->st_n * bs;
	d->st_lblk += d->st_n;
	d->st_n = 0;
	return err;
}

/* The slot of the block at pblk (its bytes hashed again), or NULL. */
static errcode_t slot_of(struct xr_pop *p, blk64_t pblk,
			 struct xr_dd_slot **ret)
{
	struct xr_pop_dd *dd = p->dd;
	errcode_t err = xr_pop_read_block(p->fs, pblk, dd->cmp);
	size_t j;

	*ret = NULL;
	if (err)
		return err;
	for (j = xr_block_hash(dd->cmp, p->fs->blocksize) & dd->mask;
	     dd->v[j].pblk; j = (j + 1) & dd->mask)
		if (dd->v[j].pblk == pblk && dd->v[j].refs) {
			*ret = &dd->v[j];
			break;
		}
	return 0;
}

static int cmp_blk(const void *x, const void *y)
{
	blk64_t a = *(const blk64_t *)x, b = *(const blk64_t *)y;

	return (a > b) - (a < b);
}

/* Every block the mappings name, once a mapping, sorted. */
static errcode_t mapped_blocks(const struct xr_map_vec *maps, blk64_t **out,
			       size_t *n)
{
	size_t i, total = 0;
	blk64_t k, *v;
	errcode_t err;

	for (i = 0; i < maps->n; i++)
		total += maps->v[i].len;
	err = ext2fs_get_array(total ? total : 1, sizeof(*v), &v);
	if (err)
		return err;
	total = 0;
	for (i = 0; i < maps->n; i++)
		for (k = 0; k < maps->v[i].len; k++)
			v[total++] = maps->v[i].pblk + k;
	qsort(v, total, sizeof(*v), cmp_blk);
	*out = v;
	*n = total;
	return 0;
}

/*
 * A file the build made goes (an archive names it twice, a later layer
 * replaces or deletes it): each of its blocks loses its mappings; a
 * block others still map is kept in use after ext2fs_punch gives back
 * the whole file, and a block no one maps any more leaves the table (its
 * slot stays, with no count, as a mark for the probes that pass it).
 * ext2fs_punch gives back a block once a mapping: one the file maps m
 * times (equal blocks of one file) is taken m times again, then given
 * back once when no one maps it, so that the free counts stay right.
 */
errcode_t xr_pop_dd_punch(struct xr_pop *p, ext2_ino_t ino,
			  struct ext2_inode *in)
{
	struct xr_map_vec maps = { 0 }, fix = { 0 };
	struct xr_map one = { 0, 0, 0, 0 };
	struct xr_dd_slot *s;
	blk64_t *b = NULL, k;
	size_t i, j, n = 0;
	errcode_t err;

	err = xr_get_mappings(p->fs, ino, in, 0, 1ULL << 32, &maps);
	if (!err)
		err = mapped_blocks(&maps, &b, &n);
	for (i = 0; !err && i < n; i = j) {
		blk64_t m;

		for (j = i + 1; j < n && b[j] == b[i]; j++)
			;
		m = j - i;
		err = slot_of(p, b[i], &s);
		if (err || !s)
			continue;
		s->refs = s->refs > m ? s->refs - m : 0;
		if (!s->refs && m == 1)
			continue;		/* punch gives it back right */
		one.pblk = b[i];
		one.len = m;
		one.uninit = !s->refs;		/* no one maps it now */
		err = xr_map_push(&fix, &one);
	}
	if (!err)
		err = ext2fs_punch(p->fs, ino, in, NULL, 0, ~0ULL);
	for (i = 0; !err && i < fix.n; i++) {
		for (k = 0; k < fix.v[i].len; k++)
			ext2fs_block_alloc_stats2(p->fs, fix.v[i].pblk, +1);
		if (fix.v[i].uninit)
			ext2fs_block_alloc_stats2(p->fs, fix.v[i].pblk, -1);
	}
	ext2fs_free_mem(&b);
	xr_map_vec_free(&maps);
	xr_map_vec_free(&fix);
	return err;
}

static int by_pblk(const void *x, const void *y)
{
	const struct xr_dd_slot *a = x, *b = y;

	return (a->pblk > b->pblk) - (a->pblk < b->pblk);
}

/* The shared blocks' slots first, by block; their number. */
static size_t shared_sorted(struct xr_pop_dd *dd)
{
	size_t i, k = 0;

	for (i = 0; i <= dd->mask; i++)
		if (dd->v[i].pblk && dd->v[i].refs > 1)
			dd->v[k++] = dd->v[i];
	if (k)
		qsort(dd->v, k, sizeof(*dd->v), by_pblk);
	return k;
}

/* Inode 5's empty tree (extref_format's) given back, the inode cleared. */
static errcode_t clear_ino5(ext2_filsys fs)
{
	struct ext2_inode_large in;
	errcode_t err;

	memset(&in, 0, sizeof(in));
	err = ext2fs_read_inode_full(fs, EXTREF_INO, (struct ext2_inode *)&in,
				     sizeof(in));
	if (!err && ext2fs_inode_has_valid_blocks2(fs, (struct ext2_inode *)&in))
		err = ext2fs_punch(fs, EXTREF_INO, (struct ext2_inode *)&in,
				   NULL, 0, ~0ULL);
	memset(&in, 0, sizeof(in));
	if (!err)
		err = ext2fs_write_inode_full(fs, EXTREF_INO,
					      (struct ext2_inode *)&in,
					      sizeof(in));
	return err;
}

/* Records in order; touching ones with one count are merged. */
static errcode_t load(xr_stage_t st, const struct extref_rec *v, size_t n)
{
	struct extref_rec r = { 0, 0, 0 };
	size_t i;
	errcode_t err = 0;

	for (i = 0; !err && i < n; i++) {
		if (r.len && v[i].start == r.start + r.len &&
		    v[i].count == r.count &&
		    r.len + v[i].len <= EXTREF_MAX_REC_LEN) {
			r.len += v[i].len;
			continue;
		}
		if (r.len)
			err = xr_stage_add(st, &r);
		r = v[i];
	}
	if (!err && r.len)
		err = xr_stage_add(st, &r);
	return err;
}

errcode_t xr_pop_tree_load(ext2_filsys fs, const struct extref_rec *r,
			   size_t n)
{
	xr_stage_t st;
	errcode_t err;

	if (!n)
		return 0;
	err = clear_ino5(fs);
	if (!err)
		err = xr_stage_begin(fs, &st);
	if (err)
		return err;
	err = load(st, r, n);
	if (!err)
		err = xr_stage_commit(st);
	else
		xr_stage_abort(st);
	return err;
}

/*
 * The counts of the shared blocks into the tree, in one bulk load; the
 * table is used up.  Nothing shared: the empty tree stays.
 */
errcode_t xr_pop_dd_finish(struct xr_pop *p)
{
	size_t n = shared_sorted(p->dd), i;
	struct extref_rec *r = NULL;
	errcode_t err;

	if (!n)
		return 0;
	err = ext2fs_get_array(n, sizeof(*r), &r);
	for (i = 0; !err && i < n; i++) {
		r[i].start = p->dd->v[i].pblk;
		r[i].len = 1;
		r[i].count = p->dd->v[i].refs;
	}
	if (!err) {
		ext2fs_free_mem(&p->dd->v);	/* used up */
		p->dd->mask = 0;
		err = xr_pop_tree_load(p->fs, r, n);
	}
	ext2fs_free_mem(&r);
	return err;
}
