/*
 * source_img.c --- an ext4 or extref image as a build's source: opened
 * read-only through libext2fs (the file is never written, its journal
 * never replayed: one that needs recovery is refused, and so is one
 * mounted read-write), its regular
 * files' runs of blocks read from their extent trees or block maps
 * (bounded walks, every block checked to lie in the filesystem's data),
 * and the blocks two files or more map found by a scan of every inode:
 * a sweep over all the runs, sorted, without reading or hashing data.
 * An extref image's reflinks and an ext4 image's (impossible) shared
 * blocks are found alike; the tree of an extref source is not trusted
 * nor needed.
 */
#include <stdlib.h>
#include <string.h>
#include "source_img.h"
#include "base/extref_vec.h"
#include "txn/xr_zone.h"

errcode_t xr_src_attach(ext2_filsys fs, struct xr_src *s)
{
	errcode_t err = 0;

	memset(s, 0, sizeof(*s));
	s->fs = fs;
	if (ext2fs_has_feature_journal_needs_recovery(fs->super))
		err = EXTREF_ERR_SOURCE_RECOVERY;
	/* its system zone: no file's data is copied from its metadata */
	if (!err)
		err = xr_zone_attach(fs, NULL, XR_ZONE_JOURNAL);
	if (err)
		xr_src_close(s);
	return err;
}

errcode_t xr_src_open(const char *image, struct xr_src *s)
{
	ext2_filsys fs;
	errcode_t err;
	int mf = 0;

	memset(s, 0, sizeof(*s));
	/* a tree the kernel is changing would be read half old, half new */
	if (!ext2fs_check_if_mounted(image, &mf) && (mf & EXT2_MF_MOUNTED) &&
	    !(mf & EXT2_MF_READONLY))
		return EXTREF_ERR_SOURCE_MOUNTED;
	err = ext2fs_open2(image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	return err ? err : xr_src_attach(fs, s);
}

void xr_src_close(struct xr_src *s)
{
	xr_zone_detach(s->fs);
	if (s->fs)
		ext2fs_close_free(&s->fs);
	ext2fs_free_mem(&s->shared);
	s->nshared = 0;
}

struct collect {
	struct xr_src	*s;
	struct xr_src_runs *r;
	blk64_t		nblk;		/* blocks within the size */
	errcode_t	err;
};

/* lblk..+len at pblk, clipped to the size, joined to the last run. */
static errcode_t add_run(struct collect *c, blk64_t lblk, blk64_t pblk,
			 blk64_t len)
{
	ext2_filsys fs = c->s->fs;
	struct xr_src_runs *r = c->r;
	struct xr_src_run *last = r->n ? &r->v[r->n - 1] : NULL;
	struct xr_src_run one = { lblk, pblk, len };

	if (lblk >= c->nblk || !len)
		return 0;
	if (one.len > c->nblk - lblk)
		one.len = c->nblk - lblk;
	if (pblk <= fs->super->s_first_data_block ||
	    pblk >= ext2fs_blocks_count(fs->super) ||
	    one.len > ext2fs_blocks_count(fs->super) - pblk ||
	    xr_zone_check(fs, pblk, one.len) ||
	    (last && lblk < last->lblk + last->len))
		return EXTREF_ERR_SOURCE_MAP;
	if (last && last->lblk + last->len == lblk &&
	    last->pblk + last->len == pblk) {
		last->len += one.len;
		return 0;
	}
	if (xr_grow(&r->v, &r->cap, r->n, sizeof(*r->v)))
		return EXT2_ET_NO_MEMORY;
	r->v[r->n++] = one;
	return 0;
}

static int on_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t cnt,
		    blk64_t ref, int off, void *priv)
{
	struct collect *c = priv;

	(void)fs; (void)ref; (void)off;
	if (cnt < 0)
		return 0;
	c->err = add_run(c, (blk64_t)cnt, *blocknr, 1);
	return c->err ? BLOCK_ABORT : 0;
}

errcode_t xr_src_runs(struct xr_src *s, ext2_ino_t ino,
		      struct ext2_inode_large *in, struct xr_src_runs *r)
{
	struct ext2_inode *i = (struct ext2_inode *)in;
	struct collect c = { s, r, 0, 0 };
	struct xr_map_vec maps = { 0 };
	__u64 size = EXT2_I_SIZE(i);
	errcode_t err = 0;
	size_t k;

	r->n = 0;
	c.nblk = size / s->fs->blocksize + !!(size % s->fs->blocksize);
	if (in->i_flags & EXT4_INLINE_DATA_FL)
		return 0;			/* no blocks */
	if (in->i_flags & EXT4_EXTENTS_FL) {
		err = xr_get_mappings(s->fs, ino, i, 0, 1ULL << 32, &maps);
		for (k = 0; !err && k < maps.n; k++)
			if (!maps.v[k].uninit)	/* unwritten: zeros */
				err = add_run(&c, maps.v[k].lblk,
					      maps.v[k].pblk, maps.v[k].len);
		xr_map_vec_free(&maps);
		/* a run in the source's metadata (txn/zone.c) */
		return err == EXTREF_ERR_ZONE_MAP ? EXTREF_ERR_SOURCE_MAP : err;
	}
	if (!ext2fs_inode_has_valid_blocks2(s->fs, i))
		return 0;
	err = extref_block_iterate(s->fs, ino, BLOCK_FLAG_DATA_ONLY |
				   BLOCK_FLAG_READ_ONLY, on_block, &c);
	return err ? err : c.err;
}

int xr_src_is_shared(const struct xr_src *s, blk64_t b)
{
	size_t lo = 0, hi = s->nshared;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct xr_src_range *x = &s->shared[mid];

		if (b < x->start)
			hi = mid;
		else if (b >= x->start + x->len)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

/* A run's two ends, for the sweep: +1 at its start, -1 at its end. */
struct edge {
	blk64_t		pos;
	int		delta;
};

struct edges {
	struct edge	*v;
	size_t		n, cap;
};

static int by_pos(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return x->delta - y->delta;
}

static errcode_t edges_add(struct edges *e, const struct xr_src_runs *r)
{
	size_t k;

	for (k = 0; k < r->n; k++) {
		if (xr_grow(&e->v, &e->cap, e->n + 1, sizeof(*e->v)))
			return EXT2_ET_NO_MEMORY;
		e->v[e->n].pos = r->v[k].pblk;
		e->v[e->n++].delta = 1;
		e->v[e->n].pos = r->v[k].pblk + r->v[k].len;
		e->v[e->n++].delta = -1;
	}
	return 0;
}

/* The sweep: ranges covered twice or more become s->shared; the blocks
 * covered at all, s->distinct. */
static errcode_t sweep(struct xr_src *s, struct edges *e)
{
	size_t k, cap = 0;
	long depth = 0;
	blk64_t prev = 0;

	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), by_pos);
	for (k = 0; k < e->n; k++) {
		blk64_t pos = e->v[k].pos;

		if (depth > 0 && pos > prev)
			s->distinct += pos - prev;
		if (depth > 1 && pos > prev) {
			struct xr_src_range *l = s->nshared ?
				&s->shared[s->nshared - 1] : NULL;

			if (l && l->start + l->len == prev) {
				l->len += pos - prev;
			} else {
				if (xr_grow(&s->shared, &cap, s->nshared,
					    sizeof(*s->shared)))
					return EXT2_ET_NO_MEMORY;
				s->shared[s->nshared].start = prev;
				s->shared[s->nshared++].len = pos - prev;
			}
		}
		depth += e->v[k].delta;
		prev = pos;
	}
	return 0;
}

/* One inode of the scan: counted; a regular file's runs to e. */
static errcode_t scan_one(struct xr_src *s, ext2_ino_t ino,
			  struct ext2_inode_large *in, struct xr_src_runs *r,
			  struct edges *e)
{
	struct ext2_inode *i = (struct ext2_inode *)in;
	errcode_t err;

	if (!in->i_links_count || (ino < EXT2_FIRST_INO(s->fs->super) &&
				   ino != EXT2_ROOT_INO))
		return 0;
	s->inodes++;
	if (ext2fs_file_acl_block(s->fs, i))
		s->meta++;
	if (LINUX_S_ISDIR(in->i_mode))
		s->dir_bytes += EXT2_I_SIZE(i);
	/* inline data becomes a block of its own in the new image */
	if ((in->i_flags & EXT4_INLINE_DATA_FL) && LINUX_S_ISDIR(in->i_mode))
		s->inline_dirs++;
	if ((in->i_flags & EXT4_INLINE_DATA_FL) && LINUX_S_ISREG(in->i_mode) &&
	    EXT2_I_SIZE(i))
		s->inline_files++;
	if (LINUX_S_ISLNK(in->i_mode))
		s->meta++;
	if (!LINUX_S_ISREG(in->i_mode))
		return 0;
	s->files++;
	err = xr_src_runs(s, ino, in, r);
	if (!err) {
		s->runs += r->n;
		err = edges_add(e, r);
	}
	return err;
}

errcode_t xr_src_scan(struct xr_src *s)
{
	int isz = EXT2_INODE_SIZE(s->fs->super);
	struct ext2_inode_large *in = NULL;
	struct xr_src_runs r = { 0 };
	struct edges e = { 0 };
	ext2_inode_scan scan = NULL;
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_get_memzero(isz, &in);
	if (!err)
		err = ext2fs_open_inode_scan(s->fs, 0, &scan);
	while (!err) {
		err = ext2fs_get_next_inode_full(scan, &ino,
						 (struct ext2_inode *)in, isz);
		if (err || !ino)
			break;
		err = scan_one(s, ino, in, &r, &e);
	}
	if (!err)
		err = sweep(s, &e);
	if (scan)
		ext2fs_close_inode_scan(scan);
	ext2fs_free_mem(&e.v);
	ext2fs_free_mem(&r.v);
	ext2fs_free_mem(&in);
	return err;
}

void xr_src_measure(const struct xr_src *s, unsigned int bs,
		    struct extref_source_size *out)
{
	unsigned int sbs = s->fs->blocksize;

	out->entries = s->inodes;
	/* each file's last block may grow to a whole new block */
	out->data_blocks = (s->distinct * sbs + bs - 1) / bs +
			   (sbs < bs ? s->files : 0) + s->inline_files;
	out->distinct_blocks = out->data_blocks;
	/* directories (and a block each for growth), symlinks and attribute
	 * blocks, extent tree blocks */
	out->dir_blocks = (s->dir_bytes + bs - 1) / bs + s->inline_dirs;
	out->meta_blocks = (s->dir_bytes + bs - 1) / bs + s->inodes / 16 +
			   s->meta + s->inline_dirs + s->runs / (bs / 12) + 1;
}

errcode_t extref_image_measure(const char *image, unsigned int bs,
			       struct extref_source_size *out)
{
	struct xr_src s;
	errcode_t err;

	memset(out, 0, sizeof(*out));
	if (!bs)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_src_open(image, &s);
	if (err)
		return err;
	err = xr_src_scan(&s);
	if (!err)
		xr_src_measure(&s, bs, out);
	xr_src_close(&s);
	return err;
}
