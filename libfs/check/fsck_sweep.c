/*
 * fsck_sweep.c --- expected counts from the mappings, as xfs_repair
 * computes them: sort the mappings by physical block and sweep them,
 * keeping the ends of the mappings that cover the sweep's position in a
 * heap.  Memory: the 16-byte mappings, plus 8 bytes for each mapping
 * covering one block at once (however many times a block is shared,
 * identical mappings of one inode are one entry).  Also the checks that
 * walk the sorted mappings: data blocks that are metadata, mapped blocks
 * free in the bitmap.
 */
#include <string.h>
#include "extref_fsck_int.h"

/* Sort the mappings and metadata in place. */
void xr_fsck_sort(struct xr_fsck *c)
{
	if (c->probe)
		xr_fsck_lean_sort(c);
	else
		xr_sort_mappings(c->map, c->nmap);
	xr_sort_meta(c->meta, c->nmeta);
}

/*
 * Index of the first mapping that can overlap block b: mappings are at
 * most XR_MAP_MAX_LEN long, so none starting further back reaches it.
 */
size_t xr_fsck_first_map(const struct xr_fsck *c, blk64_t b)
{
	blk64_t from = b > XR_MAP_MAX_LEN ? b - XR_MAP_MAX_LEN : 0;

	if (c->probe)
		return xr_fsck_lean_first(c, b);
	return XR_LOWER_BOUND(c->map, c->nmap, pblk, from);
}

struct pending {
	struct extref_rec	r;
	int			have;
	xr_rec_sink		sink;
	void			*priv;
	errcode_t		err;
};

static void flush(struct pending *p)
{
	struct extref_rec part;

	if (!p->have || p->err)
		return;
	part = p->r;
	while (!p->err && part.len) {
		struct extref_rec out = part;

		if (out.len > EXTREF_MAX_REC_LEN)
			out.len = EXTREF_MAX_REC_LEN;
		p->err = p->sink(&out, p->priv);
		part.start += out.len;
		part.len -= out.len;
	}
	p->have = 0;
}

static inline void segment(struct pending *p, blk64_t s, blk64_t e,
			   __u64 count)
{
	if (s >= e || count < 2)
		return;
	if (count > EXTREF_MAX_COUNT)
		count = EXTREF_MAX_COUNT;
	if (p->have && p->r.count == count && p->r.start + p->r.len == s) {
		p->r.len += e - s;
		return;
	}
	flush(p);
	p->r.start = s;
	p->r.len = e - s;
	p->r.count = count;
	p->have = 1;
}

/* A min-heap of the active mappings' ends, each end << 16 | count. */
struct ends {
	__u64	*v;
	size_t	n, cap;
};

static errcode_t ends_push(struct ends *h, __u64 x)
{
	size_t i, up;
	errcode_t err;

	if (h->n == h->cap &&
	    (err = xr_big_grow(&h->v, &h->cap, h->n, sizeof(*h->v))))
		return err;
	for (i = h->n++; i > 0 && h->v[up = (i - 1) / 2] > x; i = up)
		h->v[i] = h->v[up];
	h->v[i] = x;
	return 0;
}

static void ends_pop(struct ends *h)
{
	__u64 x = h->v[--h->n];
	size_t i = 0, k;

	while ((k = 2 * i + 1) < h->n) {
		if (k + 1 < h->n && h->v[k + 1] < h->v[k])
			k++;
		if (x <= h->v[k])
			break;
		h->v[i] = h->v[k];
		i = k;
	}
	if (h->n)
		h->v[i] = x;
}

/*
 * The sweep over either form of the mappings; lean is a constant in each
 * caller, so that each gets a loop of its own without the test.
 */
static inline __attribute__((always_inline))
errcode_t sweep(struct xr_fsck *c, xr_rec_sink sink, void *priv,
		const int lean)
{
	struct pending p = { .sink = sink, .priv = priv };
	struct ends h = { 0 };
	const __u64 *k = c->lean;
	const struct xr_mapping *m = c->map;
	blk64_t pos = 0;
	size_t i = 0, n = c->nmap;
	__u64 active = 0;

#define PBLK(i)	(lean ? k[i] >> XR_LEAN_PBLK_SHIFT : m[i].pblk)
	while (!p.err && (i < n || h.n)) {
		blk64_t next = h.n ? h.v[0] >> 16 : ~0ULL;

		if (i < n && PBLK(i) < next)
			next = PBLK(i);
		if (active)
			segment(&p, pos, next, active);
		pos = next;
		while (h.n && (h.v[0] >> 16) == pos) {
			active -= h.v[0] & 0xffff;
			ends_pop(&h);
		}
		while (!p.err && i < n && PBLK(i) == pos) {
			unsigned count = lean ? k[i] & 0xffff : m[i].count;
			blk64_t end = pos + (lean ? ((k[i] >> 16) & 0x7fff) + 1 :
					     m[i].len);

			i++;
			/* nothing else starts or ends before it ends: no
			 * need of the heap (most mappings) */
			if ((i == n || PBLK(i) >= end) &&
			    (!h.n || (h.v[0] >> 16) >= end)) {
				segment(&p, pos, end, active + count);
				pos = end;
				break;
			}
			active += count;
			p.err = ends_push(&h, (end << 16) | count);
		}
	}
#undef PBLK
	flush(&p);
	xr_big_free(&h.v, &h.cap, sizeof(*h.v));
	return p.err;
}

/*
 * Hand every expected record (runs of equal count >= 2, merged, in
 * order) to sink.  The mappings must be sorted (xr_fsck_sort).
 */
errcode_t xr_fsck_sweep(struct xr_fsck *c, xr_rec_sink sink, void *priv)
{
	if (c->lean)
		return sweep(c, sink, priv, 1);
	return sweep(c, sink, priv, 0);
}

static const char *meta_kind(int kind)
{
	switch (kind) {
	case XR_META_GROUP: return "group metadata";
	case XR_META_INDEX: return "an extent index block";
	case XR_META_XATTR: return "an extended-attribute block";
	default: return "a block of the reference-count tree";
	}
}

/*
 * Data mappings that land on metadata.  The fix, as e2fsck's pass 1D
 * for a block claimed by a file and by the filesystem: every file that
 * maps the block gets its own copy; the metadata keeps the block.  A
 * cross-link with metadata never becomes a share.
 */
void xr_fsck_check_metadata(struct xr_fsck *c)
{
	char who[XR_NAME_LEN];
	size_t i, j = 0, k;

	for (i = 0; i < c->nmap; i++) {
		blk64_t mp = xr_map_pblk(c, i), e = mp + xr_map_len(c, i);

		while (j < c->nmeta &&
		       c->meta[j].pblk + c->meta[j].len <= mp)
			j++;
		for (k = j; k < c->nmeta && c->meta[k].pblk < e; k++) {
			const struct xr_meta *md = &c->meta[k];
			blk64_t s = md->pblk > mp ? md->pblk : mp;

			/* Inode 5's blocks: fsck_treeblocks.c (the tree
			 * gives them up, the data stays); the probe, which
			 * only looks for a problem, stops at them here. */
			if (md->pblk + md->len <= mp ||
			    (md->ino == EXTREF_INO && !c->probe))
				continue;
			if (xr_problem(c, PR_X_DATA_IS_METADATA,
				       "inode %s maps block %llu, which is %s%s",
				       xr_fsck_ino_name(c, xr_map_ino(c, i),
							who, sizeof(who)),
				       (unsigned long long)s,
				       meta_kind(md->kind),
				       md->ino ? " of another inode" : "") &&
			    xr_fsck_note_unshare(c, s, md->pblk + md->len < e ?
						 md->pblk + md->len : e,
						 XR_UNS_KEEP_NONE) &&
			    !c->err)
				c->err = EXT2_ET_NO_MEMORY;
		}
	}
}

/*
 * The allocation bitmaps, as red-black trees of extents (as e2fsck reads
 * them): the default bit array would cost a bit per block, 32 MiB for a
 * 1 TiB filesystem, where the trees grow with how fragmented it is.
 */
errcode_t xr_fsck_read_bitmaps(struct xr_fsck *c, int block_only)
{
	ext2_filsys fs = c->fs;
	int type = fs->default_bitmap_type;
	errcode_t err = 0;

	fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
	if (!fs->block_map)
		err = ext2fs_read_block_bitmap(fs);
	if (!err && !block_only && !fs->inode_map)
		err = ext2fs_read_inode_bitmap(fs);
	fs->default_bitmap_type = type;
	return err;
}

/*
 * Mapped blocks the bitmap calls free: found, and marked in use if fixed.
 * Each search for a free block runs to the end of the filesystem, so
 * that the mappings (sorted) inside the in-use stretch it crossed need
 * no search of their own.
 */
errcode_t xr_fsck_check_bitmap(struct xr_fsck *c)
{
	ext2_filsys fs = c->fs;
	blk64_t s, e, b, last = ext2fs_blocks_count(fs->super) - 1;
	blk64_t used_from = 0, used_to = 0;	/* all in use */
	char who[XR_NAME_LEN], what[48];
	size_t i;
	errcode_t err = 0;

	if ((err = xr_fsck_read_bitmaps(c, 1)))
		return err;
	for (i = 0; i < c->nmap; i++) {
		s = xr_map_pblk(c, i);
		e = s + xr_map_len(c, i);
		if (s >= used_from && e <= used_to)
			continue;
		while (s < e) {
			blk64_t f, n;

			if (ext2fs_find_first_zero_block_bitmap2(fs->block_map,
								 s, last, &b))
				b = last + 1;
			used_from = s;
			used_to = b;
			if (b >= e)
				break;
			f = b;
			if (ext2fs_find_first_set_block_bitmap2(fs->block_map,
								f, e - 1, &n))
				n = e;
			if (xr_problem(c, PR_X_MAPPED_BLOCK_FREE,
				       "%s, mapped by inode %s",
				       xr_fsck_range(f, n, what, sizeof(what)),
				       xr_fsck_ino_name(c, xr_map_ino(c, i),
							who, sizeof(who))))
				xr_fsck_mark_in_use(c, f, n - f);
			s = n;
		}
	}
	return err;
}
