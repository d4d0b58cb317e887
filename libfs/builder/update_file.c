/*
 * update_file.c --- one regular file of the source into the image,
 * written only where the image does not already hold its data.
 *
 * The source file is read once to hash the whole file (from the hashes
 * of its blocks, zeros past EOF in the last one), and again as it is
 * put.  Then, in this order:
 *   1. the image's own file at that name holds the same bytes (compared)
 *      and may be kept: it is kept (the caller sets its metadata again);
 *   2. a file of the image with the same hash and size holds the same
 *      bytes: the new file is a reflink of it (extref_clone_range);
 *   3. block by block: a block of zeros stays a hole; a whole block
 *      equal (compared) to one the image holds is cloned from there,
 *      the block after the last one cloned tried first so that runs
 *      stay runs; so is a last, partial block equal to another file's
 *      last block of as many bytes (a clone ending at both files' EOF,
 *      as the kernel allows); any other block is written
 *      (extref_pwrite, in runs).
 * The new inode is made unlinked; the caller links it.  The operations
 * used stamp times and drop set-id bits as the kernel does: the caller
 * sets the source's metadata last.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "update_int.h"

/* Candidates compared for one block before it is written instead. */
#define MAX_TRIES	4

struct run {
	ext2_ino_t	sino;		/* clone: from */
	blk64_t		slblk;
	blk64_t		lblk;		/* the new file's first block */
	blk64_t		n;		/* 0: none */
};

struct ufile {
	struct xr_upd	*up;
	ext2_ino_t	ino;		/* the new file */
	__u64		size;
	size_t		nb;
	struct run	clone, wr;	/* wr's bytes are in up->b */
	__u64		*wh;		/* wr's block hashes */
	__u64		h;		/* the hash of the block being put */
	char		*cmp;		/* one block */
};

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

/* len bytes of fd at off; zeros past EOF (the file may have shrunk). */
static errcode_t read_src(int fd, __u64 off, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t r;

	while (got < len) {
		r = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (r < 0)
			return errno_code();
		if (!r)
			break;
		got += (size_t)r;
	}
	memset(buf + got, 0, len - got);
	return 0;
}

/* The source's file hash (its block hashes are not kept: a file of any
 * size is read in XR_POP_STAGE_BYTES at a time). */
static errcode_t hash_source(struct xr_upd *up, int fd, __u64 size,
			     __u64 *fh)
{
	unsigned int bs = up->fs->blocksize;
	size_t nb = xr_size_blocks(up->fs, size), i = 0, k, n;
	struct xr_upd_fh h;
	errcode_t err = 0;

	xr_upd_fh_start(&h);
	while (!err && i < nb) {
		n = nb - i < XR_POP_STAGE_BYTES / bs ? nb - i :
			XR_POP_STAGE_BYTES / bs;
		err = read_src(fd, (__u64)i * bs, up->a, n * bs);
		if (!err && (i + n) * (__u64)bs > size)	/* the tail */
			memset(up->a + (size - (__u64)i * bs), 0,
			       (i + n) * (__u64)bs - size);
		for (k = 0; !err && k < n; k++)
			xr_upd_fh_add(&h, xr_upd_hash(up->a + k * bs, bs));
		i += n;
	}
	*fh = err ? 0 : xr_upd_fh_end(&h, size);
	return err;
}

errcode_t xr_upd_same_data(struct xr_upd *up, int fd, __u64 size,
			   ext2_ino_t ino, int *same)
{
	struct ext2_inode inode;
	__u64 off = 0, got;
	size_t n;
	errcode_t err = 0;

	*same = 0;
	if (ext2fs_read_inode(up->fs, ino, &inode) ||
	    !LINUX_S_ISREG(inode.i_mode) || !inode.i_links_count ||
	    inode.i_dtime || EXT2_I_SIZE(&inode) != size)
		return 0;
	while (!err && off < size) {
		n = size - off < XR_POP_STAGE_BYTES ? (size_t)(size - off) :
			XR_POP_STAGE_BYTES;
		err = read_src(fd, off, up->a, n);
		if (err)
			return err;
		/* a file the image cannot read is no candidate */
		if (extref_pread(up->xfs, ino, off, up->b, n, &got) ||
		    got != n || memcmp(up->a, up->b, n))
			return 0;
		off += n;
	}
	*same = 1;
	return 0;
}

/* An empty regular file with m's metadata, in no directory yet. */
static errcode_t new_file(struct xr_upd *up, ext2_ino_t dir,
			  const struct xr_pop_meta *m, ext2_ino_t *ino)
{
	struct xr_pop_data d;
	errcode_t err = xr_pop_file_begin(&up->p, m, dir, &d);

	if (err)
		return err;
	*ino = d.ino;
	return xr_pop_file_end(&d, dir, NULL);
}

static errcode_t flush_clone(struct ufile *f)
{
	unsigned int bs = f->up->fs->blocksize;
	struct run *c = &f->clone;
	__u64 done, len;
	errcode_t err;

	if (!c->n)
		return 0;
	len = c->n * (__u64)bs;
	if (c->lblk * (__u64)bs + len > f->size)	/* ends with the tail */
		len = f->size - c->lblk * (__u64)bs;
	err = extref_clone_range(f->up->xfs, c->sino, c->slblk * bs, f->ino,
				 c->lblk * bs, len, &done);
	if (!err)
		f->up->u->blocks_shared += c->n;
	c->n = 0;
	return err;
}

static errcode_t flush_write(struct ufile *f)
{
	unsigned int bs = f->up->fs->blocksize;
	struct run *w = &f->wr;
	__u64 off = w->lblk * bs, len = w->n * bs;
	blk64_t k;
	errcode_t err;

	if (!w->n)
		return 0;
	if (off + len > f->size)
		len = f->size - off;
	err = extref_pwrite(f->up->xfs, f->ino, off, f->up->b, len);
	/* written blocks: later files may share them (a tail by its key) */
	for (k = 0; !err && k < w->n; k++)
		err = xr_upd_add_blk(&f->up->ix,
				     (w->lblk + k + 1) * (__u64)bs <= f->size ?
				     f->wh[k] : xr_upd_tail_key(f->wh[k],
				     (unsigned int)(f->size - (w->lblk + k) *
						    (__u64)bs)),
				     f->ino, (__u32)(w->lblk + k));
	if (!err)
		f->up->u->blocks_written += w->n;
	w->n = 0;
	return err;
}

/* Does block lblk of ino hold blk's first len bytes, and as many (a
 * tail: the file ends there)? */
static int confirm(struct ufile *f, ext2_ino_t ino, __u32 lblk,
		   const char *blk, unsigned int len)
{
	unsigned int bs = f->up->fs->blocksize;
	__u64 got;

	return !extref_pread(f->up->xfs, ino, (__u64)lblk * bs, f->cmp, bs,
			     &got) && got == len && !memcmp(f->cmp, blk, len);
}

/* An image block equal to blk (block i of the source: its first len
 * bytes, zeros after), found under key h, or NULL.  len is the block
 * size, or a tail's: the image's block must then be a last block of as
 * many bytes (its read ends there). */
static const struct xr_upd_blk *find_block(struct ufile *f, blk64_t i,
					   const char *blk, __u64 h,
					   unsigned int len)
{
	const struct xr_upd_index *ix = &f->up->ix;
	const struct xr_upd_blk *e;
	struct run *c = &f->clone;
	size_t pos = 0;
	int tries = 0;

	if (c->n && c->lblk + c->n == i) {	/* the run goes on? */
		while ((e = xr_upd_blk_next(ix, h, &pos)))
			if (e->ino == c->sino && e->lblk == c->slblk + c->n)
				break;
		if (e && confirm(f, e->ino, e->lblk, blk, len))
			return e;
		pos = 0;
	}
	while ((e = xr_upd_blk_next(ix, h, &pos)) && tries++ < MAX_TRIES)
		if (confirm(f, e->ino, e->lblk, blk, len))  /* own: written */
			return e;
	return NULL;
}

/* Does the write run, not yet written, hold blk's bytes? */
static int in_write_run(struct ufile *f, const char *blk)
{
	unsigned int bs = f->up->fs->blocksize;
	blk64_t k;

	for (k = 0; k < f->wr.n; k++)
		if (f->wh[k] == f->h && (f->wr.lblk + k + 1) * (__u64)bs <=
		    f->size && !memcmp(f->up->b + k * bs, blk, bs))
			return 1;
	return 0;
}

/* A block of zeros: the runs before it end. */
static errcode_t hole(struct ufile *f)
{
	errcode_t err = flush_clone(f);

	return err ? err : flush_write(f);
}

static errcode_t put_block(struct ufile *f, blk64_t i, const char *blk)
{
	unsigned int bs = f->up->fs->blocksize;
	const struct xr_upd_blk *e = NULL;
	struct run *c = &f->clone, *w = &f->wr;
	int whole = (i + 1) * (__u64)bs <= f->size;
	unsigned int tail = whole ? bs : (unsigned int)(f->size - i * bs);
	errcode_t err = 0;

	f->h = xr_upd_hash(blk, bs);
	if (f->h == f->up->ix.zero_hash && !memcmp(blk, f->up->p.zero, bs))
		return hole(f);
	if (whole)
		e = find_block(f, i, blk, f->h, bs);
	else			/* the tail */
		e = find_block(f, i, blk, xr_upd_tail_key(f->h, tail),
			       tail);
	if (whole && !e && in_write_run(f, blk)) {	/* once written: shared */
		err = flush_write(f);
		if (err)
			return err;
		e = find_block(f, i, blk, f->h, bs);
	}
	if (e) {
		err = flush_write(f);
		if (!err && c->n && (c->sino != e->ino ||
				     c->slblk + c->n != e->lblk ||
				     c->lblk + c->n != i))
			err = flush_clone(f);
		if (!err && !c->n) {
			c->sino = e->ino;
			c->slblk = e->lblk;
			c->lblk = i;
		}
		c->n++;
		return err;
	}
	err = flush_clone(f);
	if (!err && w->n && (w->lblk + w->n != i ||
			     (w->n + 1) * bs > XR_POP_STAGE_BYTES))
		err = flush_write(f);
	if (err)
		return err;
	if (!w->n)
		w->lblk = i;
	memcpy(f->up->b + w->n * bs, blk, bs);
	f->wh[w->n++] = f->h;
	return 0;
}

static errcode_t put_blocks(struct ufile *f, int fd)
{
	struct xr_upd *up = f->up;
	unsigned int bs = up->fs->blocksize;
	size_t per = XR_POP_STAGE_BYTES / bs, i = 0, k, n;
	errcode_t err = 0;

	while (!err && i < f->nb) {
		n = f->nb - i < per ? f->nb - i : per;
		err = read_src(fd, (__u64)i * bs, up->a, n * bs);
		if (!err && (i + n) * (__u64)bs > f->size)
			memset(up->a + (f->size - (__u64)i * bs), 0,
			       (i + n) * (__u64)bs - f->size);
		for (k = 0; !err && k < n; k++)
			err = put_block(f, i + k, up->a + k * bs);
		up->done += (i + n) * (__u64)bs > f->size ?
			f->size - (__u64)i * bs : (__u64)n * bs;
		i += n;
		if (up->u->progress)
			up->u->progress("updating", up->done, 0, up->u->priv);
	}
	if (!err)
		err = flush_clone(f);
	if (!err)
		err = flush_write(f);
	return err;
}

/* The new file f->ino gets the source's data, shared where it can. */
static errcode_t fill_file(struct xr_upd *up, int fd, __u64 fh,
			   struct ufile *f)
{
	const struct xr_upd_file *e;
	struct ext2_inode inode;
	size_t pos = 0;
	__u64 done;
	int same;
	errcode_t err = 0;

	while (f->size && (e = xr_upd_file_next(&up->ix, fh, &pos))) {
		if (e->size != f->size)
			continue;
		err = xr_upd_same_data(up, fd, f->size, e->ino, &same);
		if (err)
			return err;
		if (!same)
			continue;
		err = extref_clone_range(up->xfs, e->ino, 0, f->ino, 0, 0,
					 &done);
		if (!err) {
			up->u->files_linked++;
			up->u->blocks_shared += f->nb;
			up->done += f->size;
		}
		return err;
	}
	err = put_blocks(f, fd);
	if (!err)
		err = ext2fs_read_inode(up->fs, f->ino, &inode);
	if (!err && EXT2_I_SIZE(&inode) < f->size)	/* ends in a hole */
		err = extref_truncate(up->xfs, f->ino, f->size);
	if (!err)
		err = xr_upd_add_file(&up->ix, fh, f->size, f->ino);
	return err;
}

errcode_t xr_upd_file(struct xr_upd *up, int fd, ext2_ino_t dir,
		      const struct xr_pop_meta *m, __u64 size,
		      ext2_ino_t keep, ext2_ino_t *ino)
{
	struct ufile f;
	__u64 fh;
	int same = 0;
	errcode_t err = xr_pop_size_check(&up->p, size);

	if (!err)
		err = hash_source(up, fd, size, &fh);
	if (!err && keep)
		err = xr_upd_same_data(up, fd, size, keep, &same);
	if (err)
		return err;
	if (same) {
		*ino = keep;
		up->u->files_kept++;
		up->done += size;
		return 0;
	}
	memset(&f, 0, sizeof(f));
	f.up = up;
	f.size = size;
	f.nb = xr_size_blocks(up->fs, size);
	err = ext2fs_get_mem(up->fs->blocksize, &f.cmp);
	if (!err)
		err = ext2fs_get_array(XR_POP_STAGE_BYTES / up->fs->blocksize,
				       sizeof(*f.wh), &f.wh);
	if (!err)
		err = new_file(up, dir, m, &f.ino);
	if (!err) {
		*ino = f.ino;
		err = fill_file(up, fd, fh, &f);
	}
	ext2fs_free_mem(&f.cmp);
	ext2fs_free_mem(&f.wh);
	return err;
}
