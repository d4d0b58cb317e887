/*
 * trunc.c --- truncate and punch: mappings go, then counts drop.
 */
#include <string.h>
#include "extref_ops_int.h"

/* Zero [off, off+len) inside one block, if that block holds data. */
static errcode_t zero_partial(extref_fs_t xfs, ext2_ino_t ino,
			      struct ext2_inode *inode, __u64 off, __u64 len)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_map_vec maps = { 0 };
	blk64_t b = off / fs->blocksize;
	char *zero = NULL;
	errcode_t err;
	int data;

	if (len == 0)
		return 0;
	err = xr_get_mappings(fs, ino, inode, b, b + 1, &maps);
	data = !err && maps.n && !maps.v[0].uninit;
	xr_map_vec_free(&maps);
	if (err || !data)
		return err;
	err = ext2fs_get_memzero(len, &zero);
	if (!err)
		err = xr_cow_range(xfs, ino, inode, off, zero, len,
				   XR_COW_WRITE);
	ext2fs_free_mem(&zero);
	return err;
}

/* Unmap whole blocks [lstart, lend) and release them. */
static errcode_t drop_blocks(extref_fs_t xfs, ext2_ino_t ino,
			     struct ext2_inode *inode, blk64_t lstart,
			     blk64_t lend)
{
	struct xr_prange_vec removed = { 0 };
	errcode_t err = 0;

	if (lstart < lend)
		err = xr_replace_range(extref_fs_ext2(xfs), ino, inode, lstart,
				       lend, NULL, 0, &removed);
	if (!err)
		err = xr_release_ranges(xfs, &removed);
	xr_prange_vec_free(&removed);
	return err;
}

errcode_t extref_truncate(extref_fs_t xfs, ext2_ino_t ino, __u64 size)
{
	ext2_filsys fs;
	struct ext2_inode inode;
	__u64 old, tail;
	errcode_t err = xr_open_reg(xfs, ino, &inode);

	if (err)
		return err;
	fs = extref_fs_ext2(xfs);
	old = EXT2_I_SIZE(&inode);
	if (size < old && size % fs->blocksize) {
		tail = fs->blocksize - size % fs->blocksize;
		if (size + tail > old)
			tail = old - size;
		err = zero_partial(xfs, ino, &inode, size, tail);
	}
	/*
	 * Mappings go before the size: an interrupted truncate leaves a
	 * hole at the end of a file of the old size, which e2fsck accepts,
	 * rather than blocks past EOF.
	 */
	if (!err)
		err = drop_blocks(xfs, ino, &inode, xr_size_blocks(fs, size),
				  1ULL << 32);
	if (!err) {
		err = ext2fs_inode_size_set(fs, &inode, size);
		if (!err)
			err = xr_write_inode_times(fs, ino, &inode,
						   XR_TIME_MTIME);
	}
	return err;
}

errcode_t extref_punch(extref_fs_t xfs, ext2_ino_t ino, __u64 off, __u64 len)
{
	ext2_filsys fs;
	struct ext2_inode inode;
	__u64 end, size, bs;
	errcode_t err = xr_open_reg(xfs, ino, &inode);

	if (err)
		return err;
	fs = extref_fs_ext2(xfs);
	bs = fs->blocksize;
	size = EXT2_I_SIZE(&inode);
	end = (len == 0 || off + len < off || off + len > size) ? size
								: off + len;
	if (off >= end)
		return 0;
	if (off / bs == (end - 1) / bs && (off % bs || end % bs))
		return zero_partial(xfs, ino, &inode, off, end - off);
	/*
	 * Whole blocks go first: the extents left are fewer, so that the
	 * partial blocks' copies are more likely to fit the leaf and be
	 * switched in one write (extent_splice.c).
	 */
	err = drop_blocks(xfs, ino, &inode, (off + bs - 1) / bs,
			  end == size ? xr_size_blocks(fs, end) : end / bs);
	if (!err && off % bs)
		err = zero_partial(xfs, ino, &inode, off, bs - off % bs);
	if (!err && end % bs && end != size)
		err = zero_partial(xfs, ino, &inode, end - end % bs, end % bs);
	if (!err)
		err = xr_write_inode_times(fs, ino, &inode, XR_TIME_MTIME);
	return err;
}
