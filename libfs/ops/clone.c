/*
 * clone.c --- clone and dedupe ranges (FICLONERANGE / FIDEDUPERANGE).
 *
 * Order: the source's blocks gain a mapping (counts raised, committed);
 * the destination range is unmapped and the source's mappings inserted
 * (inode written); then the destination's old blocks lose a mapping.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/* The source's mappings of the range, moved to destination offsets. */
static errcode_t source_maps(ext2_filsys fs, ext2_ino_t src,
			     struct ext2_inode *sinode, const struct xr_range *r,
			     struct xr_map_vec *maps)
{
	blk64_t s0 = r->soff / fs->blocksize;
	blk64_t n = xr_size_blocks(fs, r->len);
	blk64_t shift_to = r->doff / fs->blocksize;
	errcode_t err;
	size_t i;

	err = xr_get_mappings(fs, src, sinode, s0, s0 + n, maps);
	for (i = 0; !err && i < maps->n; i++)
		maps->v[i].lblk = maps->v[i].lblk - s0 + shift_to;
	return err;
}

static errcode_t do_clone(extref_fs_t xfs, ext2_ino_t src,
			  struct ext2_inode *sinode, ext2_ino_t dst,
			  const struct xr_range *r, int grow)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_map_vec maps = { 0 };
	struct xr_prange_vec removed = { 0 };
	struct ext2_inode dinode;
	blk64_t d0 = r->doff / fs->blocksize;
	errcode_t err;

	err = source_maps(fs, src, sinode, r, &maps);
	if (!err)
		err = xr_share_ranges(xfs, &maps);
	if (err)
		goto out;
	err = xr_read_inode(fs, dst, &dinode);
	if (!err)
		err = xr_replace_range(fs, dst, &dinode, d0,
				       d0 + xr_size_blocks(fs, r->len),
				       maps.v, maps.n, &removed);
	if (err)
		goto out;	/* counts stay high: leaked until fsck */
	if (grow && r->doff + r->len > EXT2_I_SIZE(&dinode))
		err = ext2fs_inode_size_set(fs, &dinode, r->doff + r->len);
	/* A dedupe leaves the data, and so the times, as they were. */
	if (!err && grow)
		err = xr_write_inode_times(fs, dst, &dinode, XR_TIME_MTIME);
	else if (!err)
		err = ext2fs_write_inode(fs, dst, &dinode);
	if (!err)
		err = xr_release_ranges(xfs, &removed);
out:
	xr_map_vec_free(&maps);
	xr_prange_vec_free(&removed);
	return err;
}

static errcode_t clone_range_op(extref_fs_t xfs, ext2_ino_t src, __u64 soff,
			     ext2_ino_t dst, __u64 doff, __u64 len,
			     __u64 *done)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode sinode, dinode;
	struct xr_range r = { soff, doff, len, 0 };
	errcode_t err;

	*done = 0;
	err = xr_read_inode(fs, src, &sinode);
	if (!err)
		err = xr_read_inode(fs, dst, &dinode);
	if (!err)
		err = xr_perm_remap(xfs, src, &sinode, dst, &dinode, 0);
	if (!err)
		err = xr_clone_rules(fs, src, &sinode, dst, &dinode, &r);
	if (err || r.len == 0)
		return err;
	err = xr_open_reg(xfs, src, &sinode);
	if (!err)
		err = xr_open_reg(xfs, dst, &dinode);
	if (!err)
		err = xr_quota_check_range(xfs, dst, r.doff, r.len);
	if (!err)
		err = xr_file_modified(xfs, dst, &dinode);
	if (!err)
		err = do_clone(xfs, src, &sinode, dst, &r, 1);
	if (!err)
		*done = r.len;
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_clone_range(extref_fs_t xfs, ext2_ino_t src, __u64 soff,
			     ext2_ino_t dst, __u64 doff, __u64 len,
			     __u64 *done)
{
	ext2_ino_t inos[2] = { dst, src };
	errcode_t err;

	xr_damage_clear(xfs);
	err = xr_tx_begin(xfs);
	if (err)
		return err;
	/* the new extent blocks go in place early: a clone bigger than the
	 * journal is still one commit (txn/txn_split.c) */
	err = xr_tx_spill_on(xfs);
	err = xr_tx_end(xfs, err ? err : clone_range_op(xfs, src, soff, dst, doff, len, done));
	return xr_damage_result(xfs, inos, 2, err);
}

/* Compare the two ranges' bytes. */
static errcode_t same_bytes(extref_fs_t xfs, ext2_ino_t src, ext2_ino_t dst,
			    const struct xr_range *r, int *same)
{
	__u64 chunk = 1 << 20, pos, got1, got2;
	char *a = NULL, *b = NULL;
	errcode_t err;

	*same = 1;
	err = ext2fs_get_mem(chunk, &a);
	if (!err)
		err = ext2fs_get_mem(chunk, &b);
	for (pos = 0; !err && *same && pos < r->len; pos += chunk) {
		__u64 n = r->len - pos < chunk ? r->len - pos : chunk;

		err = extref_pread(xfs, src, r->soff + pos, a, n, &got1);
		if (!err)
			err = extref_pread(xfs, dst, r->doff + pos, b, n, &got2);
		if (!err && (got1 != n || got2 != n || memcmp(a, b, n)))
			*same = 0;
	}
	ext2fs_free_mem(&a);
	ext2fs_free_mem(&b);
	return err;
}

static errcode_t dedupe_range_op(extref_fs_t xfs, ext2_ino_t src, __u64 soff,
			      ext2_ino_t dst, __u64 doff, __u64 len,
			      __u64 *done, int *differs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode sinode, dinode;
	struct xr_range r = { soff, doff, len, 0 };
	int same;
	errcode_t err;

	*done = 0;
	*differs = 0;
	err = xr_read_inode(fs, src, &sinode);
	if (!err)
		err = xr_read_inode(fs, dst, &dinode);
	/* the kernel's order: the source opened for reading, its range,
	 * then may_dedupe_file on the destination, then the rest */
	if (!err)
		err = xr_perm_check_read(xfs, src, &sinode);
	if (!err)
		err = xr_dedupe_src_rules(&sinode, &r);
	if (!err)
		err = xr_perm_check_write(xfs, dst, &dinode, XR_CHANGE_DEDUPE,
					  0);
	if (!err)
		err = xr_dedupe_rules(fs, src, &sinode, dst, &dinode, &r);
	if (err || r.len == 0) {
		*done = r.reported;
		return err;
	}
	err = xr_open_reg(xfs, src, &sinode);
	if (!err)
		err = xr_open_reg(xfs, dst, &dinode);
	if (!err)
		err = same_bytes(xfs, src, dst, &r, &same);
	if (err)
		return err;
	if (!same) {
		*differs = 1;
		return 0;
	}
	err = do_clone(xfs, src, &sinode, dst, &r, 0);
	if (!err)
		*done = r.reported;
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_dedupe_range(extref_fs_t xfs, ext2_ino_t src, __u64 soff,
			      ext2_ino_t dst, __u64 doff, __u64 len,
			      __u64 *done, int *differs)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, dedupe_range_op(xfs, src, soff, dst, doff, len, done, differs));
}
