/*
 * xr_quota.h --- the library's private quota calls: the v2 quota files
 * (qfile.c) and the usage kept with every inode write (charge.c).
 */
#ifndef XR_QUOTA_H
#define XR_QUOTA_H

#include "extref.h"
#include "txn/xr_handle.h"

#define XR_QTYPES	3	/* EXTREF_QUOTA_USER, _GROUP, _PROJECT */

/* One dquot in memory: limits and space in bytes. */
struct xr_dquot {
	__u32	id;
	__u64	ihard, isoft, curinodes;
	__u64	bhard, bsoft, curspace;
	__u64	btime, itime;
	__u32	blk;		/* data block holding it; 0: not in the file */
	unsigned slot;
};

/*
 * Usage saturates at the largest the kernel and e2fsprogs can hold (their
 * qsize_t is signed 64-bit): a sum past it stays there, where a wrapped
 * sum would read as small, or as negative.
 */
#define XR_USAGE_MAX	0x7fffffffffffffffULL

static inline __u64 xr_usage_add(__u64 a, __u64 b)
{
	return a >= XR_USAGE_MAX || b >= XR_USAGE_MAX - a ? XR_USAGE_MAX
							  : a + b;
}

/* qfile.c: one quota file, opened on the quota inode of type. */
struct xr_qfile;
ext2_ino_t xr_quota_inum(ext2_filsys fs, int type);
errcode_t xr_quota_inum_check(ext2_filsys fs, int type, ext2_ino_t ino);
errcode_t xr_qfile_open(ext2_filsys fs, int type, struct xr_qfile **ret);
errcode_t xr_qfile_close(struct xr_qfile *qf);
/* Not in the file: *dq is zero but for the id (dq->blk 0). */
errcode_t xr_qfile_get(struct xr_qfile *qf, __u32 id, struct xr_dquot *dq);
/* Write *dq, adding an entry (and tree blocks) when it has none. */
errcode_t xr_qfile_put(struct xr_qfile *qf, struct xr_dquot *dq);
__u32 xr_qfile_grace(const struct xr_qfile *qf, int inodes);
errcode_t xr_qfile_verify(struct xr_qfile *qf);
typedef errcode_t (*xr_dquot_func)(const struct xr_dquot *dq, void *priv);
errcode_t xr_qfile_iterate(struct xr_qfile *qf, xr_dquot_func func,
			   void *priv);

/* charge.c */
errcode_t xr_quota_attach(ext2_filsys fs);
void xr_quota_detach(ext2_filsys fs);
/*
 * Every quota file checked whole, once per open image (xr_op_begin): its
 * inode, its tree, its lists, and that it shares no block (it is written
 * in place).
 */
errcode_t xr_quota_verify(extref_fs_t xfs);
/* Write the usage changed since the last flush to the quota files. */
errcode_t xr_quota_flush(ext2_filsys fs);
/* The end of an operation: flush, keeping the operation's error first. */
errcode_t xr_quota_end(extref_fs_t xfs, errcode_t err);
/* Whether e2fsck charges the inode (in use, not reserved); its ids. */
int xr_quota_charged(ext2_filsys fs, ext2_ino_t ino,
		     const struct ext2_inode_large *inode);
void xr_quota_ids(ext2_filsys fs, const struct ext2_inode_large *inode,
		  __u32 id[XR_QTYPES]);
errcode_t xr_quota_ino_ids(ext2_filsys fs, ext2_ino_t ino,
			   __u32 id[XR_QTYPES]);
/* The transactions' hook: usage flushed at each commit, read again after
 * a rollback (txn/xr_handle.h). */
extern const struct xr_tx_hook xr_quota_tx_hook;

#endif /* XR_QUOTA_H */
