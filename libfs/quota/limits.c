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

static int over(__u64 cur, __u64 more, __u64 soft, __u64 hard,
		__u64 grace_end, __u64 now)
{
	__u64 n = cur + more;

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
