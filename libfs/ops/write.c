/*
 * write.c --- extref_pwrite and extref_unshare: the refusals first
 * (permission, range rules, quota), then the copy-on-write of rw.c
 * (xr_cow_range), in one transaction each.
 */
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

static errcode_t pwrite_op(extref_fs_t xfs, ext2_ino_t ino, __u64 off,
			const void *buf, __u64 len)
{
	struct ext2_inode inode;
	errcode_t err = xr_check_reg(xfs, ino, &inode);

	if (!err)
		err = xr_perm_check_write(xfs, ino, &inode, XR_CHANGE_WRITE, off);
	if (!err)
		err = xr_write_rules(extref_fs_ext2(xfs), off, len);
	if (!err)
		err = xr_open_reg(xfs, ino, &inode);
	if (!err)
		err = xr_quota_check_range(xfs, ino, off, len);
	/* nothing changes before the refusals */
	if (!err && len)
		err = xr_file_modified(xfs, ino, &inode);
	if (err)
		return err;
	return xr_quota_end(xfs, xr_cow_range(xfs, ino, &inode, off, buf,
						    len, XR_COW_WRITE));
}

/* One transaction (txn.c). */
errcode_t extref_pwrite(extref_fs_t xfs, ext2_ino_t ino, __u64 off,
			const void *buf, __u64 len)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, pwrite_op(xfs, ino, off, buf, len));
}

static errcode_t unshare_op(extref_fs_t xfs, ext2_ino_t ino, __u64 off,
			 __u64 len)
{
	struct ext2_inode inode;
	__u64 size;
	errcode_t err = xr_check_reg(xfs, ino, &inode);

	if (!err)
		err = xr_perm_check_write(xfs, ino, &inode, XR_CHANGE_DATA, off);
	if (!err)
		err = xr_falloc_rules(extref_fs_ext2(xfs), off, len);
	if (err)
		return err;
	size = EXT2_I_SIZE(&inode);
	if (off >= size)
		return 0;
	if (off + len > size)
		len = size - off;
	err = xr_open_reg(xfs, ino, &inode);
	if (!err)
		err = xr_file_modified(xfs, ino, &inode);
	if (err)
		return err;
	return xr_quota_end(xfs, xr_cow_range(xfs, ino, &inode, off, NULL,
					    len, XR_COW_UNSHARE));
}

/* One transaction (txn.c). */
errcode_t extref_unshare(extref_fs_t xfs, ext2_ino_t ino, __u64 off,
			 __u64 len)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, unshare_op(xfs, ino, off, len));
}
