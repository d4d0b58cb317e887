/*
 * limits.c --- quota limits: the check an operation makes before it
 * changes anything, and chown's transfer.
 *
 * The check follows the kernel's dquot_add_space / dquot_add_inodes:
 * refused when the new usage passes the hard limit, or passes the soft
 * limit after its grace time has run out.  A soft limit passed for the
 * first time is allowed; the flush starts its grace time (charge.c).
 * Only an identity without CAP_SYS_RESOURCE is refused anything.
 */
#include <string.h>
#include "quota/xr_quota.h"
#include "ops/extref_ops_int.h"
#include "base/extref_vec.h"

static int over(__u64 cur, __u64 more, __u64 soft, __u64 hard,
		__u64 grace_end, __u64 now)
{
	__u64 n = xr_usage_add(cur, more);

	if (!more)
		return 0;
	if (hard && n > hard)
		return 1;
	return soft && n > soft && grace_end && now >= grace_end;
}

static int enforced(extref_fs_t xfs)
{
	const struct extref_cred *who = extref_identity(xfs);

	return who && !(who->caps & EXTREF_CAP_SYS_RESOURCE) &&
	       ext2fs_has_feature_quota(extref_fs_ext2(xfs)->super);
}

static errcode_t check_one(extref_fs_t xfs, int type, __u32 id,
			   __u64 bytes, __u64 inodes)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	__u64 now = xr_now(fs);
	struct xr_qfile *qf;
	struct xr_dquot dq;
	errcode_t err;

	if (!xr_quota_inum(fs, type))
		return 0;
	err = xr_qfile_open(fs, type, &qf);
	if (err)
		return err;
	err = xr_qfile_get(qf, id, &dq);
	if (!err && (over(dq.curspace, bytes, dq.bsoft, dq.bhard, dq.btime,
			  now) ||
		     over(dq.curinodes, inodes, dq.isoft, dq.ihard, dq.itime,
			  now)))
		err = EXTREF_ERR_DQUOT;
	xr_qfile_close(qf);
	return err;
}

errcode_t xr_quota_check(extref_fs_t xfs, const __u32 id[XR_QTYPES],
			 __u64 bytes, __u64 inodes)
{
	errcode_t err = 0;

	if (!enforced(xfs))
		return 0;
	for (int t = 0; !err && t < XR_QTYPES; t++)
		err = check_one(xfs, t, id[t], bytes, inodes);
	return err;
}

errcode_t xr_quota_check_ino(extref_fs_t xfs, ext2_ino_t ino, __u64 bytes,
			     __u64 inodes)
{
	__u32 id[XR_QTYPES];
	errcode_t err;

	if (!enforced(xfs))
		return 0;
	err = xr_quota_ino_ids(extref_fs_ext2(xfs), ino, id);
	return err ? err : xr_quota_check(xfs, id, bytes, inodes);
}

/*
 * chown: the new owner takes on the whole inode, as the kernel's
 * __dquot_transfer checks it; only the ids that change are checked.
 * The usage itself moves when the caller writes the inode (charge.c).
 */
errcode_t xr_quota_transfer(extref_fs_t xfs, ext2_ino_t ino,
			    const struct ext2_inode *old_inode,
			    __u32 new_uid, __u32 new_gid)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	__u32 id[XR_QTYPES];
	__u64 bytes;
	errcode_t err;

	if (!enforced(xfs) || !old_inode->i_links_count)
		return 0;
	err = xr_quota_ino_ids(fs, ino, id);
	if (err)
		return err;
	bytes = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)old_inode) *
		512ULL;
	if (id[EXTREF_QUOTA_USER] != new_uid)
		err = check_one(xfs, EXTREF_QUOTA_USER, new_uid, bytes, 1);
	if (!err && id[EXTREF_QUOTA_GROUP] != new_gid)
		err = check_one(xfs, EXTREF_QUOTA_GROUP, new_gid, bytes, 1);
	return err;
}

/* Blocks of [lstart, lend) mapped by the file alone, and shared. */
struct range_count {
	blk64_t	lstart, lend;
	blk64_t	own, shared;
};

static errcode_t count_map(const struct extref_mapping *m, void *priv)
{
	struct range_count *c = priv;
	blk64_t s = m->lblk > c->lstart ? m->lblk : c->lstart;
	blk64_t e = m->lblk + m->len < c->lend ? m->lblk + m->len : c->lend;

	if (s < e) {
		if (m->shared)
			c->shared += e - s;
		else
			c->own += e - s;
	}
	return 0;
}

/*
 * Before a write or clone onto [off, off+len): i_blocks grows by the
 * blocks the range does not map yet (holes).  A shared block the write
 * copies is charged already (the file's i_blocks counts it) and is
 * replaced one for one; unshare therefore charges nothing.  Extent-tree
 * blocks are not counted (at most a block or two past a limit).
 */
errcode_t xr_quota_check_range(extref_fs_t xfs, ext2_ino_t ino, __u64 off,
			       __u64 len)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct range_count c;
	__u64 bs = fs->blocksize;
	errcode_t err;

	if (!enforced(xfs) || !len)
		return 0;
	c.lstart = off / bs;
	c.lend = (off + len + bs - 1) / bs;
	c.own = c.shared = 0;
	err = extref_iterate_mappings(xfs, ino, count_map, &c);
	if (err)
		return err;
	return xr_quota_check_ino(xfs, ino, (c.lend - c.lstart - c.own -
					     c.shared) * bs, 0);
}

/*
 * A reflink charges the new files their whole i_blocks: in copy mode to
 * the caller (the project the destination passes on, else 0), in
 * preserve mode to each
 * source file's owner.  Hard links are counted once per name (the
 * estimate is an upper bound).
 */
struct owner_sum {
	__u32	id[XR_QTYPES];
	__u64	bytes, inodes;
};

struct estimate {
	extref_fs_t		xfs;
	int			preserve;
	__u32			cid[XR_QTYPES];
	struct owner_sum	*v;
	size_t			n, cap;
};

static errcode_t est_add(struct estimate *e, const __u32 id[XR_QTYPES],
			 __u64 bytes)
{
	errcode_t err;
	size_t i;

	for (i = 0; i < e->n; i++)
		if (!memcmp(e->v[i].id, id, sizeof(e->v[i].id)))
			break;
	if (i == e->n) {
		err = xr_grow(&e->v, &e->cap, e->n, sizeof(*e->v));
		if (err)
			return err;
		memset(&e->v[e->n], 0, sizeof(e->v[0]));
		memcpy(e->v[e->n++].id, id, sizeof(e->v[0].id));
	}
	e->v[i].bytes = xr_usage_add(e->v[i].bytes, bytes);
	e->v[i].inodes++;
	return 0;
}

static errcode_t est_walk(struct estimate *e, ext2_ino_t ino, int depth)
{
	ext2_filsys fs = extref_fs_ext2(e->xfs);
	struct ext2_inode inode;
	struct extref_dirlist l = { 0 };
	__u32 id[XR_QTYPES];
	errcode_t err;

	if (depth > 1024)
		return EXTREF_ERR_DIR_DEPTH;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (!err && e->preserve)
		err = xr_quota_ino_ids(fs, ino, id);
	else
		memcpy(id, e->cid, sizeof(id));
	if (!err)
		err = est_add(e, id, ext2fs_get_stat_i_blocks(fs, &inode) *
			      512ULL);
	if (err || !LINUX_S_ISDIR(inode.i_mode))
		return err;
	err = xr_dir_list(fs, ino, 0, &l);
	for (size_t i = 0; !err && i < l.n; i++)
		err = est_walk(e, l.v[i].ino, depth + 1);
	extref_dir_list_free(&l);
	return err;
}

errcode_t xr_quota_check_reflink(extref_fs_t xfs, ext2_ino_t src,
				 ext2_ino_t dir, int flags,
				 const struct extref_cred *cred)
{
	struct estimate e = { .xfs = xfs };
	errcode_t err;

	if (!enforced(xfs))
		return 0;
	e.preserve = flags & EXTREF_REFLINK_PRESERVE;
	e.cid[EXTREF_QUOTA_USER] = cred->uid;
	e.cid[EXTREF_QUOTA_GROUP] = cred->gid;
	err = xr_inherited_projid(extref_fs_ext2(xfs), dir,
				  &e.cid[EXTREF_QUOTA_PROJECT]);
	if (!err)
		err = est_walk(&e, src, 0);
	for (size_t i = 0; !err && i < e.n; i++)
		err = xr_quota_check(xfs, e.v[i].id, e.v[i].bytes,
				     e.v[i].inodes);
	ext2fs_free_mem(&e.v);
	return err;
}
