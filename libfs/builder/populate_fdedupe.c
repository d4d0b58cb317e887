/*
 * populate_fdedupe.c --- the build's file deduplication, done as the
 * files go in (EXTREF_DEDUPE_FILE in extref_populate): a file identical
 * to one written before maps that file's blocks.
 *
 * Each file's signature mixes the hash of every non-zero block with its
 * place in the file; with the size it keys a table of the files written
 * (open addressing).  When a file ends and its key is there, the two
 * files are compared block by block in the image (same holes, same
 * bytes: the hash is never trusted); if they are the same, the new
 * file's blocks are given back (and punched out of the image file) and
 * it maps the first file's extents instead.  The second and later
 * mappings are kept as a list of extents; at the end they become the
 * tree's counts, in one bulk load.  A file's blocks are written before
 * it is known to be a copy: a source cannot be read twice (a pipe), and
 * the blocks given back are the next ones allocated.
 */
#include <stdlib.h>
#include <string.h>
#include "populate_int.h"

#define MIX	0x9E3779B185EBCA87ULL

struct xr_fdd_slot {
	__u64		key;
	ext2_ino_t	ino;		/* 0: an empty slot */
};

struct xr_pop_fdd {
	struct xr_fdd_slot	*v;
	size_t			mask, n;
	struct xr_map_vec	adds;	/* mappings past the first */
	char			*a, *b;	/* one block each */
};

__u64 xr_pop_fdd_mix(__u64 sig, blk64_t lblk, const void *block,
		     unsigned int bs)
{
	return (sig ^ (xr_block_hash(block, bs) + lblk * MIX)) * MIX + 1;
}

static __u64 key_of(__u64 sig, __u64 size)
{
	__u64 k = (sig ^ size) * MIX;

	return k ^ (k >> 29);
}

static errcode_t table_alloc(struct xr_pop_fdd *f, size_t slots)
{
	errcode_t err;

#ifdef EXTREF_FAULT_INJECTION
	if (xr_fault_nomem())	/* a growth, as xr_grow's */
		return EXT2_ET_NO_MEMORY;
#endif
	err = ext2fs_get_array(slots, sizeof(*f->v), &f->v);
	if (err)
		return err;
	memset(f->v, 0, slots * sizeof(*f->v));
	f->mask = slots - 1;
	return 0;
}

errcode_t xr_pop_fdd_init(struct xr_pop *p)
{
	struct xr_pop_fdd *f = NULL;
	errcode_t err = xr_pop_tree_is_empty(p->fs);

	if (!err)
		err = ext2fs_get_memzero(sizeof(*f), &f);
	if (!err)
		err = ext2fs_get_mem(p->fs->blocksize, &f->a);
	if (!err)
		err = ext2fs_get_mem(p->fs->blocksize, &f->b);
	if (!err)
		err = table_alloc(f, 1024);
	if (err) {
		if (f) {
			ext2fs_free_mem(&f->a);
			ext2fs_free_mem(&f->b);
		}
		ext2fs_free_mem(&f);
		return err;
	}
	p->fdd = f;
	return 0;
}

void xr_pop_fdd_free(struct xr_pop *p)
{
	if (!p->fdd)
		return;
	ext2fs_free_mem(&p->fdd->v);
	ext2fs_free_mem(&p->fdd->a);
	ext2fs_free_mem(&p->fdd->b);
	xr_map_vec_free(&p->fdd->adds);
	ext2fs_free_mem(&p->fdd);
}

static void place(struct xr_pop_fdd *f, __u64 key, ext2_ino_t ino)
{
	size_t j;

	for (j = key & f->mask; f->v[j].ino; j = (j + 1) & f->mask)
		;
	f->v[j].key = key;
	f->v[j].ino = ino;
	f->n++;
}

static errcode_t table_put(struct xr_pop_fdd *f, __u64 key, ext2_ino_t ino)
{
	struct xr_fdd_slot *old = f->v;
	size_t i, oslots = f->mask + 1;
	errcode_t err;

	if ((f->n + 1) * 4 > oslots * 3) {
		err = table_alloc(f, oslots * 2);
		if (err) {
			f->v = old;
			return err;
		}
		f->n = 0;
		for (i = 0; i < oslots; i++)
			if (old[i].ino)
				place(f, old[i].key, old[i].ino);
		ext2fs_free_mem(&old);
	}
	place(f, key, ino);
	return 0;
}

/* Do the two mapping lists hold the same bytes at the same places? */
static errcode_t same_data(struct xr_pop *p, const struct xr_map_vec *x,
			   const struct xr_map_vec *y, int *eq)
{
	struct xr_pop_fdd *f = p->fdd;
	size_t i = 0, j = 0;
	blk64_t xi = 0, yj = 0;		/* blocks into x->v[i], y->v[j] */
	errcode_t err = 0;

	*eq = 1;
	while (!err && *eq && i < x->n && j < y->n) {
		const struct xr_map *a = &x->v[i], *b = &y->v[j];

		if (a->uninit || b->uninit || a->lblk + xi != b->lblk + yj) {
			*eq = 0;
			break;
		}
		err = xr_pop_read_block(p->fs, a->pblk + xi, f->a);
		if (!err)
			err = xr_pop_read_block(p->fs, b->pblk + yj, f->b);
		if (!err && memcmp(f->a, f->b, p->fs->blocksize))
			*eq = 0;
		if (++xi == a->len)
			i++, xi = 0;
		if (++yj == b->len)
			j++, yj = 0;
	}
	if (i < x->n || j < y->n)
		*eq = 0;
	return err;
}

/* Is ino (a file made before) the same as d's file?  Its maps if so. */
static errcode_t same_file(struct xr_pop_data *d, ext2_ino_t ino,
			   const struct xr_map_vec *mine,
			   struct xr_map_vec *theirs, int *eq)
{
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(d->p->fs, ino, &in);

	*eq = 0;
	if (err || ino == d->ino || !in.i_links_count || in.i_dtime ||
	    !LINUX_S_ISREG(in.i_mode) || EXT2_I_SIZE(&in) != d->size ||
	    !(in.i_flags & EXT4_EXTENTS_FL))
		return err;
	err = xr_get_mappings(d->p->fs, ino, &in, 0, 1ULL << 32, theirs);
	if (!err)
		err = same_data(d->p, mine, theirs, eq);
	return err;
}

/* d's file gives back its blocks and maps theirs instead. */
static errcode_t adopt(struct xr_pop_data *d, const struct xr_map_vec *mine,
		       const struct xr_map_vec *theirs)
{
	struct xr_pop *p = d->p;
	__u64 size = d->size;
	size_t i;
	errcode_t err;

	err = ext2fs_punch(p->fs, d->ino, (struct ext2_inode *)d->in, NULL,
			   0, ~0ULL);
	/* what was written for nothing leaves the image file too */
	for (i = 0; !err && i < mine->n; i++)
		io_channel_discard(p->fs->io, mine->v[i].pblk,
				   mine->v[i].len);
	if (!err)
		err = xr_pop_data_begin(p, d->ino, d->in, d);
	d->size = size;
	for (i = 0; !err && i < theirs->n; i++) {
		err = xr_pop_data_map(d, theirs->v[i].lblk, theirs->v[i].pblk,
				      theirs->v[i].len);
		if (!err)
			err = xr_map_push(&p->fdd->adds, &theirs->v[i]);
	}
	if (!err)
		err = xr_pop_data_end(d);
	else
		xr_pop_data_abort(d);
	return err;
}

/*
 * d's file is all in the image (its inode not yet written): if a file
 * before it is the same, it maps that file's blocks; either way it is
 * remembered for the files after it.
 */
errcode_t xr_pop_fdd_end(struct xr_pop_data *d)
{
	struct xr_pop_fdd *f = d->p->fdd;
	struct xr_map_vec mine = { 0 }, theirs = { 0 };
	__u64 key = key_of(d->fsig, d->size);
	errcode_t err = 0;
	size_t j;
	int eq = 0;

	if (!d->fblocks || !LINUX_S_ISREG(d->in->i_mode))
		return 0;
	for (j = key & f->mask; !err && !eq && f->v[j].ino;
	     j = (j + 1) & f->mask) {
		if (f->v[j].key != key)
			continue;
		if (!mine.n)
			err = xr_get_mappings(d->p->fs, d->ino,
					      (struct ext2_inode *)d->in, 0,
					      1ULL << 32, &mine);
		theirs.n = 0;
		if (!err)
			err = same_file(d, f->v[j].ino, &mine, &theirs, &eq);
	}
	if (!err && eq)
		err = adopt(d, &mine, &theirs);
	/* a copy goes in too: it stands for the first if that one goes */
	if (!err)
		err = table_put(f, key, d->ino);
	xr_map_vec_free(&mine);
	xr_map_vec_free(&theirs);
	return err;
}

/* The index of an extent of adds equal to m, or adds.n. */
static size_t find_add(const struct xr_map_vec *adds, const struct xr_map *m)
{
	size_t i;

	for (i = adds->n; i-- > 0; )
		if (adds->v[i].pblk == m->pblk && adds->v[i].len == m->len)
			return i;
	return adds->n;
}

/*
 * A file the build made goes again (an archive names it twice): each of
 * its extents that another file maps too loses one mapping and stays in
 * use; the rest are given back.
 */
errcode_t xr_pop_fdd_punch(struct xr_pop *p, ext2_ino_t ino,
			   struct ext2_inode *in)
{
	struct xr_pop_fdd *f = p->fdd;
	struct xr_map_vec maps = { 0 }, keep = { 0 };
	size_t i, k;
	blk64_t b;
	errcode_t err;

	err = xr_get_mappings(p->fs, ino, in, 0, 1ULL << 32, &maps);
	for (i = 0; !err && i < maps.n; i++) {
		k = find_add(&f->adds, &maps.v[i]);
		if (k == f->adds.n)
			continue;
		f->adds.v[k] = f->adds.v[--f->adds.n];
		err = xr_map_push(&keep, &maps.v[i]);
	}
	if (!err)
		err = ext2fs_punch(p->fs, ino, in, NULL, 0, ~0ULL);
	for (i = 0; !err && i < keep.n; i++)
		for (b = 0; b < keep.v[i].len; b++)
			ext2fs_block_alloc_stats2(p->fs, keep.v[i].pblk + b,
						  +1);
	xr_map_vec_free(&maps);
	xr_map_vec_free(&keep);
	return err;
}

static int by_extent(const void *x, const void *y)
{
	const struct xr_map *a = x, *b = y;

	if (a->pblk != b->pblk)
		return a->pblk < b->pblk ? -1 : 1;
	return (a->len > b->len) - (a->len < b->len);
}

/*
 * The counts into the tree: the extents a file maps a second (third...)
 * time are the same extents each time (a copy maps its first file's
 * extents as they are), and different first files have different
 * blocks, so each group of equal extents is one record of its size
 * plus one.
 */
errcode_t xr_pop_fdd_finish(struct xr_pop *p)
{
	struct xr_map_vec *adds = &p->fdd->adds;
	struct extref_rec *r = NULL;
	size_t i, j, n = 0;
	errcode_t err;

	if (!adds->n)
		return 0;
	qsort(adds->v, adds->n, sizeof(*adds->v), by_extent);
	err = ext2fs_get_array(adds->n, sizeof(*r), &r);
	for (i = 0; !err && i < adds->n; i = j) {
		for (j = i + 1; j < adds->n &&
		     !by_extent(&adds->v[i], &adds->v[j]); j++)
			;
		r[n].start = adds->v[i].pblk;
		r[n].len = adds->v[i].len;
		r[n].count = (__u32)(j - i + 1);
		n++;
	}
	if (!err)
		err = xr_pop_tree_load(p->fs, r, n);
	ext2fs_free_mem(&r);
	return err;
}
