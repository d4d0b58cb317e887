/*
 * dedupe_fs.c --- share the identical data already in an image.
 *
 * Every written block of every regular file is hashed (two crc32c with
 * different seeds: 64 bits); blocks with equal hashes are compared byte
 * for byte, and each duplicate is cloned from the first copy through
 * extref_dedupe_range, which compares again before it shares.  Runs of
 * consecutive duplicates become one call, so shared runs stay long
 * extents.  File mode does the same with whole files; block mode does a
 * file pass first.
 */
#include <stdlib.h>
#include <string.h>
#include "tree/extref_int.h"
#include "ops/extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"
#include "populate_int.h"	/* xr_block_hash */

struct cand {
	__u64		hash;
	ext2_ino_t	ino;
	__u32		lblk;		/* block mode; 0 in file mode */
	blk64_t		pblk;
};

struct act {				/* dst block = copy of src block */
	ext2_ino_t	dino, sino;
	__u32		dlblk, slblk;
};

struct dd {
	extref_fs_t	xfs;
	ext2_filsys	fs;
	enum extref_dedupe_mode mode;
	struct cand	*c;
	size_t		n, cap;
	char		*a, *b;		/* one block each */
	struct extref_dedupe_stats *st;
	extref_progress_func progress;
	void		*priv;
};

/* A file's hash: its blocks' hashes (blockhash.c) chained in order. */
static __u64 chain(__u64 fh, __u64 h, __u32 lblk)
{
	return (fh ^ h ^ lblk) * 0x9E3779B97F4A7C15ULL;
}

static errcode_t add_cand(struct dd *d, __u64 h, ext2_ino_t ino, __u32 lblk,
			  blk64_t pblk)
{
	errcode_t err = xr_grow(&d->c, &d->cap, d->n, sizeof(*d->c));

	if (err)
		return err;
	d->c[d->n].hash = h;
	d->c[d->n].ino = ino;
	d->c[d->n].lblk = lblk;
	d->c[d->n].pblk = pblk;
	d->n++;
	return 0;
}

/* The whole blocks of a file inside its size (the tail stays its own). */
static errcode_t scan_file(struct dd *d, ext2_ino_t ino,
			   struct ext2_inode *inode)
{
	struct xr_map_vec maps = { 0 };
	blk64_t whole = EXT2_I_SIZE(inode) / d->fs->blocksize, k;
	blk64_t first = 0;	/* file mode: where the data starts */
	__u64 fh = 0, h;
	size_t i;
	errcode_t err;

	err = xr_get_mappings(d->fs, ino, inode, 0, 1ULL << 32, &maps);
	for (i = 0; !err && i < maps.n; i++) {
		d->st->logical_bytes += maps.v[i].len * d->fs->blocksize;
		for (k = 0; !err && k < maps.v[i].len; k++) {
			blk64_t l = maps.v[i].lblk + k;

			/* Block mode shares whole blocks inside the size;
			 * file mode hashes everything the file maps. */
			if (maps.v[i].uninit ||
			    (d->mode == EXTREF_DEDUPE_BLOCK && l >= whole))
				continue;
			err = io_channel_read_blk64(d->fs->io,
						    maps.v[i].pblk + k, 1,
						    d->a);
			if (err)
				break;
			if (!first)
				first = maps.v[i].pblk + k;
			h = xr_block_hash(d->a, d->fs->blocksize);
			if (d->mode == EXTREF_DEDUPE_BLOCK)
				err = add_cand(d, h, ino, l,
					       maps.v[i].pblk + k);
			else
				fh = chain(fh, h, l);
		}
	}
	if (!err && d->mode == EXTREF_DEDUPE_FILE && EXT2_I_SIZE(inode))
		err = add_cand(d, fh ^ EXT2_I_SIZE(inode), ino, 0, first);
	xr_map_vec_free(&maps);
	return err;
}

static errcode_t scan(struct dd *d)
{
	ext2_inode_scan scan = NULL;
	struct ext2_inode inode;
	ext2_ino_t ino;
	errcode_t err = ext2fs_open_inode_scan(d->fs, 0, &scan);

	if (err)
		return err;	/* nothing opened, nothing to close */
	while (!err) {
		err = ext2fs_get_next_inode(scan, &ino, &inode);
		if (err || !ino)
			break;
		if (ino < EXT2_FIRST_INO(d->fs->super) ||
		    !inode.i_links_count || inode.i_dtime ||
		    !LINUX_S_ISREG(inode.i_mode) ||
		    !(inode.i_flags & EXT4_EXTENTS_FL) ||
		    (inode.i_flags & (EXT4_ENCRYPT_FL | EXT4_INLINE_DATA_FL)))
			continue;
		err = scan_file(d, ino, &inode);
		if (d->progress && (ino & 255) == 0)
			d->progress(d->mode == EXTREF_DEDUPE_BLOCK ?
				    "hashing blocks" : "hashing files", ino,
				    d->fs->super->s_inodes_count, d->priv);
	}
	ext2fs_close_inode_scan(scan);
	return err;
}

static int cmp_cand(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->pblk != b->pblk)
		return a->pblk < b->pblk ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return (a->lblk > b->lblk) - (a->lblk < b->lblk);
}

static int cmp_act(const void *x, const void *y)
{
	const struct act *a = x, *b = y;

	if (a->dino != b->dino)
		return a->dino < b->dino ? -1 : 1;
	return (a->dlblk > b->dlblk) - (a->dlblk < b->dlblk);
}

static errcode_t same_block(struct dd *d, blk64_t x, blk64_t y, int *same)
{
	errcode_t err = io_channel_read_blk64(d->fs->io, x, 1, d->a);

	if (!err)
		err = io_channel_read_blk64(d->fs->io, y, 1, d->b);
	*same = !err && !memcmp(d->a, d->b, d->fs->blocksize);
	return err;
}

/* Run dedupe_range for one action run; a "differs" only skips it. */
static errcode_t apply(struct dd *d, const struct act *a, __u64 len)
{
	__u64 bs = d->fs->blocksize, done, off, step;
	int differs;
	errcode_t err = 0;

	if (d->mode == EXTREF_DEDUPE_FILE) {
		struct ext2_inode in;

		err = ext2fs_read_inode(d->fs, a->sino, &in);
		len = EXT2_I_SIZE(&in);
		if (err)
			return err;
	}
	/* The kernel's rules cut a request at 1 GiB: one call per GiB. */
	for (off = 0, differs = 0; !err && !differs && off < len;
	     off += step) {
		step = len - off < (1ULL << 30) ? len - off : 1ULL << 30;
		err = extref_dedupe_range(d->xfs, a->sino, a->slblk * bs + off,
					  a->dino, a->dlblk * bs + off, step,
					  &done, &differs);
		if (!err)
			err = xr_tx_split_point(d->xfs);
	}
	/* A range the rules refuse (overlapping itself in one file, sizes
	 * that differ) is left as it is. */
	if (err == EXTREF_ERR_OVERLAP || err == EXTREF_ERR_ALIGN ||
	    err == EXTREF_ERR_PAST_EOF)
		return 0;
	if (!err && !differs)
		d->st->ranges++;
	return err;
}

/* Pair each duplicate with the first copy of its hash group. */
static errcode_t plan(struct dd *d, struct act **ret, size_t *nret)
{
	struct act *v = NULL;
	size_t i, j, n = 0, cap = 0;
	errcode_t err = 0;

	if (d->n)	/* no candidates: d->c may be NULL */
		qsort(d->c, d->n, sizeof(*d->c), cmp_cand);
	for (i = 0; !err && i < d->n; i = j) {
		for (j = i + 1; j < d->n && d->c[j].hash == d->c[i].hash; j++) {
			int same = 1;

			if (d->c[j].pblk == d->c[i].pblk)
				continue;	/* already shared */
			if (d->mode == EXTREF_DEDUPE_BLOCK)
				err = same_block(d, d->c[i].pblk, d->c[j].pblk,
						 &same);
			if (err || !same)
				continue;
			err = xr_grow(&v, &cap, n, sizeof(*v));
			if (err)
				break;
			v[n].dino = d->c[j].ino;
			v[n].dlblk = d->c[j].lblk;
			v[n].sino = d->c[i].ino;
			v[n].slblk = d->c[i].lblk;
			n++;
		}
	}
	if (n)		/* nothing to share: v is NULL */
		qsort(v, n, sizeof(*v), cmp_act);
	*ret = v;
	*nret = n;
	return err;
}


static errcode_t dedupe_pass(extref_fs_t xfs, enum extref_dedupe_mode mode,
			     extref_progress_func progress, void *priv,
			     struct extref_dedupe_stats *st);

static errcode_t dedupe_fs_op(extref_fs_t xfs, enum extref_dedupe_mode mode,
			   struct extref_dedupe_stats *st)
{
	return extref_dedupe_fs2(xfs, mode, NULL, NULL, st);
}

/* One transaction (txn.c). */
errcode_t extref_dedupe_fs(extref_fs_t xfs, enum extref_dedupe_mode mode,
			   struct extref_dedupe_stats *st)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, dedupe_fs_op(xfs, mode, st));
}

/*
 * Block mode runs a file pass first: identical files then share their
 * partial last blocks too, which block-by-block sharing cannot.
 */
static errcode_t dedupe_fs2_op(extref_fs_t xfs, enum extref_dedupe_mode mode,
			    extref_progress_func progress, void *priv,
			    struct extref_dedupe_stats *st)
{
	struct extref_dedupe_stats first;
	errcode_t err;

	if (mode != EXTREF_DEDUPE_BLOCK)
		return xr_quota_end(xfs, dedupe_pass(xfs, mode, progress,
						     priv, st));
	err = dedupe_pass(xfs, EXTREF_DEDUPE_FILE, progress, priv, &first);
	if (!err)
		err = dedupe_pass(xfs, EXTREF_DEDUPE_BLOCK, progress, priv, st);
	st->logical_bytes = first.logical_bytes;
	st->stored_before = first.stored_before;
	st->ranges += first.ranges;
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_dedupe_fs2(extref_fs_t xfs, enum extref_dedupe_mode mode,
			    extref_progress_func progress, void *priv,
			    struct extref_dedupe_stats *st)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, dedupe_fs2_op(xfs, mode, progress, priv, st));
}

static errcode_t dedupe_pass(extref_fs_t xfs, enum extref_dedupe_mode mode,
			     extref_progress_func progress, void *priv,
			     struct extref_dedupe_stats *st)
{
	struct dd d = { .xfs = xfs, .fs = extref_fs_ext2(xfs), .mode = mode,
			.st = st, .progress = progress, .priv = priv };
	struct act *v = NULL;
	size_t n = 0, i, j;
	errcode_t err;

	memset(st, 0, sizeof(*st));
	err = xr_op_begin(xfs);
	if (!err)
		err = ext2fs_get_mem(d.fs->blocksize, &d.a);
	if (!err)
		err = ext2fs_get_mem(d.fs->blocksize, &d.b);
	if (!err)
		err = scan(&d);
	st->stored_before = (ext2fs_blocks_count(d.fs->super) -
			     ext2fs_free_blocks_count(d.fs->super)) *
			    d.fs->blocksize;
	if (!err && mode != EXTREF_DEDUPE_NONE)
		err = plan(&d, &v, &n);
	for (i = 0; !err && i < n; i = j) {
		/* A run: consecutive blocks of one file from consecutive
		 * blocks of one source. */
		for (j = i + 1; j < n && mode == EXTREF_DEDUPE_BLOCK &&
		     v[j].dino == v[i].dino && v[j].sino == v[i].sino &&
		     v[j].dlblk == v[i].dlblk + (j - i) &&
		     v[j].slblk == v[i].slblk + (j - i); j++)
			;
		err = apply(&d, &v[i], (__u64)(j - i) * d.fs->blocksize);
		if (progress)
			progress(mode == EXTREF_DEDUPE_BLOCK ?
				 "sharing blocks" : "sharing files", j, n, priv);
	}
	st->stored_after = (ext2fs_blocks_count(d.fs->super) -
			    ext2fs_free_blocks_count(d.fs->super)) *
			   d.fs->blocksize;
	ext2fs_free_mem(&v);
	ext2fs_free_mem(&d.c);
	ext2fs_free_mem(&d.a);
	ext2fs_free_mem(&d.b);
	return err;
}
