/*
 * rw.c --- reading, and writing copy-on-write (xr_cow_range: the write
 * of every operation that changes data; the operations pwrite and
 * unshare are write.c's).
 *
 * A write goes in place only into a block the file owns alone (written,
 * no record).  Every other block it touches (a hole, an unwritten block,
 * a shared block) gets a new block: the new data is written there first,
 * then the mapping is switched, then the old block loses a mapping.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/*
 * The part of mapping m inside [off, off + len) into buf: whole blocks
 * in one read (the holding channel lays held blocks over), a partial
 * block at either end through blk.
 */
static errcode_t read_map(ext2_filsys fs, const struct xr_map *m,
			  __u64 off, char *buf, __u64 len, char *blk)
{
	unsigned int bs = fs->blocksize;
	__u64 s = m->lblk * bs > off ? m->lblk * bs : off;
	__u64 e = (m->lblk + m->len) * bs;
	errcode_t err = 0;

	if (e > off + len)
		e = off + len;
	while (!err && s < e) {
		blk64_t p = m->pblk + (s / bs - m->lblk);
		__u64 in = s % bs, n = (e - s) / bs;

		if (!in && n) {
			if (n > 65536)
				n = 65536;
			err = io_channel_read_blk64(fs->io, p, (int)n,
						    buf + (s - off));
			s += n * bs;
			continue;
		}
		n = bs - in < e - s ? bs - in : e - s;
		err = io_channel_read_blk64(fs->io, p, 1, blk);
		if (!err)
			memcpy(buf + (s - off), blk + in, n);
		s += n;
	}
	return err;
}

/* [off, off + len), inside the size, of a file mapped by extents: each
 * run of blocks read at once, holes and unwritten blocks zero. */
static errcode_t read_extents(ext2_filsys fs, ext2_ino_t ino,
			      struct ext2_inode *inode, __u64 off, char *buf,
			      __u64 len)
{
	unsigned int bs = fs->blocksize;
	struct xr_map_vec maps = { 0 };
	char *blk = NULL;
	size_t i;
	errcode_t err;

	memset(buf, 0, len);
	err = xr_get_mappings(fs, ino, inode, off / bs,
			      (off + len + bs - 1) / bs, &maps);
	if (!err)
		err = ext2fs_get_mem(bs, &blk);
	for (i = 0; !err && i < maps.n; i++)
		if (!maps.v[i].uninit)
			err = read_map(fs, &maps.v[i], off, buf, len, blk);
	ext2fs_free_mem(&blk);
	xr_map_vec_free(&maps);
	return err;
}

/* Through libext2fs's file reads: inline data, block maps. */
static errcode_t read_file(ext2_filsys fs, ext2_ino_t ino, __u64 off,
			   char *p, __u64 len, __u64 *got)
{
	ext2_file_t f;
	unsigned int n;
	errcode_t err = ext2fs_file_open(fs, ino, 0, &f);

	if (err)
		return err;
	err = ext2fs_file_llseek(f, off, EXT2_SEEK_SET, NULL);
	while (!err && len) {
		unsigned int want = len > (1U << 30) ? (1U << 30) : len;

		err = ext2fs_file_read(f, p + *got, want, &n);
		if (err || n == 0)
			break;
		*got += n;
		len -= n;
	}
	ext2fs_file_close(f);
	return err;
}

errcode_t extref_pread(extref_fs_t xfs, ext2_ino_t ino, __u64 off, void *buf,
		       __u64 len, __u64 *got)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode inode;
	__u64 size;
	errcode_t err;

	*got = 0;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (!(inode.i_flags & EXT4_EXTENTS_FL) ||
	    (inode.i_flags & EXT4_INLINE_DATA_FL) ||
	    !LINUX_S_ISREG(inode.i_mode))
		return read_file(fs, ino, off, buf, len, got);
	size = EXT2_I_SIZE(&inode);
	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	err = read_extents(fs, ino, &inode, off, buf, len);
	if (!err)
		*got = len;
	return err;
}

/* What one block of the range needs. */
struct blk_plan {
	blk64_t		old;		/* mapped block, 0 for a hole */
	int		written;	/* old holds data (not unwritten) */
	blk64_t		new;		/* block to write, 0: keep as is */
};

struct cow {
	extref_fs_t		xfs;
	ext2_filsys		fs;
	ext2_ino_t		ino;
	struct ext2_inode	*inode;
	__u64			off, len;
	const char		*buf;
	int			mode;
	blk64_t			b0, nblk;
	struct blk_plan		*plan;
	char			*block;
};

static errcode_t plan_mapped(struct cow *c)
{
	struct xr_map_vec maps = { 0 };
	size_t i;
	blk64_t k;
	errcode_t err;

	err = xr_get_mappings(c->fs, c->ino, c->inode, c->b0,
			      c->b0 + c->nblk, &maps);
	for (i = 0; !err && i < maps.n; i++)
		for (k = 0; k < maps.v[i].len; k++) {
			struct blk_plan *p = &c->plan[maps.v[i].lblk + k - c->b0];

			p->old = maps.v[i].pblk + k;
			p->written = !maps.v[i].uninit;
		}
	xr_map_vec_free(&maps);
	return err;
}

static int needs_new_block(struct cow *c, const struct blk_plan *p,
			   __u32 count)
{
	if (c->mode == XR_COW_UNSHARE)
		return p->old && count >= 2;
	return !p->old || !p->written || count >= 2;
}

static void undo_alloc(struct cow *c, blk64_t upto)
{
	blk64_t i;

	for (i = 0; i < upto; i++)
		if (c->plan[i].new)
			ext2fs_block_alloc_stats2(c->fs, c->plan[i].new, -1);
}

/* Decide, and allocate every new block before anything is written. */
static errcode_t plan_blocks(struct cow *c)
{
	extref_tree_t t = extref_fs_tree(c->xfs);
	blk64_t i, goal = 0;
	__u32 count;
	errcode_t err;

	err = plan_mapped(c);
	for (i = 0; !err && i < c->nblk; i++) {
		struct blk_plan *p = &c->plan[i];

		count = 0;
		if (p->old)
			err = extref_tree_get_count(t, p->old, &count);
		if (err || !needs_new_block(c, p, count))
			continue;
		if (!goal)
			goal = p->old ? p->old :
				ext2fs_find_inode_goal(c->fs, c->ino, c->inode,
						       c->b0 + i);
		err = ext2fs_new_block2(c->fs, goal, NULL, &p->new);
		if (err)
			break;
		ext2fs_block_alloc_stats2(c->fs, p->new, +1);
		goal = p->new + 1;
	}
	/*
	 * Keep room for the extent tree to split while the new blocks are
	 * mapped, so that ENOSPC comes now, with the file unchanged.
	 */
	if (!err && ext2fs_free_blocks_count(c->fs->super) <
	    (blk64_t)XR_EXTENT_SLACK)
		err = EXT2_ET_BLOCK_ALLOC_FAIL;
	if (err)
		undo_alloc(c, i);
	return err;
}

/* Build block i's new contents in c->block and write them. */
static errcode_t write_block(struct cow *c, blk64_t i)
{
	struct blk_plan *p = &c->plan[i];
	unsigned int bs = c->fs->blocksize;
	__u64 bstart = (c->b0 + i) * bs, s, e;
	blk64_t target = p->new ? p->new : p->old;
	errcode_t err = 0;

	if (!p->new && c->mode == XR_COW_UNSHARE)
		return 0;
	s = c->off > bstart ? c->off : bstart;
	e = c->off + c->len < bstart + bs ? c->off + c->len : bstart + bs;
	if (c->mode == XR_COW_UNSHARE || s > bstart || e < bstart + bs) {
		if (p->old && p->written)
			err = io_channel_read_blk64(c->fs->io, p->old, 1,
						    c->block);
		else
			memset(c->block, 0, bs);
	}
	if (!err && c->mode == XR_COW_WRITE)
		memcpy(c->block + (s - bstart), c->buf + (s - c->off), e - s);
	if (err)
		return err;
	/* a new block is data no path reaches yet: straight to the image;
	 * an unshared block rewritten in place goes with the transaction */
	return p->new ? xr_tx_write_data(c->fs, target, 1, c->block)
		      : io_channel_write_blk64(c->fs->io, target, 1, c->block);
}

/*
 * How many blocks from i are new, follow each other on disk and are
 * written whole (a write's middle): they go to the image in one call,
 * straight from the caller's buffer.
 */
static blk64_t whole_run(const struct cow *c, blk64_t i)
{
	unsigned int bs = c->fs->blocksize;
	blk64_t j;

	for (j = i; j < c->nblk && j - i < 4096; j++) {
		const struct blk_plan *p = &c->plan[j];
		__u64 bstart = (c->b0 + j) * bs;

		if (c->mode != XR_COW_WRITE || !p->new || bstart < c->off ||
		    bstart + bs > c->off + c->len ||
		    (j > i && p->new != c->plan[j - 1].new + 1))
			break;
	}
	return j - i;
}

/* Every block's new contents written: whole runs at once, others one by
 * one (write_block). */
static errcode_t write_blocks(struct cow *c)
{
	blk64_t i, n;
	errcode_t err = 0;

	for (i = 0; !err && i < c->nblk; i += n) {
		n = whole_run(c, i);
		if (n)
			err = xr_tx_write_data(c->fs, c->plan[i].new, (int)n,
				(const char *)c->buf +
				((c->b0 + i) * c->fs->blocksize - c->off));
		else {
			err = write_block(c, i);
			n = 1;
		}
	}
	return err;
}

/* Switch each run of new blocks into the file; collect the old ones. */
static errcode_t remap(struct cow *c, struct xr_prange_vec *removed)
{
	blk64_t i = 0, j;
	errcode_t err = 0;

	while (!err && i < c->nblk) {
		if (!c->plan[i].new) {
			i++;
			continue;
		}
		for (j = i + 1; j < c->nblk && c->plan[j].new &&
		     c->plan[j].new == c->plan[j - 1].new + 1; j++)
			;
		{
			struct xr_map m = { c->b0 + i, c->plan[i].new, j - i, 0 };

			err = xr_replace_range(c->fs, c->ino, c->inode,
					       c->b0 + i, c->b0 + j, &m, 1,
					       removed);
		}
		i = j;
	}
	return err;
}

errcode_t xr_cow_range(extref_fs_t xfs, ext2_ino_t ino,
		       struct ext2_inode *inode, __u64 off, const void *buf,
		       __u64 len, int mode)
{
	struct cow c = { xfs, extref_fs_ext2(xfs), ino, inode, off, len,
			 buf, mode, 0, 0, NULL, NULL };
	struct xr_prange_vec removed = { 0 };
	errcode_t err;

	if (len == 0)
		return 0;
	c.b0 = off / c.fs->blocksize;
	c.nblk = xr_size_blocks(c.fs, off + len) - c.b0;
	err = ext2fs_get_array(c.nblk, sizeof(*c.plan), &c.plan);
	if (!err)
		err = ext2fs_get_mem(c.fs->blocksize, &c.block);
	if (err)
		goto out;
	memset(c.plan, 0, c.nblk * sizeof(*c.plan));
	err = plan_blocks(&c);
	if (err)
		goto out;
	err = write_blocks(&c);
	/* The new data is on disk before any mapping points at it. */
	if (!err)
		err = io_channel_flush(c.fs->io);
	if (!err)
		err = remap(&c, &removed);
	if (err) {
		undo_alloc(&c, c.nblk);
		goto out;
	}
	if (mode == XR_COW_WRITE && off + len > EXT2_I_SIZE(inode))
		err = ext2fs_inode_size_set(c.fs, inode, off + len);
	if (!err)
		err = xr_write_inode_times(c.fs, ino, inode,
					   mode == XR_COW_WRITE ? XR_TIME_MTIME
								: XR_TIME_CTIME);
	if (!err)
		err = xr_release_ranges(xfs, &removed);
out:
	xr_prange_vec_free(&removed);
	ext2fs_free_mem(&c.plan);
	ext2fs_free_mem(&c.block);
	return err;
}

/*
 * Zero [off, off+len) inside one block, if that block holds data: copy-on-
 * write, as every data change (truncate, punch, fallocate ZERO_RANGE).
 */
errcode_t xr_zero_partial(extref_fs_t xfs, ext2_ino_t ino,
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
