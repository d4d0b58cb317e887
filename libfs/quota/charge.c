/*
 * charge.c --- quota usage kept with every inode write.
 *
 * libext2fs calls fs->write_inode before it writes any inode (every
 * size of write, its own writes included).  The hook records, the first
 * time an inode is written, what it was charged then; the flush at the
 * end of an operation compares each recorded inode with what it is now
 * and writes the differences per id to the quota files.  An inode is
 * charged as e2fsck charges it (pass 1): i_blocks in bytes and one inode
 * to its uid, gid and project id, when it is in use (links), is the root
 * or a non-reserved inode, and is neither the project quota inode, the
 * orphan file nor an EA inode.  Nothing is allocated in the hook: the
 * quota files grow only in the flush, between operations.
 */
#include <stdint.h>
#include <string.h>
#include "quota/xr_quota.h"
#include "base/extref_vec.h"
#include "base/xr_clock.h"

struct charge {
	int	charged;
	__u32	id[XR_QTYPES];
	__u64	bytes;
};

struct touched {
	ext2_ino_t	ino;
	struct charge	was;
};

struct xr_quota {
	ext2_filsys		fs;
	ext2fs_inode_bitmap	seen;
	struct touched		*v;
	size_t			n, cap;
	int			verified;	/* xr_quota_verify passed */
};

#ifndef EXT4_EA_INODE_FL
#define EXT4_EA_INODE_FL	0x00200000
#endif

static struct xr_quota *quota_of(ext2_filsys fs)
{
	struct xr_quota *q = fs->priv_data;

	return q && q->fs == fs ? q : NULL;
}

void xr_quota_ids(ext2_filsys fs, const struct ext2_inode_large *inode,
		  __u32 id[XR_QTYPES])
{
	id[EXTREF_QUOTA_USER] = inode_uid(*inode);
	id[EXTREF_QUOTA_GROUP] = inode_gid(*inode);
	id[EXTREF_QUOTA_PROJECT] = 0;
	if (EXT2_INODE_SIZE(fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	    EXT2_GOOD_OLD_INODE_SIZE + (size_t)inode->i_extra_isize >=
	    offsetof(struct ext2_inode_large, i_projid) + 4)
		id[EXTREF_QUOTA_PROJECT] = inode->i_projid;
}

static int charged_ino(ext2_filsys fs, ext2_ino_t ino)
{
	if (ino != EXT2_ROOT_INO && ino < EXT2_FIRST_INO(fs->super))
		return 0;
	return ino != fs->super->s_prj_quota_inum &&
	       ino != fs->super->s_orphan_file_inum;
}

int xr_quota_charged(ext2_filsys fs, ext2_ino_t ino,
		     const struct ext2_inode_large *inode)
{
	return charged_ino(fs, ino) && inode->i_links_count &&
	       !(inode->i_flags & EXT4_EA_INODE_FL);
}

static void charge_of(ext2_filsys fs, ext2_ino_t ino,
		      const struct ext2_inode_large *inode, struct charge *c)
{
	memset(c, 0, sizeof(*c));
	if (!xr_quota_charged(fs, ino, inode))
		return;
	/*
	 * An inode the bitmap holds free is charged nothing: a new inode's
	 * first write comes before its bitmap bit, whatever an unused
	 * inode table held.
	 */
	if (fs->inode_map && !ext2fs_test_inode_bitmap2(fs->inode_map, ino))
		return;
	c->charged = 1;
	xr_quota_ids(fs, inode, c->id);
	c->bytes = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)inode) *
		   512ULL;
}

/* The whole inode (i_projid is past the first 128 bytes); free *in. */
static errcode_t read_large(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode_large **in)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	errcode_t err;

	*in = NULL;
	err = ext2fs_get_memzero(isz < (int)sizeof(**in) ?
				 (int)sizeof(**in) : isz, in);
	if (!err)
		err = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)*in,
					     isz);
	return err;
}

static errcode_t read_charge(ext2_filsys fs, ext2_ino_t ino,
			     struct charge *c)
{
	struct ext2_inode_large *in;
	errcode_t err = read_large(fs, ino, &in);

	if (!err)
		charge_of(fs, ino, in, c);
	ext2fs_free_mem(&in);
	return err;
}

errcode_t xr_quota_ino_ids(ext2_filsys fs, ext2_ino_t ino,
			   __u32 id[XR_QTYPES])
{
	struct ext2_inode_large *in;
	errcode_t err = read_large(fs, ino, &in);

	if (!err)
		xr_quota_ids(fs, in, id);
	ext2fs_free_mem(&in);
	return err;
}

static errcode_t write_hook(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode *inode)
{
	struct xr_quota *q = quota_of(fs);
	struct touched t = { .ino = ino };
	errcode_t err;

	(void) inode;
	if (!q || ino == 0 || ino > fs->super->s_inodes_count ||
	    !charged_ino(fs, ino) ||
	    ext2fs_fast_test_inode_bitmap2(q->seen, ino))
		return EXT2_ET_CALLBACK_NOTHANDLED;
	err = xr_grow(&q->v, &q->cap, q->n, sizeof(*q->v));
	if (err)
		return err;
	err = read_charge(fs, ino, &t.was);
	if (err)
		return err;
	q->v[q->n++] = t;
	ext2fs_fast_mark_inode_bitmap2(q->seen, ino);
	return EXT2_ET_CALLBACK_NOTHANDLED;
}

errcode_t xr_quota_attach(ext2_filsys fs)
{
	struct xr_quota *q;
	errcode_t err;

	if (!ext2fs_has_feature_quota(fs->super) || fs->priv_data)
		return 0;
	err = ext2fs_get_memzero(sizeof(*q), &q);
	if (err)
		return err;
	q->fs = fs;
	err = ext2fs_allocate_inode_bitmap(fs, "quota: inodes written",
					   &q->seen);
	if (err) {
		ext2fs_free_mem(&q);
		return err;
	}
	fs->priv_data = q;
	fs->write_inode = write_hook;
	return 0;
}

void xr_quota_detach(ext2_filsys fs)
{
	struct xr_quota *q = quota_of(fs);

	if (!q)
		return;
	fs->write_inode = NULL;
	fs->priv_data = NULL;
	ext2fs_free_inode_bitmap(q->seen);
	ext2fs_free_mem(&q->v);
	ext2fs_free_mem(&q);
}

/* A block of a quota file that the tree counts is shared: refused. */
struct unshared {
	extref_tree_t	tree;
	errcode_t	err;
};

static int unshared_blk(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t lblk,
			blk64_t ref_blk, int ref_off, void *priv)
{
	struct unshared *u = priv;
	__u32 count = 0;

	(void) fs;
	(void) lblk;
	(void) ref_blk;
	(void) ref_off;
	u->err = extref_tree_get_count(u->tree, *blk, &count);
	if (!u->err && count)
		u->err = EXTREF_ERR_QUOTA_FILE;
	return u->err ? BLOCK_ABORT : 0;
}

static errcode_t check_unshared(extref_fs_t xfs, ext2_ino_t ino)
{
	struct unshared c = { extref_fs_tree(xfs), 0 };
	errcode_t err;

	if (!c.tree)
		return 0;
	err = extref_block_iterate(extref_fs_ext2(xfs), ino,
			       BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_DATA_ONLY,
			       unshared_blk, &c);
	return err ? err : c.err;
}

errcode_t xr_quota_verify(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_quota *q = quota_of(fs);
	struct xr_qfile *qf;
	errcode_t err = 0;

	if (!q || q->verified)
		return 0;
	for (int t = 0; !err && t < XR_QTYPES; t++) {
		if (!xr_quota_inum(fs, t))
			continue;
		err = xr_quota_inum_check(fs, t, xr_quota_inum(fs, t));
		if (!err)
			err = check_unshared(xfs, xr_quota_inum(fs, t));
		if (!err)
			err = xr_qfile_open(fs, t, &qf);
		if (!err) {
			err = xr_qfile_verify(qf);
			xr_qfile_close(qf);
		}
	}
	if (!err)
		q->verified = 1;
	return err;
}

/* a + b, kept in [-2^63, 2^63-1]. */
static __s64 add_s64(__s64 a, __s64 b)
{
	__s64 r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* One id's change in an operation. */
struct delta {
	int	type;
	__u32	id;
	__s64	bytes, inodes;
};

struct deltas {
	struct delta	*v;
	size_t		n, cap;
};

static errcode_t add_delta(struct deltas *d, int type, __u32 id,
			   __s64 bytes, __s64 inodes)
{
	errcode_t err;

	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].type == type && d->v[i].id == id) {
			d->v[i].bytes = add_s64(d->v[i].bytes, bytes);
			d->v[i].inodes = add_s64(d->v[i].inodes, inodes);
			return 0;
		}
	err = xr_grow(&d->v, &d->cap, d->n, sizeof(*d->v));
	if (err)
		return err;
	d->v[d->n++] = (struct delta){ type, id, bytes, inodes };
	return 0;
}

static errcode_t add_charge(struct deltas *d, ext2_filsys fs,
			    const struct charge *c, int sign)
{
	errcode_t err = 0;

	if (!c->charged)
		return 0;
	for (int t = 0; !err && t < XR_QTYPES; t++)
		if (xr_quota_inum(fs, t))
			err = add_delta(d, t, c->id[t],
					sign * (__s64)c->bytes, sign);
	return err;
}

/* v + d, kept in [0, XR_USAGE_MAX]. */
static __u64 add_clamped(__u64 v, __s64 d)
{
	__u64 m = d < 0 ? -(__u64)d : (__u64)d;

	if (d == 0)
		return v;
	if (d > 0)
		return xr_usage_add(v, m);
	return m > v ? 0 : v - m;
}

/*
 * The grace times as the kernel keeps them: set when the usage goes
 * over a soft limit, cleared when it is back under.
 */
static void set_grace(struct xr_dquot *dq, const struct xr_qfile *qf,
		      __u64 now)
{
	if (dq->bsoft && dq->curspace > dq->bsoft) {
		if (!dq->btime)
			dq->btime = now + xr_qfile_grace(qf, 0);
	} else {
		dq->btime = 0;
	}
	if (dq->isoft && dq->curinodes > dq->isoft) {
		if (!dq->itime)
			dq->itime = now + xr_qfile_grace(qf, 1);
	} else {
		dq->itime = 0;
	}
}

static errcode_t apply(ext2_filsys fs, const struct deltas *d)
{
	struct xr_qfile *qf[XR_QTYPES] = { NULL };
	struct xr_dquot dq;
	errcode_t err = 0;

	for (size_t i = 0; !err && i < d->n; i++) {
		const struct delta *x = &d->v[i];

		if (!x->bytes && !x->inodes)
			continue;
		if (!qf[x->type])
			err = xr_qfile_open(fs, x->type, &qf[x->type]);
		if (!err)
			err = xr_qfile_get(qf[x->type], x->id, &dq);
		if (err)
			break;
		dq.curspace = add_clamped(dq.curspace, x->bytes);
		dq.curinodes = add_clamped(dq.curinodes, x->inodes);
		set_grace(&dq, qf[x->type], xr_now(fs));
		err = xr_qfile_put(qf[x->type], &dq);
	}
	for (int t = 0; t < XR_QTYPES; t++) {
		errcode_t e = xr_qfile_close(qf[t]);

		if (!err)
			err = e;
	}
	return err;
}

errcode_t xr_quota_flush(ext2_filsys fs)
{
	struct xr_quota *q = quota_of(fs);
	struct deltas d = { 0 };
	struct charge now;
	errcode_t err = 0;
	size_t i, n;

	if (!q || !q->n)
		return 0;
	n = q->n;
	for (i = 0; !err && i < n; i++) {
		err = read_charge(fs, q->v[i].ino, &now);
		if (!err)
			err = add_charge(&d, fs, &q->v[i].was, -1);
		if (!err)
			err = add_charge(&d, fs, &now, +1);
	}
	if (err) {
		/* nothing applied: the records stay for the next flush (the
		 * close's, without a journal; a journal's rollback resets) */
		ext2fs_free_mem(&d.v);
		return err;
	}
	/* the quota files' own writes are not charged: stop recording */
	for (i = 0; i < n; i++)
		ext2fs_fast_unmark_inode_bitmap2(q->seen, q->v[i].ino);
	q->n = 0;
	err = apply(fs, &d);
	ext2fs_free_mem(&d.v);
	return err;
}

errcode_t xr_quota_end(extref_fs_t xfs, errcode_t err)
{
	errcode_t e = xr_quota_flush(extref_fs_ext2(xfs));

	return err ? err : e;
}

/* After a rollback the usage recorded is the rolled-back operation's:
 * start again from the image as it is. */
static errcode_t quota_reset(ext2_filsys fs)
{
	xr_quota_detach(fs);
	return xr_quota_attach(fs);
}

const struct xr_tx_hook xr_quota_tx_hook = {
	.flush = xr_quota_flush,
	.reset = quota_reset,
};
