/*
 * quota_api.c --- the public quota calls (extref_ops.h).
 */
#include <string.h>
#include "quota/xr_quota.h"
#include "ops/extref_ops_int.h"
#include "base/extref_vec.h"
#include "txn/xr_txio.h"

static void to_public(const struct xr_dquot *dq, struct extref_quota *q)
{
	q->space = dq->curspace;
	q->inodes = dq->curinodes;
	q->bsoft = dq->bsoft;
	q->bhard = dq->bhard;
	q->isoft = dq->isoft;
	q->ihard = dq->ihard;
	q->btime = dq->btime;
	q->itime = dq->itime;
}

errcode_t extref_quota_get(extref_fs_t xfs, int type, __u32 id,
			   struct extref_quota *q)
{
	struct xr_qfile *qf;
	struct xr_dquot dq;
	errcode_t err;

	memset(q, 0, sizeof(*q));
	err = xr_quota_flush(extref_fs_ext2(xfs));
	if (!err)
		err = xr_qfile_open(extref_fs_ext2(xfs), type, &qf);
	if (err)
		return err;
	err = xr_qfile_get(qf, id, &dq);
	if (!err)
		to_public(&dq, q);
	xr_qfile_close(qf);
	return err;
}

/* The kernel's setquota: a grace time starts or ends with the limit. */
static void limit_times(struct xr_dquot *dq, __u64 now,
			const struct xr_qfile *qf)
{
	if (!dq->bsoft || dq->curspace <= dq->bsoft)
		dq->btime = 0;
	else if (!dq->btime)
		dq->btime = now + xr_qfile_grace(qf, 0);
	if (!dq->isoft || dq->curinodes <= dq->isoft)
		dq->itime = 0;
	else if (!dq->itime)
		dq->itime = now + xr_qfile_grace(qf, 1);
}

static errcode_t quota_set_op(extref_fs_t xfs, int type, __u32 id,
			   const struct extref_quota *q)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_qfile *qf;
	struct xr_dquot dq;
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = xr_quota_verify(xfs);	/* as every writer: the whole file */
	if (!err)
		err = xr_quota_flush(fs);
	if (!err)
		err = xr_qfile_open(fs, type, &qf);
	if (err)
		return err;
	err = xr_qfile_get(qf, id, &dq);
	if (!err) {
		dq.bsoft = q->bsoft - q->bsoft % 1024;
		dq.bhard = q->bhard - q->bhard % 1024;
		dq.isoft = q->isoft;
		dq.ihard = q->ihard;
		limit_times(&dq, xr_now(fs), qf);
		err = xr_qfile_put(qf, &dq);
	}
	if (!err)
		err = xr_qfile_close(qf);
	else
		xr_qfile_close(qf);
	return err;
}

/* One transaction (txn.c). */
errcode_t extref_quota_set(extref_fs_t xfs, int type, __u32 id,
			   const struct extref_quota *q)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, quota_set_op(xfs, type, id, q));
}

struct iter {
	int			type;
	extref_quota_func	func;
	void			*priv;
};

static errcode_t iter_one(const struct xr_dquot *dq, void *priv)
{
	struct iter *it = priv;
	struct extref_quota q;

	to_public(dq, &q);
	return it->func(it->type, dq->id, &q, it->priv);
}

errcode_t extref_quota_iterate(extref_fs_t xfs, int type,
			       extref_quota_func func, void *priv)
{
	struct iter it = { type, func, priv };
	struct xr_qfile *qf;
	errcode_t err;

	err = xr_quota_flush(extref_fs_ext2(xfs));
	if (!err)
		err = xr_qfile_open(extref_fs_ext2(xfs), type, &qf);
	if (err)
		return err;
	err = xr_qfile_iterate(qf, iter_one, &it);
	xr_qfile_close(qf);
	return err;
}

/* Recompute: usage of every id from an inode scan, as e2fsck's pass 1. */
struct usage {
	int	type;
	__u32	id;
	__u64	bytes, inodes;
	int	seen;
};

struct usages {
	struct usage	*v;
	size_t		n, cap;
};

static errcode_t usage_add(struct usages *u, int type, __u32 id,
			   __u64 bytes)
{
	errcode_t err;

	for (size_t i = 0; i < u->n; i++)
		if (u->v[i].type == type && u->v[i].id == id) {
			u->v[i].bytes = xr_usage_add(u->v[i].bytes, bytes);
			u->v[i].inodes++;
			return 0;
		}
	err = xr_grow(&u->v, &u->cap, u->n, sizeof(*u->v));
	if (err)
		return err;
	u->v[u->n++] = (struct usage){ type, id, bytes, 1, 0 };
	return 0;
}

static errcode_t scan_usage(ext2_filsys fs, struct usages *u)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode_large *in = NULL;
	ext2_inode_scan scan;
	ext2_ino_t ino;
	__u32 id[XR_QTYPES];
	errcode_t err;

	err = ext2fs_get_memzero(isz < (int)sizeof(*in) ? (int)sizeof(*in)
				 : isz, &in);
	if (err)
		return err;
	err = ext2fs_open_inode_scan(fs, 0, &scan);
	while (!err) {
		err = ext2fs_get_next_inode_full(scan, &ino,
						 (struct ext2_inode *)in, isz);
		if (err || !ino)
			break;
		if (!xr_quota_charged(fs, ino, in))
			continue;
		xr_quota_ids(fs, in, id);
		for (int t = 0; !err && t < XR_QTYPES; t++)
			if (xr_quota_inum(fs, t))
				err = usage_add(u, t, id[t],
					ext2fs_get_stat_i_blocks(fs,
					(struct ext2_inode *)in) * 512ULL);
	}
	if (scan)
		ext2fs_close_inode_scan(scan);
	ext2fs_free_mem(&in);
	return err;
}

struct reset {
	struct usages	*u;
	int		type;
	struct xr_qfile	*qf;
	struct xr_dquot	*stale;
	size_t		nstale, cap;
};

/* Ids in the file that no inode is charged to any more read 0. */
static errcode_t note_stale(const struct xr_dquot *dq, void *priv)
{
	struct reset *r = priv;
	errcode_t err;

	for (size_t i = 0; i < r->u->n; i++)
		if (r->u->v[i].type == r->type && r->u->v[i].id == dq->id)
			return 0;
	if (!dq->curspace && !dq->curinodes)
		return 0;
	err = xr_grow(&r->stale, &r->cap, r->nstale, sizeof(*r->stale));
	if (err)
		return err;
	r->stale[r->nstale++] = *dq;
	return 0;
}

static errcode_t write_type(ext2_filsys fs, int type, struct usages *u)
{
	struct reset r = { .u = u, .type = type };
	struct xr_dquot dq;
	errcode_t err;

	err = xr_qfile_open(fs, type, &r.qf);
	if (err)
		return err;
	err = xr_qfile_iterate(r.qf, note_stale, &r);
	for (size_t i = 0; !err && i < r.nstale; i++) {
		r.stale[i].curspace = r.stale[i].curinodes = 0;
		r.stale[i].btime = r.stale[i].itime = 0;
		err = xr_qfile_put(r.qf, &r.stale[i]);
	}
	for (size_t i = 0; !err && i < u->n; i++) {
		if (u->v[i].type != type)
			continue;
		err = xr_qfile_get(r.qf, u->v[i].id, &dq);
		if (err)
			break;
		dq.curspace = u->v[i].bytes;
		dq.curinodes = u->v[i].inodes;
		limit_times(&dq, xr_now(fs), r.qf);
		err = xr_qfile_put(r.qf, &dq);
	}
	ext2fs_free_mem(&r.stale);
	if (!err)
		return xr_qfile_close(r.qf);
	xr_qfile_close(r.qf);
	return err;
}

static errcode_t quota_recompute_op(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct usages u = { 0 };
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	if (!ext2fs_has_feature_quota(fs->super))
		return 0;
	err = xr_quota_verify(xfs);
	if (!err)
		err = xr_quota_flush(fs);
	if (!err)
		err = scan_usage(fs, &u);
	for (int t = 0; !err && t < XR_QTYPES; t++)
		if (xr_quota_inum(fs, t))
			err = write_type(fs, t, &u);
	ext2fs_free_mem(&u.v);
	return err;
}

/* One transaction (txn.c). */
errcode_t extref_quota_recompute(extref_fs_t xfs)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, quota_recompute_op(xfs));
}

ext2_ino_t extref_quota_inum(ext2_filsys fs, int type)
{
	return type >= 0 && type < XR_QTYPES ? xr_quota_inum(fs, type) : 0;
}
