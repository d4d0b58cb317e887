/*
 * range_rules.c --- the kernel's range rules, in the kernel's order.
 *
 * Every entry point that takes a byte range (clone, dedupe, punch,
 * unshare, truncate, pwrite) asks one function here whether the request
 * is legal and what it amounts to, before it changes anything.  The
 * checks are those of fs/remap_range.c (remap_verify_area,
 * generic_remap_checks, generic_remap_check_len,
 * __generic_remap_file_range_prep, vfs_dedupe_file_range) and of
 * vfs_fallocate / do_truncate, made in the order the kernel makes them:
 * the order decides which error a bad request gets.  Errors map to the
 * kernel's errno classes through extref_errno() (errno_class.c).
 *
 * Clone (FICLONERANGE; FICLONE is SOFF 0, DOFF 0, LEN 0):
 *  1. Either file a directory: EISDIR; either not regular: EINVAL.
 *  2. An offset, or offset + length, beyond 2^63 - 1: EINVAL.
 *  3. LEN 0: SOFF at the source's size is success with nothing done,
 *     before any alignment check; past it, EINVAL; otherwise LEN becomes
 *     "to the source's EOF".
 *  4. SOFF or DOFF not block-aligned: EINVAL.
 *  5. SOFF at or past the source's size: EINVAL.
 *  6. DOFF at or past the largest file size: EFBIG.
 *  7. A range ending at the source's EOF covers the partial last block;
 *     any other range is rounded down to whole blocks.  Same file, the
 *     two ranges (in whole blocks) overlapping: EINVAL.
 *  8. The range had to be shortened (past the source's EOF, an unaligned
 *     length not ending at its EOF, past the largest file size): EINVAL,
 *     for a clone is never shortened.
 *  9. An unaligned length (ending at the source's EOF) whose end lies
 *     inside the destination: EINVAL (its last block would carry the
 *     source's bytes past EOF into the middle of the file).
 * The destination grows when the range ends past its size.
 *
 * Dedupe (FIDEDUPERANGE, one destination):
 *  1. Source a directory: EISDIR; not regular: EINVAL.
 *  2. SOFF + LEN beyond 2^63 - 1: EINVAL.
 *  3. SOFF + LEN past the source's size: EINVAL, even for LEN 0.
 *  4. LEN above 1 GiB is cut to 1 GiB; that is the length reported.
 *  5. DOFF + LEN beyond 2^63 - 1: EINVAL (steps 1-5: xr_dedupe_src_rules).
 *     Here the kernel checks may_dedupe_file on the destination (with an
 *     identity: EPERM), then: destination a directory: EISDIR.
 *  6. LEN 0: success, nothing done.
 *  7. Destination not regular: EINVAL; SOFF or DOFF not block-aligned:
 *     EINVAL; either range not inside its file: EINVAL.
 *  8. An unaligned length is kept only when both ranges end at their
 *     files' EOF; otherwise it is rounded down to whole blocks.  Same
 *     file, the ranges overlapping: EINVAL.
 *  9. Nothing left after rounding: success, nothing compared or done.
 * 10. Contents that differ: "differs", not an error.
 * The length reported is that of step 4 even when less was done.
 *
 * fallocate class (punch, unshare): LEN 0, or an offset or length beyond
 * 2^63 - 1: EINVAL; OFF + LEN past the largest file size: EFBIG.  A range
 * past EOF changes no size (FALLOC_FL_KEEP_SIZE).
 * truncate: a size past the largest file size: EFBIG.
 * pwrite: an offset at or past the largest file size, or an end past it:
 * EFBIG (the kernel would write a short count; extref writes all or
 * nothing).
 */
#include "extref_ops_int.h"

#define XR_LOFF_MAX	0x7fffffffffffffffULL	/* loff_t's maximum */
#define XR_DEDUPE_MAX	(1ULL << 30)		/* vfs_dedupe_file_range */

/* ext4_max_size(): the largest file size, in bytes. */
__u64 xr_max_bytes(ext2_filsys fs)
{
	__u64 bits = fs->super->s_log_block_size + EXT2_MIN_BLOCK_LOG_SIZE;
	__u64 max = ((1ULL << 32) - 1) << bits, small;

	if (!ext2fs_has_feature_huge_file(fs->super)) {
		small = (((1ULL << 32) - 1) >> (bits - 9)) << bits;
		if (small < max)
			max = small;
	}
	return max;
}

/* remap_verify_area(): an offset and length as a loff_t pair. */
static int beyond_loff(__u64 off, __u64 len)
{
	return off > XR_LOFF_MAX || len > XR_LOFF_MAX ||
	       off + len > XR_LOFF_MAX;
}

static errcode_t reg_type(__u16 mode)
{
	if (LINUX_S_ISDIR(mode))
		return EXTREF_ERR_IS_DIR;
	return LINUX_S_ISREG(mode) ? 0 : EXTREF_ERR_NOT_REG;
}

static __u64 round_up(__u64 x, __u64 bs)
{
	return (x + bs - 1) / bs * bs;
}

static int overlap(const struct xr_range *r, __u64 blen)
{
	return r->doff + blen > r->soff && r->doff < r->soff + blen;
}

errcode_t xr_clone_rules(ext2_filsys fs, ext2_ino_t src,
			 const struct ext2_inode *si, ext2_ino_t dst,
			 const struct ext2_inode *di, struct xr_range *r)
{
	__u64 bs = fs->blocksize, ssize = EXT2_I_SIZE(si);
	__u64 dsize = EXT2_I_SIZE(di), max = xr_max_bytes(fs);
	__u64 req, count, blen;

	r->reported = 0;
	if (LINUX_S_ISDIR(si->i_mode) || LINUX_S_ISDIR(di->i_mode))
		return EXTREF_ERR_IS_DIR;
	if (reg_type(si->i_mode) || reg_type(di->i_mode))
		return EXTREF_ERR_NOT_REG;
	if (beyond_loff(r->soff, r->len) || beyond_loff(r->doff, r->len))
		return EXTREF_ERR_OFF_RANGE;
	if (r->len == 0) {
		if (r->soff == ssize)
			return 0;
		if (r->soff > ssize)
			return EXTREF_ERR_PAST_EOF;
		r->len = ssize - r->soff;
	}
	if (r->soff % bs || r->doff % bs)
		return EXTREF_ERR_ALIGN;
	if (r->soff >= ssize)
		return EXTREF_ERR_PAST_EOF;
	if (r->doff >= max)
		return EXT2_ET_FILE_TOO_BIG;
	req = r->len;
	count = req < ssize - r->soff ? req : ssize - r->soff;
	if (count > max - r->doff)
		count = max - r->doff;
	if (r->soff + count == ssize) {
		blen = round_up(ssize, bs) - r->soff;
	} else {
		count -= count % bs;
		blen = count;
	}
	if (src == dst && overlap(r, blen))
		return EXTREF_ERR_OVERLAP;
	if (count != req)
		return req > ssize - r->soff ? EXTREF_ERR_PAST_EOF :
		       req % bs ? EXTREF_ERR_ALIGN : EXTREF_ERR_OFF_RANGE;
	if (count % bs && r->doff + count < dsize)
		return EXTREF_ERR_TAIL_INSIDE;
	r->reported = r->len;
	return 0;
}

/*
 * The part of the dedupe rules the kernel applies before it looks at the
 * destination's permission (may_dedupe_file): the source's type, its
 * range against its size, the 1 GiB cap, and both ranges against loff_t.
 */
errcode_t xr_dedupe_src_rules(const struct ext2_inode *si,
			      struct xr_range *r)
{
	errcode_t err = reg_type(si->i_mode);

	r->reported = 0;
	if (err)
		return err;
	if (beyond_loff(r->soff, r->len))
		return EXTREF_ERR_OFF_RANGE;
	if (r->soff + r->len > EXT2_I_SIZE(si))
		return EXTREF_ERR_PAST_EOF;
	if (r->len > XR_DEDUPE_MAX)
		r->len = XR_DEDUPE_MAX;
	if (beyond_loff(r->doff, r->len))
		return EXTREF_ERR_OFF_RANGE;
	return 0;
}

/* The rest, after xr_dedupe_src_rules and the permission check. */
errcode_t xr_dedupe_rules(ext2_filsys fs, ext2_ino_t src,
			  const struct ext2_inode *si, ext2_ino_t dst,
			  const struct ext2_inode *di, struct xr_range *r)
{
	__u64 bs = fs->blocksize, ssize = EXT2_I_SIZE(si);
	__u64 dsize = EXT2_I_SIZE(di), count;
	errcode_t err;

	if (LINUX_S_ISDIR(di->i_mode))
		return EXTREF_ERR_IS_DIR;
	if (r->len == 0)
		return 0;
	err = reg_type(di->i_mode);
	if (err)
		return err;
	if (r->soff % bs || r->doff % bs)
		return EXTREF_ERR_ALIGN;
	if (r->soff >= ssize || r->doff >= dsize ||
	    r->doff + r->len > dsize)
		return EXTREF_ERR_PAST_EOF;
	r->reported = r->len;
	count = r->len;
	if (r->soff + count != ssize || r->doff + count != dsize)
		count -= count % bs;
	if (src == dst && overlap(r, count == r->len ?
				  round_up(count, bs) : count))
		return EXTREF_ERR_OVERLAP;
	r->len = count;
	return 0;
}

errcode_t xr_falloc_rules(ext2_filsys fs, __u64 off, __u64 len)
{
	if (len == 0)
		return EXTREF_ERR_ZERO_LEN;
	if (off > XR_LOFF_MAX || len > XR_LOFF_MAX)
		return EXTREF_ERR_OFF_RANGE;
	if (off + len > XR_LOFF_MAX || off + len > xr_max_bytes(fs))
		return EXT2_ET_FILE_TOO_BIG;
	return 0;
}

errcode_t xr_truncate_rules(ext2_filsys fs, __u64 size)
{
	if (size > XR_LOFF_MAX)
		return EXTREF_ERR_OFF_RANGE;
	return size > xr_max_bytes(fs) ? EXT2_ET_FILE_TOO_BIG : 0;
}

errcode_t xr_write_rules(ext2_filsys fs, __u64 off, __u64 len)
{
	if (beyond_loff(off, len))
		return EXTREF_ERR_OFF_RANGE;
	if (len && off + len > xr_max_bytes(fs))
		return EXT2_ET_FILE_TOO_BIG;
	return 0;
}
