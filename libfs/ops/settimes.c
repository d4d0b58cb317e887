/*
 * settimes.c --- extref_set_times: an inode's access and modification
 * times set as utimensat(2) sets them (fs/utimes.c, setattr_prepare):
 * each time explicit (to the nanosecond), now (EXTREF_UTIME_NOW) or
 * kept (EXTREF_UTIME_OMIT); the change time set to now.
 *
 *   Both kept: nothing happens, not even a check (the kernel returns
 *     before it looks the path up).
 *   Both now: the owner, CAP_FOWNER, or write permission (EACCES);
 *     an immutable inode EPERM.
 *   Any other: the owner or CAP_FOWNER, else EPERM; an immutable or
 *     append-only inode EPERM.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

#define NSEC_MAX	999999999L

/* A time's kind: now (NULL too), kept, or explicit (valid or not). */
static int is_now(const struct timespec *t)
{
	return !t || t->tv_nsec == EXTREF_UTIME_NOW;
}

static int is_omit(const struct timespec *t)
{
	return t && t->tv_nsec == EXTREF_UTIME_OMIT;
}

static int nsec_valid(const struct timespec *t)
{
	return is_now(t) || is_omit(t) ||
	       (t->tv_nsec >= 0 && t->tv_nsec <= NSEC_MAX);
}

/* may_setattr and setattr_prepare for the times, under the identity. */
static errcode_t times_allowed(extref_fs_t xfs, ext2_ino_t ino,
			       const struct ext2_inode *inode, int touch)
{
	const struct extref_cred *c = xr_actor(xfs);

	if (!c)
		return 0;
	if (inode->i_flags & EXT2_IMMUTABLE_FL)
		return EXTREF_ERR_PERM;
	if (touch)
		return xr_owner_or_capable(c, inode) ? 0 :
			xr_permission(extref_fs_ext2(xfs), c, ino, inode,
				      XR_MAY_WRITE);
	if (inode->i_flags & EXT2_APPEND_FL)
		return EXTREF_ERR_PERM;
	return xr_owner_or_capable(c, inode) ? 0 : EXTREF_ERR_PERM;
}

/* One time of in: now (to the nanosecond, as every time the library
 * sets: the foreign-write check relies on it), kept, or t. */
static void set_one(ext2_filsys fs, struct ext2_inode_large *in, int which,
		    const struct timespec *t, const struct timespec *now)
{
	if (is_omit(t))
		return;
	if (is_now(t))
		xr_time_set(fs, in, which, now->tv_sec, now->tv_nsec);
	else
		xr_time_set(fs, in, which, t->tv_sec, t->tv_nsec);
}

static errcode_t set_times_op(extref_fs_t xfs, ext2_ino_t ino,
			      const struct timespec *atime,
			      const struct timespec *mtime)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode_large *in = NULL;
	int isz = EXT2_INODE_SIZE(fs->super);
	struct timespec now;
	errcode_t err;

	xr_now_ts(fs, &now);
	if (!nsec_valid(atime) || !nsec_valid(mtime))
		return EXTREF_ERR_BAD_TIME;
	err = extref_check_modifiable(xfs, ino);
	if (!err)
		err = ext2fs_get_memzero(isz > (int)sizeof(*in) ? isz :
					 (int)sizeof(*in), &in);
	if (!err)
		err = xr_read_inode(fs, ino, (struct ext2_inode *)in);
	if (!err)
		err = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)in,
					     isz);
	if (!err)
		err = times_allowed(xfs, ino, (struct ext2_inode *)in,
				    is_now(atime) && is_now(mtime));
	if (!err) {
		set_one(fs, in, XR_TS_ATIME, atime, &now);
		set_one(fs, in, XR_TS_MTIME, mtime, &now);
		xr_time_set(fs, in, XR_TS_CTIME, now.tv_sec, now.tv_nsec);
		err = ext2fs_write_inode_full(fs, ino,
					      (struct ext2_inode *)in, isz);
	}
	ext2fs_free_mem(&in);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_set_times(extref_fs_t xfs, ext2_ino_t ino,
			   const struct timespec *atime,
			   const struct timespec *mtime)
{
	errcode_t err;

	if (is_omit(atime) && is_omit(mtime))
		return 0;
	err = xr_tx_begin(xfs);
	return err ? err : xr_tx_end(xfs, set_times_op(xfs, ino, atime,
						       mtime));
}
