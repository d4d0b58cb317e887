/*
 * populate_data.c --- write this file's data: the one path a regular
 * file's bytes take from the source into the image.
 *
 * Bytes come in at increasing offsets, in pieces of any size and
 * alignment (a host file read in large chunks, an archive's blocks with
 * the gaps of a sparse entry).  They are gathered block by block; a
 * block of zeros is left a hole, as mke2fs -d leaves it; runs of
 * logically consecutive blocks are staged (XR_POP_STAGE_BYTES) and each
 * run is written once, to blocks allocated next to the previous run
 * (ext2fs_new_range), so a file is as few extents as free space allows.
 * An extent grows in memory while runs continue it, and goes into the
 * inode's tree (ext2fs_extent_insert) when the next one cannot.
 */
#include <stdio.h>
#include <string.h>
#include "populate_int.h"

#define MAX_INIT_LEN	32768		/* EXT_INIT_MAX_LEN */
#define MAX_BLOCKS	0xffffffffULL	/* EXT_MAX_BLOCKS: lblk below it */

__u64 xr_pop_max_size(ext2_filsys fs)
{
	unsigned int bits = 10 + fs->super->s_log_block_size;
	__u64 max = MAX_BLOCKS << bits, sectors;

	if (!ext2fs_has_feature_huge_file(fs->super)) {
		sectors = (0xffffffffULL >> (bits - 9)) << bits;
		if (sectors < max)
			max = sectors;
	}
	return max;
}

errcode_t xr_pop_size_check(struct xr_pop *p, __u64 size)
{
	char why[160];
	__u64 max = xr_pop_max_size(p->fs);

	if (size <= max)
		return 0;
	snprintf(why, sizeof(why), "%llu bytes; at most %llu with %u-byte "
		 "blocks", (unsigned long long)size, (unsigned long long)max,
		 p->fs->blocksize);
	xr_pop_fail(p, NULL, why);
	return EXTREF_ERR_FILE_TOO_BIG;
}

errcode_t xr_pop_data_begin(struct xr_pop *p, ext2_ino_t ino,
			    struct ext2_inode_large *in,
			    struct xr_pop_data *d)
{
	memset(d, 0, sizeof(*d));
	d->p = p;
	d->ino = ino;
	d->in = in;
	d->goal = ext2fs_find_inode_goal(p->fs, ino, (struct ext2_inode *)in,
					 0);
	return ext2fs_extent_open2(p->fs, ino, (struct ext2_inode *)in, &d->h);
}

/* The extent grown so far goes into the tree. */
static errcode_t emit(struct xr_pop_data *d)
{
	errcode_t err;

	if (!d->cur.e_len)
		return 0;
	err = ext2fs_extent_insert(d->h, d->inserted ?
				   EXT2_EXTENT_INSERT_AFTER : 0, &d->cur);
	if (!err)
		err = ext2fs_extent_fix_parents(d->h);
	d->inserted = 1;
	d->cur.e_len = 0;
	return err;
}

errcode_t xr_pop_data_map(struct xr_pop_data *d, blk64_t lblk, blk64_t pblk,
			  blk64_t len)
{
	struct ext2fs_extent *c = &d->cur;
	errcode_t err = xr_pop_size_check(d->p, (lblk + len) *
					  (__u64)d->p->fs->blocksize);

	if (err)
		return err;
	ext2fs_iblk_add_blocks(d->p->fs, (struct ext2_inode *)d->in, len);
	if (c->e_len && c->e_lblk + c->e_len == lblk &&
	    c->e_pblk + c->e_len == pblk && c->e_len + len <= MAX_INIT_LEN) {
		c->e_len += (__u32)len;
		return 0;
	}
	err = emit(d);
	c->e_lblk = lblk;
	c->e_pblk = pblk;
	c->e_len = (__u32)len;
	c->e_flags = 0;
	return err;
}

/*
 * Write this file's data: the staged run is allocated (next to the
 * previous run), written once and mapped.  The one place file data
 * reaches the image; with block dedupe, populate_dedupe.c writes it.
 */
static errcode_t write_run(struct xr_pop_data *d)
{
	ext2_filsys fs = d->p->fs;
	const char *src = d->p->stage;
	blk64_t pblk, plen;
	errcode_t err = 0;

	/* regular files only: a slow symlink's block stays its own */
	if (d->p->dd && d->st_n && LINUX_S_ISREG(d->in->i_mode)) {
		err = xr_pop_dd_write(d);
		if (d->p->req->progress)
			d->p->req->progress("copying files",
					    d->p->req->data_bytes, 0,
					    d->p->req->priv);
		return err;
	}

	while (!err && d->st_n) {
		err = ext2fs_new_range(fs, 0, d->goal, d->st_n, NULL, &pblk,
				       &plen);
		if (err)
			break;
		ext2fs_block_alloc_stats_range(fs, pblk, plen, +1);
		err = io_channel_write_blk64(fs->io, pblk, (int)plen, src);
		if (!err)
			err = xr_pop_data_map(d, d->st_lblk, pblk, plen);
		d->goal = pblk + plen;
		d->st_lblk += plen;
		d->st_n -= plen;
		src += plen * fs->blocksize;
		d->p->req->data_bytes += plen * fs->blocksize;
	}
	d->st_n = 0;
	if (d->p->req->progress)
		d->p->req->progress("copying files", d->p->req->data_bytes, 0,
				    d->p->req->priv);
	return err;
}

/* One whole block of the file; zeros stay a hole. */
static errcode_t push_block(struct xr_pop_data *d, blk64_t lblk,
			    const char *src)
{
	unsigned int bs = d->p->fs->blocksize;
	errcode_t err;

	if (!memcmp(src, d->p->zero, bs))
		return 0;
	if (d->p->fdd) {
		d->fsig = xr_pop_fdd_mix(d->fsig, lblk, src, bs);
		d->fblocks++;
	}
	if (d->st_n && (d->st_lblk + d->st_n != lblk ||
			d->st_n * bs >= XR_POP_STAGE_BYTES)) {
		err = write_run(d);
		if (err)
			return err;
	}
	if (!d->st_n)
		d->st_lblk = lblk;
	memcpy(d->p->stage + d->st_n * bs, src, bs);
	d->st_n++;
	return 0;
}

/* The partial block is complete (or the data moved past it). */
static errcode_t close_part(struct xr_pop_data *d)
{
	if (!d->part)
		return 0;
	d->part = 0;
	return push_block(d, d->part_lblk, d->p->blk);
}

errcode_t xr_pop_data_put(struct xr_pop_data *d, __u64 off, const void *buf,
			  size_t len)
{
	unsigned int bs = d->p->fs->blocksize;
	const char *src = buf;
	errcode_t err = 0;

	if (off < d->size)
		return EXT2_ET_INVALID_ARGUMENT;
	if (off + len < off)
		return xr_pop_size_check(d->p, ~0ULL);
	err = xr_pop_size_check(d->p, off + len);
	while (!err && len) {
		blk64_t lblk = off / bs;
		size_t in = off % bs, n = bs - in < len ? bs - in : len;

		if (d->part && d->part_lblk != lblk)
			err = close_part(d);
		if (err)
			break;
		if (!in && n == bs && !d->part) {
			err = push_block(d, lblk, src);
		} else {
			if (!d->part) {
				memset(d->p->blk, 0, bs);
				d->part = 1;
				d->part_lblk = lblk;
			}
			memcpy(d->p->blk + in, src, n);
			if (in + n == bs)
				err = close_part(d);
		}
		off += n;
		src += n;
		len -= n;
	}
	if (off > d->size)
		d->size = off;
	return err;
}

/*
 * Blocks the caller allocated and counts (a source's shared extent):
 * what is staged goes in first, then lblk..+len maps pblk.  The data
 * put afterwards starts past them.
 */
errcode_t xr_pop_data_share(struct xr_pop_data *d, blk64_t lblk,
			    blk64_t pblk, blk64_t len)
{
	errcode_t err = close_part(d);

	if (!err)
		err = write_run(d);
	if (!err && d->cur.e_len && d->cur.e_lblk + d->cur.e_len > lblk)
		err = EXT2_ET_INVALID_ARGUMENT;	/* not in file order */
	if (!err)
		err = xr_pop_data_map(d, lblk, pblk, len);
	return err;
}

errcode_t xr_pop_data_end(struct xr_pop_data *d)
{
	errcode_t err = close_part(d);

	if (!err)
		err = write_run(d);
	if (!err)
		err = emit(d);
	ext2fs_extent_free(d->h);
	d->h = NULL;
	return err;
}

void xr_pop_data_abort(struct xr_pop_data *d)
{
	if (d->h)
		ext2fs_extent_free(d->h);
	d->h = NULL;
}
