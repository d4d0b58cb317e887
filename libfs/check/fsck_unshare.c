/*
 * fsck_unshare.c --- -E unshare: blocks mapped more often than their
 * record says (none: 0x0304, too low: 0x0301, a cross-link) are not
 * recorded as shared; the mappings of the newest owners beyond the
 * record get their own copy of the data (what e2fsck's pass 1D does for
 * multiply-claimed blocks).  Owners are ordered by creation time, then
 * inode number.  A data block that is also metadata (0x0102) gives every
 * file that maps it a copy (XR_UNS_KEEP_SPECIAL: directories and reserved
 * inodes keep theirs).  The tree is rebuilt afterwards from a fresh scan.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "extref_fsck_int.h"
#include "ops/extref_ops_int.h"
#include "txn/xr_txio.h"
#include "txn/xr_zone.h"

/* Ranges noted in pieces of at most this many blocks (their counters). */
#define UNSHARE_PIECE	(1U << 20)

errcode_t xr_fsck_note_unshare(struct xr_fsck *c, blk64_t s, blk64_t e,
			       __u32 keep)
{
	errcode_t err = 0;

	for (; !err && s < e; s += c->uns[c->nuns - 1].len) {
		err = xr_grow(&c->uns, &c->capuns, c->nuns, sizeof(*c->uns));
		if (err)
			break;
		c->uns[c->nuns].start = s;
		c->uns[c->nuns].len = e - s < UNSHARE_PIECE ? e - s
							    : UNSHARE_PIECE;
		c->uns[c->nuns].count = keep;
		c->nuns++;
	}
	return err;
}

/* Give [lblk, lblk+len) of ino, mapped at pblk, new blocks, one by one. */
static errcode_t copy_range(ext2_filsys fs, ext2_ino_t ino,
			    const struct xr_map *m, char *buf)
{
	struct ext2_inode inode;
	struct xr_prange_vec removed = { 0 };
	blk64_t i, nb = 0;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);

	for (i = 0; !err && i < m->len; i++) {
		struct xr_map one = { m->lblk + i, 0, 1, m->uninit };

		err = ext2fs_new_block2(fs, nb ? nb + 1 : m->pblk + i, NULL,
					&nb);
		if (err)
			break;
		ext2fs_block_alloc_stats2(fs, nb, +1);
		one.pblk = nb;
		err = io_channel_read_blk64(fs->io, m->pblk + i, 1, buf);
		/* file data in a new block: not journaled (ordered) */
		if (!err)
			err = xr_tx_write_data(fs, nb, 1, buf);
		if (!err)
			err = xr_unmap(fs, ino, &inode, one.lblk, one.lblk + 1,
				       &removed);
		if (!err)
			err = xr_map_insert(fs, ino, &inode, &one);
		removed.n = 0;
	}
	xr_prange_vec_free(&removed);
	return err;
}

/* One range being unshared: how many mappings each block keeps. */
struct piece {
	blk64_t		s, e;
	__u32		keep;
	__u32		*kept;		/* per block of [s, e) */
	char		*buf;
};

/*
 * Every file range of ino that maps into the piece: a block keeps the
 * mapping while fewer than keep were kept (by older owners), else the
 * mapping gets a copy.
 */
static errcode_t unshare_inode(struct xr_fsck *c, ext2_ino_t ino,
			       struct piece *p)
{
	struct ext2_inode inode;
	struct xr_map_vec maps = { 0 };
	size_t i;
	blk64_t b;
	errcode_t err;

	err = ext2fs_read_inode(c->fs, ino, &inode);
	if (!err)
		err = xr_get_mappings(c->fs, ino, &inode, 0, 1ULL << 32, &maps);
	for (i = 0; !err && i < maps.n; i++) {
		const struct xr_map *m = &maps.v[i];
		blk64_t a = m->pblk > p->s ? m->pblk : p->s;
		blk64_t z = m->pblk + m->len < p->e ? m->pblk + m->len : p->e;

		for (b = a; !err && b < z; b++) {
			struct xr_map one = { m->lblk + (b - m->pblk), b, 1,
					      m->uninit };

			if (p->keep == XR_UNS_KEEP_SPECIAL) {
				if (!xr_fsck_special_ino(c, ino))
					err = copy_range(c->fs, ino, &one,
							 p->buf);
			} else if (p->kept[b - p->s] < p->keep)
				p->kept[b - p->s]++;
			else
				err = copy_range(c->fs, ino, &one, p->buf);
		}
	}
	xr_map_vec_free(&maps);
	return err;
}

/* When ino was made: its creation time where the inode has one. */
static void birth(ext2_filsys fs, ext2_ino_t ino, __u64 *key)
{
	struct ext2_inode_large in;
	int isz = EXT2_INODE_SIZE(fs->super);

	memset(&in, 0, sizeof(in));
	*key = 0;
	if (ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)&in,
				   isz < (int)sizeof(in) ? isz
							 : (int)sizeof(in)))
		return;
	if (isz > EXT2_GOOD_OLD_INODE_SIZE &&
	    in.i_extra_isize >= offsetof(struct ext2_inode_large,
					 i_crtime_extra) + 4 -
				EXT2_GOOD_OLD_INODE_SIZE)
		*key = (__u64)in.i_crtime << 32 | in.i_crtime_extra;
	else
		*key = (__u64)in.i_ctime << 32;
}

struct aged {
	__u64		born;
	ext2_ino_t	ino;
};

static int older(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;

	if (x->born != y->born)
		return x->born < y->born ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The inodes mapping the piece, oldest first (then by number). */
static errcode_t owners_by_age(struct xr_fsck *c, const struct piece *p,
			       struct aged **v, size_t *n)
{
	__u32 *inos;
	size_t i;
	errcode_t err = xr_fsck_owner_inos(c, p->s, p->e, &inos, n);

	if (!err)
		err = ext2fs_get_array(*n ? *n : 1, sizeof(**v), v);
	for (i = 0; !err && i < *n; i++) {
		(*v)[i].ino = inos[i];
		birth(c->fs, inos[i], &(*v)[i].born);
	}
	if (!err)
		qsort(*v, *n, sizeof(**v), older);
	ext2fs_free_mem(&inos);
	return err;
}

static errcode_t unshare_piece(struct xr_fsck *c, struct piece *p)
{
	struct aged *v = NULL;
	size_t i, n = 0;
	errcode_t err;

	err = ext2fs_get_arrayzero(p->e - p->s, sizeof(*p->kept), &p->kept);
	if (!err)
		err = owners_by_age(c, p, &v, &n);
	for (i = 0; !err && i < n; i++)
		err = unshare_inode(c, v[i].ino, p);
	ext2fs_free_mem(&v);
	ext2fs_free_mem(&p->kept);
	return err;
}

/*
 * Every noted range: each block keeps the mappings of its oldest owners
 * (as many as the range says), the newer ones get copies.
 */
errcode_t xr_fsck_unshare(struct xr_fsck *c)
{
	struct piece p = { 0 };
	size_t r;
	errcode_t err;

	err = ext2fs_get_mem(c->fs->blocksize, &p.buf);
	xr_zone_repair(c->fs, 1);	/* it reads mappings of metadata */
	for (r = 0; !err && r < c->nuns; r++) {
		p.s = c->uns[r].start;
		p.e = p.s + c->uns[r].len;
		p.keep = c->uns[r].count;
		err = unshare_piece(c, &p);
		/* the range copied for all: a commit may go here */
		if (!err)
			err = xr_fsck_tx_split(c);
	}
	xr_zone_repair(c->fs, 0);
	ext2fs_free_mem(&p.buf);
	c->res->changed = 1;
	return err;
}
