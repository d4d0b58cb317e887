/*
 * trunc.c --- truncate and punch: mappings go, then counts drop.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

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

/* Whether block b holds data whose count says another mapping shares it. */
static errcode_t shared_data(extref_fs_t xfs, ext2_ino_t ino,
			     struct ext2_inode *inode, blk64_t b, int *cow)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_map_vec maps = { 0 };
	__u32 count = 0;
	errcode_t err;

	*cow = 0;
	err = xr_get_mappings(fs, ino, inode, b, b + 1, &maps);
	if (!err && maps.n && !maps.v[0].uninit)
		err = extref_tree_get_count(extref_fs_tree(xfs),
					    maps.v[0].pblk, &count);
	*cow = count >= 2;
	xr_map_vec_free(&maps);
	return err;
}

/*
 * What a punch of [off, end) (or a truncate to off) will need, found
 * before it changes anything: a new block for each partial end block
 * that is shared (its zeroing is copy-on-write), room for the extent
 * tree when an extent is cut in two, and room for the tree's commit.
 * Refused here, a punch on a full filesystem leaves the file as it was.
 */
static errcode_t punch_room(extref_fs_t xfs, ext2_ino_t ino,
			    struct ext2_inode *inode, __u64 off, __u64 end,
			    blk64_t ls, blk64_t le)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_map_vec maps = { 0 }, edge = { 0 };
	__u64 bs = fs->blocksize, size = EXT2_I_SIZE(inode);
	blk64_t need = 0;
	int cow, cut = 0;
	errcode_t err = 0;

	if (off % bs) {
		err = shared_data(xfs, ino, inode, off / bs, &cow);
		need += cow;
	}
	if (!err && end % bs && end != size) {
		err = shared_data(xfs, ino, inode, end / bs, &cow);
		need += cow;
	}
	if (!err && ls < le)
		err = xr_get_mappings(fs, ino, inode, ls, le, &maps);
	/* Mapped on both sides: the range may cut an extent in two. */
	if (!err && ls < le && ls > 0)
		err = xr_get_mappings(fs, ino, inode, ls - 1, ls, &edge);
	if (!err && edge.n) {
		edge.n = 0;
		err = xr_get_mappings(fs, ino, inode, le, le + 1, &edge);
		cut = edge.n > 0;
	}
	if (!err && (need || cut) &&
	    ext2fs_free_blocks_count(fs->super) < need + XR_EXTENT_SLACK)
		err = EXT2_ET_BLOCK_ALLOC_FAIL;
	if (!err)
		err = xr_tree_room(xfs, &maps, need);
	xr_map_vec_free(&maps);
	xr_map_vec_free(&edge);
	return err;
}

static errcode_t truncate_op(extref_fs_t xfs, ext2_ino_t ino, __u64 size)
{
	ext2_filsys fs;
	struct ext2_inode inode;
	__u64 old, tail;
	errcode_t err;

	fs = extref_fs_ext2(xfs);
	err = xr_check_reg(xfs, ino, &inode);
	if (!err)
		err = xr_perm_check_write(xfs, ino, &inode, XR_CHANGE_DATA, 0);
	if (!err)
		err = xr_truncate_rules(fs, size);
	if (!err)
		err = xr_open_reg(xfs, ino, &inode);
	if (!err)
		err = xr_file_modified(xfs, ino, &inode);
	if (err)
		return err;
	old = EXT2_I_SIZE(&inode);
	if (size < old)
		err = punch_room(xfs, ino, &inode, size, old,
				 xr_size_blocks(fs, size), 1ULL << 32);
	if (!err && size < old && size % fs->blocksize) {
		tail = fs->blocksize - size % fs->blocksize;
		if (size + tail > old)
			tail = old - size;
		err = xr_zero_partial(xfs, ino, &inode, size, tail);
	}
	/*
	 * Mappings go before the size: an interrupted truncate leaves a
	 * hole at the end of a file of the old size, which e2fsck accepts,
	 * rather than blocks past EOF.  Growing keeps what lies past the
	 * old end (fallocate KEEP_SIZE's unwritten blocks), as ext4 does:
	 * it truncates blocks only for a size at most the old one.
	 */
	if (!err && size <= old)
		err = drop_blocks(xfs, ino, &inode, xr_size_blocks(fs, size),
				  1ULL << 32);
	if (!err) {
		err = ext2fs_inode_size_set(fs, &inode, size);
		if (!err)
			err = xr_write_inode_times(fs, ino, &inode,
						   XR_TIME_MTIME);
	}
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_truncate(extref_fs_t xfs, ext2_ino_t ino, __u64 size)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, truncate_op(xfs, ino, size));
}

static errcode_t punch_op(extref_fs_t xfs, ext2_ino_t ino, __u64 off, __u64 len)
{
	ext2_filsys fs;
	struct ext2_inode inode;
	__u64 end, size, bs;
	blk64_t ls, le;
	errcode_t err;

	fs = extref_fs_ext2(xfs);
	err = xr_check_reg(xfs, ino, &inode);
	if (!err)
		err = xr_perm_check_write(xfs, ino, &inode, XR_CHANGE_DATA, off);
	if (!err)
		err = xr_falloc_rules(fs, off, len);
	if (err)
		return err;
	bs = fs->blocksize;
	size = EXT2_I_SIZE(&inode);
	end = off + len > size ? size : off + len;
	if (off >= end)
		return 0;
	err = xr_open_reg(xfs, ino, &inode);
	if (!err)
		err = xr_file_modified(xfs, ino, &inode);
	if (err)
		return err;
	/*
	 * Inside one block: zeroed, unless the range runs from the block's
	 * start to EOF, where the block goes (reads past EOF are zero, and a
	 * shared block needs no copy).
	 */
	if (off / bs == (end - 1) / bs && (off % bs || (end % bs &&
							end != size)))
		return xr_quota_end(xfs, xr_zero_partial(xfs, ino, &inode, off,
						      end - off));
	ls = (off + bs - 1) / bs;
	le = end == size ? xr_size_blocks(fs, end) : end / bs;
	err = punch_room(xfs, ino, &inode, off, end, ls, le);
	if (err)
		return xr_quota_end(xfs, err);
	/*
	 * Whole blocks go first: the extents left are fewer, so that the
	 * partial blocks' copies are more likely to fit the leaf and be
	 * switched in one write (extent_splice.c).
	 */
	err = drop_blocks(xfs, ino, &inode, ls, le);
	if (!err && off % bs)
		err = xr_zero_partial(xfs, ino, &inode, off, bs - off % bs);
	if (!err && end % bs && end != size)
		err = xr_zero_partial(xfs, ino, &inode, end - end % bs, end % bs);
	if (!err)
		err = xr_write_inode_times(fs, ino, &inode, XR_TIME_MTIME);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_punch(extref_fs_t xfs, ext2_ino_t ino, __u64 off, __u64 len)
{
	errcode_t err;

	xr_damage_clear(xfs);
	err = xr_tx_begin(xfs);
	if (err)
		return err;
	err = xr_tx_end(xfs, punch_op(xfs, ino, off, len));
	return xr_damage_result(xfs, &ino, 1, err);
}
