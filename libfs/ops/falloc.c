/*
 * falloc.c --- extref_fallocate: fallocate(2)'s modes on ext4, copy-on-
 * write.
 *
 *   0, KEEP_SIZE: every hole of the range gets new blocks, mapped
 *     unwritten (they read as zeros); mapped blocks, shared or not, are
 *     left as they are.  The size grows to the range's end unless
 *     KEEP_SIZE.
 *   ZERO_RANGE: the range reads as zeros.  Whole blocks become
 *     unwritten: a block the file owns alone in place (nothing is
 *     written into it), a hole or a shared block by a new block (the
 *     shared one loses this mapping, its data untouched); partial end
 *     blocks are written with zeros copy-on-write (rw.c).
 *   PUNCH_HOLE (with KEEP_SIZE): extref_punch; UNSHARE_RANGE:
 *     extref_unshare.
 *
 * Every new block is allocated, and the room for the extent tree and the
 * reference-count tree found, before anything changes: ENOSPC leaves the
 * file as it was.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/* The longest unwritten extent ext4 keeps (EXT_UNINIT_MAX_LEN). */
#define UNINIT_MAX	32767U

#define ALL_MODES	(EXTREF_FALLOC_KEEP_SIZE | EXTREF_FALLOC_PUNCH_HOLE | \
			 EXTREF_FALLOC_ZERO_RANGE | EXTREF_FALLOC_UNSHARE_RANGE)

/* What a whole block of the range becomes. */
#define B_KEEP		0	/* left as it is */
#define B_CONVERT	1	/* the file's own written block: unwritten */
#define B_NEW		2	/* a new unwritten block */

struct falloc {
	extref_fs_t		xfs;
	ext2_filsys		fs;
	ext2_ino_t		ino;
	struct ext2_inode	*inode;
	blk64_t			b0, n;		/* the whole blocks */
	unsigned char		*kind;		/* B_* of each */
	blk64_t			*pblk;		/* the block it maps after */
	struct xr_map_vec	dropped;	/* shared blocks let go */
	blk64_t			nnew;
};

/* vfs_fallocate's refusals of a length and a mode, in its order. */
static errcode_t mode_rules(int mode, __u64 len)
{
	if (len == 0)
		return EXTREF_ERR_ZERO_LEN;
	if (mode & ~ALL_MODES)
		return EXTREF_ERR_FALLOC_MODE;
	if ((mode & EXTREF_FALLOC_PUNCH_HOLE) &&
	    (mode & EXTREF_FALLOC_ZERO_RANGE))
		return EXTREF_ERR_FALLOC_MODE;
	if ((mode & EXTREF_FALLOC_PUNCH_HOLE) &&
	    !(mode & EXTREF_FALLOC_KEEP_SIZE))
		return EXTREF_ERR_FALLOC_MODE;
	if ((mode & EXTREF_FALLOC_UNSHARE_RANGE) &&
	    (mode & ~(EXTREF_FALLOC_UNSHARE_RANGE | EXTREF_FALLOC_KEEP_SIZE)))
		return EXTREF_ERR_BAD_FLAGS;
	return 0;
}

/* Each whole block's kind, from the mappings and their counts. */
static errcode_t plan(struct falloc *f, int zero)
{
	struct xr_map_vec maps = { 0 };
	blk64_t i, k;
	__u32 count;
	errcode_t err;

	for (i = 0; i < f->n; i++)
		f->kind[i] = B_NEW;
	err = xr_get_mappings(f->fs, f->ino, f->inode, f->b0, f->b0 + f->n,
			      &maps);
	for (i = 0; !err && i < maps.n; i++) {
		const struct xr_map *m = &maps.v[i];

		for (k = 0; !err && k < m->len; k++) {
			blk64_t j = m->lblk + k - f->b0;

			f->pblk[j] = m->pblk + k;
			f->kind[j] = B_KEEP;
			if (!zero || m->uninit)
				continue;
			err = extref_tree_get_count(extref_fs_tree(f->xfs),
						    m->pblk + k, &count);
			f->kind[j] = count >= 2 ? B_NEW : B_CONVERT;
			if (!err && count >= 2)
				err = xr_map_push(&f->dropped, &(struct xr_map){
					m->lblk + k, m->pblk + k, 1, 0 });
		}
	}
	xr_map_vec_free(&maps);
	for (i = 0; i < f->n; i++)
		f->nnew += f->kind[i] == B_NEW;
	return err;
}

static void undo_alloc(struct falloc *f, blk64_t upto)
{
	blk64_t i;

	for (i = 0; i < upto; i++)
		if (f->kind[i] == B_NEW && f->pblk[i])
			ext2fs_block_alloc_stats2(f->fs, f->pblk[i], -1);
}

/* Every new block, before anything changes (ENOSPC: nothing did). */
static errcode_t allocate(struct falloc *f)
{
	blk64_t i, goal = 0;
	errcode_t err = 0;

	if (f->nnew + XR_EXTENT_SLACK > ext2fs_free_blocks_count(f->fs->super))
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	err = xr_tree_room(f->xfs, &f->dropped, 0);
	for (i = 0; !err && i < f->n; i++) {
		if (f->kind[i] != B_NEW)
			continue;
		if (!goal)
			goal = ext2fs_find_inode_goal(f->fs, f->ino, f->inode,
						      f->b0 + i);
		f->pblk[i] = 0;
		err = ext2fs_new_block2(f->fs, goal, NULL, &f->pblk[i]);
		if (err)
			break;
		ext2fs_block_alloc_stats2(f->fs, f->pblk[i], +1);
		goal = f->pblk[i] + 1;
	}
	if (err)
		undo_alloc(f, i);
	return err;
}

/*
 * Map each run of changed blocks unwritten.  The blocks a run took the
 * place of are released only for new blocks (a shared block loses a
 * mapping); a converted block is mapped again itself.
 */
static errcode_t remap(struct falloc *f)
{
	struct xr_prange_vec removed = { 0 };
	blk64_t i = 0, j;
	errcode_t err = 0;

	while (!err && i < f->n) {
		unsigned char k = f->kind[i];

		if (k == B_KEEP) {
			i++;
			continue;
		}
		for (j = i + 1; j < f->n && j - i < UNINIT_MAX &&
		     f->kind[j] == k && f->pblk[j] == f->pblk[j - 1] + 1; j++)
			;
		{
			struct xr_map m = { f->b0 + i, f->pblk[i], j - i, 1 };

			removed.n = 0;
			err = xr_replace_range(f->fs, f->ino, f->inode,
					       f->b0 + i, f->b0 + j, &m, 1,
					       &removed);
		}
		if (!err && k == B_NEW)
			err = xr_release_ranges(f->xfs, &removed);
		i = j;
	}
	xr_prange_vec_free(&removed);
	return err;
}

/* The whole blocks [b0, b0 + n) made unwritten (zero) or filled. */
static errcode_t whole_blocks(extref_fs_t xfs, ext2_ino_t ino,
			      struct ext2_inode *inode, blk64_t b0,
			      blk64_t n, int zero)
{
	struct falloc f = { xfs, extref_fs_ext2(xfs), ino, inode, b0, n,
			    NULL, NULL, { 0 }, 0 };
	errcode_t err;

	if (n == 0)
		return 0;
	err = ext2fs_get_memzero(n, &f.kind);
	if (!err)
		err = ext2fs_get_array(n, sizeof(*f.pblk), &f.pblk);
	if (!err) {
		memset(f.pblk, 0, n * sizeof(*f.pblk));
		err = plan(&f, zero);
	}
	if (!err)
		err = allocate(&f);
	if (!err) {
		err = remap(&f);
		if (err)
			undo_alloc(&f, f.n);
	}
	xr_map_vec_free(&f.dropped);
	ext2fs_free_mem(&f.kind);
	ext2fs_free_mem(&f.pblk);
	return err;
}

/* ZERO_RANGE of [off, end): partial end blocks zeroed, inside the file's
 * size when it is kept (a block past EOF reads as zeros already). */
static errcode_t zero_range(extref_fs_t xfs, ext2_ino_t ino,
			    struct ext2_inode *inode, __u64 off, __u64 end,
			    int keep)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	__u64 bs = fs->blocksize, size = EXT2_I_SIZE(inode);
	__u64 ls = (off + bs - 1) / bs, le = end / bs, e;
	errcode_t err = 0;

	if (ls > le) {		/* inside one block */
		e = keep && end > size ? size : end;
		return off < e ? xr_zero_partial(xfs, ino, inode, off, e - off)
			       : 0;
	}
	err = whole_blocks(xfs, ino, inode, ls, le - ls, 1);
	e = ls * bs;
	if (keep && e > size)
		e = size;
	if (!err && off % bs && off < e)
		err = xr_zero_partial(xfs, ino, inode, off, e - off);
	e = keep && end > size ? size : end;
	if (!err && end % bs && le * bs < e)
		err = xr_zero_partial(xfs, ino, inode, le * bs, e - le * bs);
	return err;
}

static errcode_t falloc_op(extref_fs_t xfs, ext2_ino_t ino, int mode,
			   __u64 off, __u64 len)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode inode;
	int keep = mode & EXTREF_FALLOC_KEEP_SIZE;
	__u64 bs = fs->blocksize, end = off + len;
	errcode_t err;

	err = xr_check_reg(xfs, ino, &inode);
	/* append-only allows only the modes that change no byte */
	if (!err)
		err = xr_perm_check_write(xfs, ino, &inode,
					  mode & ~EXTREF_FALLOC_KEEP_SIZE ?
					  XR_CHANGE_DATA : XR_CHANGE_WRITE,
					  EXT2_I_SIZE(&inode));
	if (!err)
		err = xr_falloc_rules(fs, off, len);
	if (!err)
		err = xr_open_reg(xfs, ino, &inode);
	if (!err)
		err = xr_quota_check_range(xfs, ino, off, len);
	if (!err)
		err = xr_file_modified(xfs, ino, &inode);
	if (err)
		return err;
	if (mode & EXTREF_FALLOC_ZERO_RANGE)
		err = zero_range(xfs, ino, &inode, off, end, keep);
	else
		err = whole_blocks(xfs, ino, &inode, off / bs,
				   xr_size_blocks(fs, end) - off / bs, 0);
	if (!err && !keep && end > EXT2_I_SIZE(&inode))
		err = ext2fs_inode_size_set(fs, &inode, end);
	if (!err)
		err = xr_write_inode_times(fs, ino, &inode, XR_TIME_MTIME);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_fallocate(extref_fs_t xfs, ext2_ino_t ino, int mode,
			   __u64 off, __u64 len)
{
	errcode_t err = mode_rules(mode, len);

	if (err)
		return err;
	if (mode & EXTREF_FALLOC_PUNCH_HOLE)
		return extref_punch(xfs, ino, off, len);
	if (mode & EXTREF_FALLOC_UNSHARE_RANGE)
		return extref_unshare(xfs, ino, off, len);
	err = xr_tx_begin(xfs);
	return err ? err : xr_tx_end(xfs, falloc_op(xfs, ino, mode, off, len));
}
