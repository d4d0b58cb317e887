/*
 * need_file.c --- one regular file of the source (a host file, or an
 * archive's entry read once as it streams) counted as update_file.c
 * would put it: kept when the image's file at its name holds the same
 * bytes, a reflink when another file does (no data, one clone), else
 * block by block: a block of zeros a hole, a whole block equal to one
 * the image (or a file counted before) holds shared, so is a last
 * partial block equal to a last block of as many bytes, any other
 * written.  Equality is by hash only.  The extents are the runs
 * (written, or shared from consecutive blocks of one file); past the
 * four an inode holds, they need extent-tree leaves.  The file then
 * joins the index as the update's written files do.
 */
#define _GNU_SOURCE
#include <string.h>
#include "need_int.h"

enum { NONE, SHARED, WRITTEN };

struct runs {
	int		kind;
	ext2_ino_t	ino;		/* SHARED: the last block's source */
	__u32		lblk;
	__u64		extents;
};

/* Block hashes of the file into up->bh, and the file's hash. */
static errcode_t hash_blocks(struct xr_upd *up, const struct xr_need_src *src,
			     __u64 size, size_t nb, __u64 *fh)
{
	unsigned int bs = up->fs->blocksize;
	size_t per = XR_POP_STAGE_BYTES / bs, i = 0, k, n, got, r;
	errcode_t err;

	while (i < nb) {
		n = nb - i < per ? nb - i : per;
		for (got = 0; got < n * bs; got += r) {
			err = src->read(src->priv, up->a + got, n * bs - got,
					(__u64)i * bs + got, &r);
			if (err)
				return err;
			if (!r)
				break;
		}
		memset(up->a + got, 0, n * bs - got);
		for (k = 0; k < n; k++)
			up->bh[i + k] = xr_upd_hash(up->a + k * bs, bs);
		i += n;
	}
	*fh = xr_upd_file_hash(up->bh, nb, size);
	return 0;
}

/* 1: the image's file old holds it (kept); 2: another file (a reflink);
 * 0: neither. */
static int same_file(struct xr_upd *up, __u64 fh, __u64 size,
		     ext2_ino_t old)
{
	const struct xr_upd_file *e;
	size_t pos = 0;
	int other = 0;

	while ((e = xr_upd_file_next(&up->ix, fh, &pos)))
		if (e->size == size) {
			if (old && e->ino == old)
				return 1;
			other = 1;
		}
	return other && size ? 2 : 0;
}

/* An indexed block with hash h, the one after r's last tried first. */
static const struct xr_upd_blk *find(const struct xr_upd_index *ix,
				     __u64 h, const struct runs *r)
{
	const struct xr_upd_blk *e;
	size_t pos = 0;

	if (r->kind == SHARED)
		while ((e = xr_upd_blk_next(ix, h, &pos)))
			if (e->ino == r->ino && e->lblk == r->lblk + 1)
				return e;
	pos = 0;
	return xr_upd_blk_next(ix, h, &pos);
}

/* Block i of len bytes (fewer than the block size: the file's tail,
 * shared only with a tail of as many bytes, under its tail key). */
static errcode_t one_block(struct xr_need *nd, struct runs *r, size_t i,
			   unsigned int len, ext2_ino_t self)
{
	struct xr_upd *up = &nd->up;
	__u64 h = up->bh[i];
	const struct xr_upd_blk *e;

	if (h == up->ix.zero_hash) {
		r->kind = NONE;
		return 0;
	}
	if (len < up->fs->blocksize)
		h = xr_upd_tail_key(h, len);
	e = find(&up->ix, h, r);
	if (e) {
		if (r->kind != SHARED || e->ino != r->ino ||
		    e->lblk != r->lblk + 1) {
			r->extents++;
			nd->runs++;
		}
		r->kind = SHARED;
		r->ino = e->ino;
		r->lblk = e->lblk;
		return 0;
	}
	nd->data++;
	if (r->kind != WRITTEN)
		r->extents++;
	r->kind = WRITTEN;
	return xr_upd_add_blk(&up->ix, h, self, (__u32)i);
}

/* Extent-tree nodes for n extents (an inode holds 4). */
static __u64 tree_nodes(unsigned int bs, __u64 n)
{
	__u64 per = (bs - 12) / 12, leaves;

	if (n <= 4)
		return 0;
	leaves = (n + per - 1) / per;
	return leaves + (leaves > 4 ? (leaves + per - 1) / per : 0);
}

errcode_t xr_need_file(struct xr_need *nd, const struct xr_need_src *src,
		       __u64 size, ext2_ino_t old, ext2_ino_t *ino)
{
	struct xr_upd *up = &nd->up;
	unsigned int bs = up->fs->blocksize;
	size_t nb = (size_t)((size + bs - 1) / bs), i;
	struct runs r = { NONE, 0, 0, 0 };
	ext2_ino_t self;
	__u64 fh;
	int same;
	errcode_t err = xr_upd_bh_room(up, nb);

	*ino = old;
	if (!err)
		err = hash_blocks(up, src, size, nb, &fh);
	if (err)
		return err;
	same = same_file(up, fh, size, old);
	if (same == 1)
		return 0;
	nd->inodes++;
	*ino = self = xr_need_fake_ino(nd);
	if (same == 2) {
		nd->runs++;
		return 0;
	}
	for (i = 0; !err && i < nb; i++)
		err = one_block(nd, &r, i, (i + 1) * (__u64)bs <= size ? bs :
				(unsigned int)(size - i * (__u64)bs), self);
	nd->extent_blocks += tree_nodes(bs, r.extents);
	return err ? err : xr_upd_add_file(&up->ix, fh, size, self);
}
