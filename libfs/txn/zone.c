/*
 * zone.c --- the system zone (xr_zone.h): a sorted array of disjoint
 * block ranges, built once per open from the geometry and the journal
 * inode's map, searched in O(log n).  Attached to the filesystem it was
 * built for (a short list, one entry an open image), so that the extent
 * layer, the frees and libext2fs's allocation hooks, which see only the
 * ext2_filsys, find it.
 */
#include <pthread.h>
#include <stdlib.h>
#include "extref_err.h"
#include "base/extref_vec.h"
#include "base/xr_search.h"
#include "tree/extref_int.h"
#include "txn/xr_zone.h"

struct zrange {
	blk64_t		start, end;	/* [start, end) */
};

struct xr_zone {
	ext2_filsys	fs;
	struct zrange	*v;
	size_t		n, cap;
	blk64_t		first, total;	/* the filesystem's data blocks */
	/* inode 5's blocks at the attach: an allocation that meets one
	 * checks it against inode 5 as it is now (tree_still_owns) */
	ext2fs_block_bitmap tree_map;
	int		hooked;		/* the allocation hooks are ours */
	int		tree_free;	/* a block of inode 5 the bitmap
					   calls free (add_tree) */
	int		repair;		/* xr_zone_repair: mappings unchecked */
	/* the session's tree (xr_zone_records): a block a record covers
	 * is in use, whatever the bitmap says */
	extref_tree_t	*records;
	errcode_t	(*old_alloc)(ext2_filsys, blk64_t, blk64_t *);
	errcode_t	(*old_range)(ext2_filsys, int, blk64_t, blk64_t,
				     blk64_t *, blk64_t *);
	struct xr_zone	*next;
};

static struct xr_zone *zones;
static pthread_mutex_t zones_lock = PTHREAD_MUTEX_INITIALIZER;

static errcode_t add(struct xr_zone *z, blk64_t start, blk64_t len)
{
	errcode_t err;

	if (!len)
		return 0;
	err = xr_grow(&z->v, &z->cap, z->n, sizeof(*z->v));
	if (err)
		return err;
	z->v[z->n].start = start;
	z->v[z->n++].end = start + len;
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct zrange *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorted, and ranges that overlap or touch made one. */
static void normalise(struct xr_zone *z)
{
	size_t i, out = 0;

	qsort(z->v, z->n, sizeof(*z->v), cmp_range);
	for (i = 0; i < z->n; i++) {
		if (out && z->v[i].start <= z->v[out - 1].end) {
			if (z->v[i].end > z->v[out - 1].end)
				z->v[out - 1].end = z->v[i].end;
			continue;
		}
		z->v[out++] = z->v[i];
	}
	z->n = out;
}

/* The index of the first range that ends after blk (n: none). */
static size_t find(const struct xr_zone *z, blk64_t blk)
{
	return XR_PARTITION_POINT(z->n, i, z->v[i].end <= blk);
}

/* Does [blk, blk + len) meet the zone? */
static int hits(const struct xr_zone *z, blk64_t blk, blk64_t len)
{
	size_t i = find(z, blk);

	return i < z->n && z->v[i].start < blk + len;
}

static int in_fs(const struct xr_zone *z, blk64_t blk, blk64_t len)
{
	return len && blk >= z->first && blk < z->total &&
	       len <= z->total - blk;
}

/* Superblocks, descriptors and reserved GDT, bitmaps, inode tables. */
static errcode_t add_groups(struct xr_zone *z)
{
	ext2_filsys fs = z->fs;
	blk64_t super, old_desc, new_desc;
	blk_t used;
	dgrp_t g;
	errcode_t err = add(z, 0, fs->super->s_first_data_block);

	for (g = 0; !err && g < fs->group_desc_count; g++) {
		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		if (super || g == 0)
			err = add(z, ext2fs_group_first_block2(fs, g), used);
		if (!err && new_desc)
			err = add(z, new_desc, 1);
		if (!err)
			err = add(z, ext2fs_block_bitmap_loc(fs, g), 1);
		if (!err)
			err = add(z, ext2fs_inode_bitmap_loc(fs, g), 1);
		if (!err)
			err = add(z, ext2fs_inode_table_loc(fs, g),
				  fs->inode_blocks_per_group);
	}
	return err;
}

/* The journal inode's blocks, data and extent tree, in runs. */
struct jwalk {
	struct xr_zone	*z;
	struct zrange	*v;
	size_t		n, cap;
	errcode_t	err;
};

static int jblock(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		  blk64_t ref_blk, int ref_offset, void *priv)
{
	struct jwalk *w = priv;
	blk64_t b = *blocknr;

	(void)fs; (void)blockcnt; (void)ref_blk; (void)ref_offset;
	if (w->n && w->v[w->n - 1].end == b) {
		w->v[w->n - 1].end++;
		return 0;
	}
	w->err = xr_grow(&w->v, &w->cap, w->n, sizeof(*w->v));
	if (w->err)
		return BLOCK_ABORT;
	w->v[w->n].start = b;
	w->v[w->n++].end = b + 1;
	return 0;
}

static errcode_t count_rec(const struct extref_rec *rec, void *priv)
{
	(void)rec;
	++*(size_t *)priv;
	return EXTREF_ITER_STOP;
}

/* Inode 5's blocks, data and extent tree: do any lie in [s, e)? */
struct tree_hit {
	blk64_t		start, end;
	int		hit;
};

static int tblock(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		  blk64_t ref_blk, int ref_offset, void *priv)
{
	struct tree_hit *h = priv;

	(void)fs; (void)blockcnt; (void)ref_blk; (void)ref_offset;
	if (*blocknr >= h->start && *blocknr < h->end) {
		h->hit = 1;
		return BLOCK_ABORT;
	}
	return 0;
}

/*
 * The journal's runs against the zone so far (geometry), the tree's
 * records and inode 5's blocks (tree_map): a journal that shares a
 * block would log over it at the next commit.
 */
static errcode_t check_journal(struct xr_zone *z, extref_tree_t tree,
			       const struct jwalk *w)
{
	size_t i, nrec = 0;
	blk64_t b;
	errcode_t err = 0;

	for (i = 0; !err && i < w->n; i++) {
		blk64_t s = w->v[i].start, len = w->v[i].end - s;

		if (!in_fs(z, s, len) || hits(z, s, len))
			return EXTREF_ERR_JNL_OVERLAP;
		if (z->tree_map && !ext2fs_find_first_set_block_bitmap2(
				z->tree_map, s, s + len - 1, &b))
			return EXTREF_ERR_JNL_OVERLAP;
		if (tree)
			err = extref_tree_iterate(tree, s, len, 0, count_rec,
						  &nrec);
		if (!err && nrec)
			return EXTREF_ERR_JNL_OVERLAP;
	}
	return err;
}

static int tmark(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		 blk64_t ref_blk, int ref_offset, void *priv)
{
	struct xr_zone *z = priv;

	(void)blockcnt; (void)ref_blk; (void)ref_offset;
	if (!in_fs(z, *blocknr, 1))
		return 0;
	ext2fs_mark_block_bitmap2(z->tree_map, *blocknr);
	if (fs->block_map && !ext2fs_test_block_bitmap2(fs->block_map, *blocknr))
		z->tree_free = 1;
	return 0;
}

/* inode 5's blocks, data and extent tree, in a map of runs. */
static errcode_t add_tree(struct xr_zone *z)
{
	ext2_filsys fs = z->fs;
	int type = fs->default_bitmap_type;
	errcode_t err;

	fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
	err = ext2fs_allocate_block_bitmap(fs, "extref zone: tree blocks",
					   &z->tree_map);
	fs->default_bitmap_type = type;
	if (err) {
		z->tree_map = NULL;
		return err;
	}
	/* a map the walk cannot follow is the tree's open's to refuse:
	 * what was met is kept */
	(void)extref_block_iterate(fs, EXTREF_INO, BLOCK_FLAG_READ_ONLY,
				   tmark, z);
	/* a tree block the bitmap calls free would be handed out by the
	 * next allocation and caught only at the close's proof, after the
	 * commit: refused here, before anything is written */
	return z->tree_free ? EXTREF_ERR_ZONE_BITMAP : 0;
}

/*
 * [blk, blk + len), free in the bitmap, held blocks of inode 5 at the
 * attach: the tree gave them back since (ext2fs_punch of an emptied
 * tree) or the bitmap is damaged.  Inode 5 is walked again to tell,
 * only for such a candidate (rare).
 */
static errcode_t tree_still_owns(struct xr_zone *z, blk64_t blk,
				 blk64_t len)
{
	struct tree_hit th = { .start = blk, .end = blk + len };
	blk64_t b;
	errcode_t err;

	if (!z->tree_map || ext2fs_find_first_set_block_bitmap2(z->tree_map,
						blk, blk + len - 1, &b))
		return 0;
	err = extref_block_iterate(z->fs, EXTREF_INO, BLOCK_FLAG_READ_ONLY,
				   tblock, &th);
	if (err || th.hit)
		return err ? err : EXTREF_ERR_ZONE_BITMAP;
	ext2fs_unmark_block_bitmap_range2(z->tree_map, blk, len);
	return 0;
}

static errcode_t jrun(struct jwalk *w, blk64_t start, blk64_t len)
{
	if (w->n && w->v[w->n - 1].end == start) {
		w->v[w->n - 1].end += len;
		return 0;
	}
	w->err = xr_grow(&w->v, &w->cap, w->n, sizeof(*w->v));
	if (w->err)
		return w->err;
	w->v[w->n].start = start;
	w->v[w->n++].end = start + len;
	return 0;
}

/*
 * An extent-mapped journal, one extent at a time (a journal is made in a
 * few): its leaf extents and its index blocks.  Bounded as jown.c's
 * walk: a tree whose entries name one block again is cut short, and
 * what was met is checked.
 */
static errcode_t walk_journal_extents(ext2_filsys fs, ext2_ino_t ino,
				      const struct ext2_inode *inode,
				      struct jwalk *w)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent e;
	int op = EXT2_EXTENT_ROOT;
	blk64_t left = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)inode)
		       / (fs->blocksize / 512) + 8;
	errcode_t err = ext2fs_extent_open(fs, ino, &h);

	if (err)
		return err;
	while (!(err = ext2fs_extent_get(h, op, &e)) && left--) {
		op = EXT2_EXTENT_NEXT;
		if (e.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT)
			continue;
		err = jrun(w, e.e_pblk, (e.e_flags & EXT2_EXTENT_FLAGS_LEAF) ?
			   e.e_len : 1);
		if (err)
			break;
	}
	ext2fs_extent_free(h);
	return err == EXT2_ET_EXTENT_NO_NEXT ? 0 : err;
}

static errcode_t add_journal(struct xr_zone *z, extref_tree_t tree)
{
	ext2_filsys fs = z->fs;
	ext2_ino_t ino = fs->super->s_journal_inum;
	struct ext2_inode inode;
	struct jwalk w = { .z = z };
	errcode_t err;
	size_t i;

	if (!ext2fs_has_feature_journal(fs->super) || !ino)
		return 0;	/* none, or on a device of its own */
	err = ext2fs_read_inode(fs, ino, &inode);
	if (!err && (inode.i_flags & EXT4_EXTENTS_FL))
		err = walk_journal_extents(fs, ino, &inode, &w);
	else if (!err)
		err = extref_block_iterate(fs, ino, BLOCK_FLAG_READ_ONLY,
					   jblock, &w);
	if (!err)
		err = w.err;
	if (!err)
		err = check_journal(z, tree, &w);
	for (i = 0; !err && i < w.n; i++)
		err = add(z, w.v[i].start, w.v[i].end - w.v[i].start);
	free(w.v);
	return err;
}

struct first_rec {
	blk64_t		start, end;
	int		found;
};

static errcode_t take_first(const struct extref_rec *r, void *priv)
{
	struct first_rec *f = priv;

	f->start = r->start;
	f->end = r->start + r->len;
	f->found = 1;
	return EXTREF_ITER_STOP;
}

/*
 * Does a record of the session's tree cover a block of [blk, blk + len)?
 * Then *at is the first such block and *past the end of its record.  A
 * record says at least two files map its blocks: one the bitmap calls
 * free is in use all the same (a bitmap damaged, or another tool's
 * freeb), and is never handed out.  One search of the tree in memory
 * (xr_op_begin read every node before the first write); not from inside
 * the tree's own allocation, nor on a tree that failed (its operations
 * say so).
 */
static int recorded(const struct xr_zone *z, blk64_t blk, blk64_t len,
		    blk64_t *at, blk64_t *past)
{
	extref_tree_t t = z->records ? *z->records : NULL;
	struct first_rec f = { 0 };

	if (!xr_tree_searchable(t) ||
	    extref_tree_iterate(t, blk, len, 0, take_first, &f) || !f.found)
		return 0;
	*at = f.start > blk ? f.start : blk;
	*past = f.end;
	return 1;
}

/*
 * The allocator's candidate: past every range of the zone it is in.  A
 * block of the zone that the bitmap calls free means the bitmap is
 * damaged (a sound one always marks the metadata: libext2fs marks it
 * for the groups it does not read, BLOCK_UNINIT): refused.  A block a
 * record of the tree covers is passed over (recorded).
 */
static errcode_t search_from(struct xr_zone *z, blk64_t from,
			     blk64_t last, blk64_t *ret)
{
	blk64_t at, past;
	errcode_t err;

	for (;;) {
		err = ext2fs_find_first_zero_block_bitmap2(z->fs->block_map,
							   from, last, ret);
		if (err)
			return err;
		if (hits(z, *ret, 1))
			return EXTREF_ERR_ZONE_BITMAP;
		err = tree_still_owns(z, *ret, 1);
		if (err || !recorded(z, *ret, 1, &at, &past))
			return err;
		if (past > last)
			return ENOENT;
		from = past;
	}
}

/* The first free block at or after goal, wrapping round, as libext2fs's
 * own search. */
static errcode_t first_free(struct xr_zone *z, blk64_t goal,
			    blk64_t *ret)
{
	blk64_t last = z->total - 1;
	errcode_t err;

	if (goal < z->first || goal > last)
		goal = z->first;
	err = search_from(z, goal, last, ret);
	if (err == ENOENT && goal > z->first)
		err = search_from(z, z->first, goal - 1, ret);
	return err == ENOENT ? EXT2_ET_BLOCK_ALLOC_FAIL : err;
}

static struct xr_zone *lookup(ext2_filsys fs)
{
	struct xr_zone *z;

	pthread_mutex_lock(&zones_lock);
	for (z = zones; z && z->fs != fs; z = z->next)
		;
	pthread_mutex_unlock(&zones_lock);
	return z;
}

static errcode_t zone_alloc_block(ext2_filsys fs, blk64_t goal,
				  blk64_t *ret)
{
	struct xr_zone *z = lookup(fs);

	if (!fs->block_map)
		return EXT2_ET_NO_BLOCK_BITMAP;
	if (!z)		/* not ours (cannot be: the hook goes with it) */
		return ext2fs_new_block2(fs, goal, fs->block_map, ret);
	return first_free(z, goal, ret);
}

/*
 * One pass of ext2fs_new_range's search: free runs starting in
 * [from, last], each checked against the zone.  ENOENT: none fits.
 */
static errcode_t range_in(struct xr_zone *z, int flags, blk64_t from,
			  blk64_t last, blk64_t len, blk64_t *pblk,
			  blk64_t *plen)
{
	blk64_t start, end, cap, goal = from, at, past;
	errcode_t err;

	while (!(err = search_from(z, from, last, &start))) {
		if ((flags & EXT2_NEWRANGE_FIXED_GOAL) && start != goal)
			return ENOENT;
		cap = len - 1 > z->total - 1 - start ? z->total - 1 :
		      start + len - 1;
		err = ext2fs_find_first_set_block_bitmap2(z->fs->block_map,
							  start, cap, &end);
		if (err == ENOENT)
			end = cap + 1;
		else if (err)
			return err;
		/* a block of the zone inside a free run: the bitmap is
		 * damaged */
		if (hits(z, start, end - start))
			return EXTREF_ERR_ZONE_BITMAP;
		err = tree_still_owns(z, start, end - start);
		if (err)
			return err;
		/* start is no record's (search_from): the run ends at one */
		if (recorded(z, start, end - start, &at, &past))
			end = at;
		if (!(flags & EXT2_NEWRANGE_MIN_LENGTH) || end - start >= len) {
			*pblk = start;
			*plen = end - start;
			return 0;
		}
		if ((flags & EXT2_NEWRANGE_FIXED_GOAL) || end > last)
			return ENOENT;
		from = end;
	}
	return err;
}

/* ext2fs_new_range's search, from goal and then from the start. */
static errcode_t zone_new_range(ext2_filsys fs, int flags, blk64_t goal,
				blk64_t len, blk64_t *pblk, blk64_t *plen)
{
	struct xr_zone *z = lookup(fs);
	errcode_t err;

	if (!z || !fs->block_map)
		return EXT2_ET_NO_BLOCK_BITMAP;
	if (goal < z->first || goal >= z->total)
		goal = z->first;
	err = range_in(z, flags, goal, z->total - 1, len, pblk, plen);
	if (err == ENOENT && !(flags & EXT2_NEWRANGE_FIXED_GOAL) &&
	    goal > z->first)
		err = range_in(z, flags, z->first, goal - 1, len, pblk, plen);
	return err == ENOENT ? EXT2_ET_BLOCK_ALLOC_FAIL : err;
}

static void hook(struct xr_zone *z)
{
	ext2fs_set_alloc_block_callback(z->fs, zone_alloc_block,
					&z->old_alloc);
	ext2fs_set_new_range_callback(z->fs, zone_new_range, &z->old_range);
	z->hooked = 1;
}

static void unhook(struct xr_zone *z)
{
	errcode_t (*a)(ext2_filsys, blk64_t, blk64_t *);
	errcode_t (*r)(ext2_filsys, int, blk64_t, blk64_t, blk64_t *,
		       blk64_t *);

	if (!z->hooked)
		return;
	ext2fs_set_alloc_block_callback(z->fs, z->old_alloc, &a);
	ext2fs_set_new_range_callback(z->fs, z->old_range, &r);
	z->hooked = 0;
}

static void zone_free(struct xr_zone *z)
{
	unhook(z);
	if (z->tree_map)
		ext2fs_free_block_bitmap(z->tree_map);
	free(z->v);
	free(z);
}

/*
 * The descriptors checked as ext2fs_check_desc() checks them, in
 * O(groups log groups): every block bitmap, inode bitmap and inode table
 * inside the filesystem (inside its own group without flex_bg), and
 * none of them on another one or on a superblock, descriptor or
 * reserved GDT block; libext2fs's codes.
 */
struct desc_item {
	blk64_t		start, end;
	errcode_t	code;		/* 0: a superblock's region */
};

static int cmp_item(const void *a, const void *b)
{
	const struct desc_item *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static errcode_t push_item(struct desc_item **v, size_t *cap, size_t *n,
			   blk64_t start, blk64_t len, errcode_t code)
{
	errcode_t err;

	if (!len)
		return 0;
	err = xr_grow(v, cap, *n, sizeof(**v));
	if (!err) {
		(*v)[*n].start = start;
		(*v)[*n].end = start + len;
		(*v)[(*n)++].code = code;
	}
	return err;
}

static errcode_t desc_items(ext2_filsys fs, struct desc_item **v,
			    size_t *cap, size_t *n)
{
	blk64_t super, old_desc, new_desc, first, last;
	blk64_t it, ipg = fs->inode_blocks_per_group;
	blk_t used;
	dgrp_t g;
	errcode_t err = 0;

	for (g = 0; !err && g < fs->group_desc_count; g++) {
		first = fs->super->s_first_data_block;
		last = ext2fs_blocks_count(fs->super) - 1;
		if (!ext2fs_has_feature_flex_bg(fs->super)) {
			first = ext2fs_group_first_block2(fs, g);
			last = ext2fs_group_last_block2(fs, g);
		}
		if (ext2fs_block_bitmap_loc(fs, g) < first ||
		    ext2fs_block_bitmap_loc(fs, g) > last)
			return EXT2_ET_GDESC_BAD_BLOCK_MAP;
		if (ext2fs_inode_bitmap_loc(fs, g) < first ||
		    ext2fs_inode_bitmap_loc(fs, g) > last)
			return EXT2_ET_GDESC_BAD_INODE_MAP;
		it = ext2fs_inode_table_loc(fs, g);
		if (it < first || it + ipg - 1 > last)
			return EXT2_ET_GDESC_BAD_INODE_TABLE;
		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		if (super || g == 0)
			err = push_item(v, cap, n,
					ext2fs_group_first_block2(fs, g) +
					(g == 0 && fs->blocksize == 1024 &&
					 !fs->super->s_first_data_block),
					used, 0);
		if (!err && new_desc)
			err = push_item(v, cap, n, new_desc, 1, 0);
		if (!err)
			err = push_item(v, cap, n, ext2fs_block_bitmap_loc(fs, g),
					1, EXT2_ET_GDESC_BAD_BLOCK_MAP);
		if (!err)
			err = push_item(v, cap, n, ext2fs_inode_bitmap_loc(fs, g),
					1, EXT2_ET_GDESC_BAD_INODE_MAP);
		if (!err)
			err = push_item(v, cap, n, it, ipg,
					EXT2_ET_GDESC_BAD_INODE_TABLE);
	}
	return err;
}

static errcode_t check_desc(ext2_filsys fs)
{
	struct desc_item *v = NULL;
	size_t cap = 0, n = 0, i, far = 0;
	errcode_t err = desc_items(fs, &v, &cap, &n);

	if (!err && n)
		qsort(v, n, sizeof(*v), cmp_item);
	/* far: the item reaching furthest so far; two superblock regions
	 * may meet (libext2fs marks them alike), nothing else may */
	for (i = 1; !err && i < n; i++) {
		if (v[i].start < v[far].end && (v[i].code || v[far].code))
			err = v[i].code ? v[i].code : v[far].code;
		if (v[i].end > v[far].end)
			far = i;
	}
	free(v);
	return err;
}

static errcode_t build(ext2_filsys fs, extref_tree_t tree, int flags,
		       struct xr_zone *z)
{
	errcode_t err = check_desc(fs);

	z->fs = fs;
	z->first = fs->super->s_first_data_block;
	z->total = ext2fs_blocks_count(fs->super);
	if (!err)
		err = add_groups(z);
	if (!err)
		normalise(z);
	if (!err && tree)
		err = add_tree(z);
	if (!err && (flags & XR_ZONE_JOURNAL))
		err = add_journal(z, tree);
	if (!err)
		normalise(z);
	return err;
}

errcode_t xr_zone_attach(ext2_filsys fs, extref_tree_t tree, int flags)
{
	struct xr_zone *z = calloc(1, sizeof(*z));
	errcode_t err;

	if (!z)
		return EXT2_ET_NO_MEMORY;
	err = build(fs, tree, flags, z);
	if (err) {		/* a zone built before stays */
		zone_free(z);
		return err;
	}
	xr_zone_detach(fs);	/* built again */
	if (flags & XR_ZONE_ALLOC)
		hook(z);
	pthread_mutex_lock(&zones_lock);
	z->next = zones;
	zones = z;
	pthread_mutex_unlock(&zones_lock);
	return 0;
}

void xr_zone_detach(ext2_filsys fs)
{
	struct xr_zone **p, *z = NULL;

	pthread_mutex_lock(&zones_lock);
	for (p = &zones; *p; p = &(*p)->next)
		if ((*p)->fs == fs) {
			z = *p;
			*p = z->next;
			break;
		}
	pthread_mutex_unlock(&zones_lock);
	if (z)
		zone_free(z);
}

struct xr_zone *xr_zone_of(ext2_filsys fs)
{
	return fs ? lookup(fs) : NULL;
}

/* Does [blk, blk + len) hold a block of inode 5 (as at the attach, or
 * as allocated since: an allocation takes one only once inode 5 no
 * longer maps it, tree_still_owns)? */
static int in_tree(const struct xr_zone *z, blk64_t blk, blk64_t len)
{
	blk64_t b;

	return z->tree_map && !ext2fs_find_first_set_block_bitmap2(
			z->tree_map, blk, blk + len - 1, &b);
}

errcode_t xr_zone_check_in(const struct xr_zone *z, blk64_t blk,
			   blk64_t len)
{
	if (!z || z->repair)
		return 0;
	return in_fs(z, blk, len) && !hits(z, blk, len) &&
	       !in_tree(z, blk, len) ? 0 : EXTREF_ERR_ZONE_MAP;
}

int xr_zone_is_meta(ext2_filsys fs, blk64_t blk, blk64_t len)
{
	struct xr_zone *z = xr_zone_of(fs);

	return z && (!in_fs(z, blk, len) || hits(z, blk, len));
}

errcode_t xr_zone_check(ext2_filsys fs, blk64_t blk, blk64_t len)
{
	return xr_zone_check_in(xr_zone_of(fs), blk, len);
}

errcode_t xr_zone_check_free(ext2_filsys fs, blk64_t blk, blk64_t len)
{
	struct xr_zone *z = xr_zone_of(fs);
	blk64_t b;

	if (!z)
		return 0;
	if (!in_fs(z, blk, len) || hits(z, blk, len))
		return EXTREF_ERR_ZONE_FREE;
	if (fs->block_map &&
	    !ext2fs_find_first_zero_block_bitmap2(fs->block_map, blk,
						  blk + len - 1, &b))
		return EXTREF_ERR_ZONE_FREE;
	return 0;
}

errcode_t xr_zone_check_mapped(const struct xr_zone *z, blk64_t blk,
			       blk64_t len)
{
	blk64_t b;
	errcode_t err = xr_zone_check_in(z, blk, len);

	if (err || !z || !z->fs->block_map)
		return err;
	return ext2fs_find_first_zero_block_bitmap2(z->fs->block_map, blk,
						    blk + len - 1, &b) ? 0 :
	       EXTREF_ERR_ZONE_UNMARKED;
}

void xr_zone_records(ext2_filsys fs, extref_tree_t *slot)
{
	struct xr_zone *z = xr_zone_of(fs);

	if (z)
		z->records = slot;
}

void xr_zone_repair(ext2_filsys fs, int on)
{
	struct xr_zone *z = xr_zone_of(fs);

	if (z)
		z->repair = on;
}
