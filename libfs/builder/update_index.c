/*
 * update_index.c --- what data the image already holds, by hash.
 *
 * Every regular file in use is read once: each whole block inside its
 * size that is not all zeros goes into the block table as (hash, inode,
 * logical block), a last block partly inside it under its tail key
 * (xr_upd_tail_key: a new file's tail of as many bytes may share it),
 * and the file into the file table as (hash of its
 * block hashes, size, inode).  A block's hash is the builder's 64-bit
 * block hash (blockhash.c), as --convert's dedupe uses; nothing is shared
 * on a hash alone: update_file.c compares the bytes first.  Files the update
 * writes are added as they are made, so equal data inside the source is
 * shared too.
 */
#include <string.h>
#include "update_int.h"

#define MIN_SLOTS	1024
/* A file of more blocks than this gets no whole-file hash (its blocks
 * are still indexed). */
#define MAX_FILE_BLOCKS	(1ULL << 24)
/* Inodes no operation may touch (extref_check_modifiable): encrypted,
 * verity, casefolded; never a source to clone from. */
#define UNSUPPORTED_FL	(EXT4_ENCRYPT_FL | 0x00100000 | 0x40000000)

#define SEED	0x5eedU

__u64 xr_upd_hash(const void *buf, size_t len)
{
	return xr_block_hash(buf, len);
}

__u64 xr_upd_tail_key(__u64 hash, unsigned int r)
{
	return hash ^ ((__u64)r * 0x9e3779b97f4a7c15ULL) ^ 0x7a11ULL;
}

/* crc32c runs on: the hash of the block hashes, one at a time, is the
 * hash of all of them at once. */
void xr_upd_fh_start(struct xr_upd_fh *fh)
{
	fh->a = SEED;
	fh->b = ~SEED;
}

void xr_upd_fh_add(struct xr_upd_fh *fh, __u64 block_hash)
{
	fh->a = ext2fs_crc32c_le(fh->a, (const void *)&block_hash,
				 sizeof(block_hash));
	fh->b = ext2fs_crc32c_le(fh->b, (const void *)&block_hash,
				 sizeof(block_hash));
}

__u64 xr_upd_fh_end(const struct xr_upd_fh *fh, __u64 size)
{
	return ((__u64)fh->a << 32 | fh->b) ^ (size * 0x9e3779b97f4a7c15ULL);
}

__u64 xr_upd_file_hash(const __u64 *bh, size_t n, __u64 size)
{
	struct xr_upd_fh fh;
	size_t i;

	xr_upd_fh_start(&fh);
	for (i = 0; i < n; i++)
		xr_upd_fh_add(&fh, bh[i]);
	return xr_upd_fh_end(&fh, size);
}

static size_t slot_of(__u64 h, size_t cap)
{
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static errcode_t grow_blk(struct xr_upd_index *ix)
{
	struct xr_upd_blk *old = ix->b, *nv;
	size_t ocap = ix->bcap, cap = ocap ? ocap * 2 : MIN_SLOTS, i, s;
	errcode_t err = ext2fs_get_arrayzero(cap, sizeof(*nv), &nv);

	if (err)
		return err;
	for (i = 0; i < ocap; i++) {
		if (!old[i].ino)
			continue;
		for (s = slot_of(old[i].hash, cap); nv[s].ino;
		     s = (s + 1) & (cap - 1))
			;
		nv[s] = old[i];
	}
	ext2fs_free_mem(&old);
	ix->b = nv;
	ix->bcap = cap;
	return 0;
}

static errcode_t grow_file(struct xr_upd_index *ix)
{
	struct xr_upd_file *old = ix->f, *nv;
	size_t ocap = ix->fcap, cap = ocap ? ocap * 2 : MIN_SLOTS, i, s;
	errcode_t err = ext2fs_get_arrayzero(cap, sizeof(*nv), &nv);

	if (err)
		return err;
	for (i = 0; i < ocap; i++) {
		if (!old[i].ino)
			continue;
		for (s = slot_of(old[i].hash, cap); nv[s].ino;
		     s = (s + 1) & (cap - 1))
			;
		nv[s] = old[i];
	}
	ext2fs_free_mem(&old);
	ix->f = nv;
	ix->fcap = cap;
	return 0;
}

errcode_t xr_upd_add_blk(struct xr_upd_index *ix, __u64 hash,
			 ext2_ino_t ino, __u32 lblk)
{
	size_t s;
	errcode_t err = 0;

	if ((ix->bn + 1) * 2 > ix->bcap)
		err = grow_blk(ix);
	if (err)
		return err;
	for (s = slot_of(hash, ix->bcap); ix->b[s].ino;
	     s = (s + 1) & (ix->bcap - 1))
		;
	ix->b[s].hash = hash;
	ix->b[s].ino = ino;
	ix->b[s].lblk = lblk;
	ix->bn++;
	return 0;
}

errcode_t xr_upd_add_file(struct xr_upd_index *ix, __u64 hash, __u64 size,
			  ext2_ino_t ino)
{
	size_t s;
	errcode_t err = 0;

	if ((ix->fn + 1) * 2 > ix->fcap)
		err = grow_file(ix);
	if (err)
		return err;
	for (s = slot_of(hash, ix->fcap); ix->f[s].ino;
	     s = (s + 1) & (ix->fcap - 1))
		;
	ix->f[s].hash = hash;
	ix->f[s].size = size;
	ix->f[s].ino = ino;
	ix->fn++;
	return 0;
}

errcode_t xr_upd_bh_room(struct xr_upd *up, size_t n)
{
	errcode_t err;

	if (n <= up->bh_cap)
		return 0;
	err = ext2fs_resize_mem(up->bh_cap * sizeof(*up->bh),
				n * sizeof(*up->bh), &up->bh);
	if (!err)
		up->bh_cap = n;
	return err;
}

const struct xr_upd_blk *xr_upd_blk_next(const struct xr_upd_index *ix,
					 __u64 h, size_t *pos)
{
	size_t s;

	if (!ix->bcap)
		return NULL;
	for (s = (slot_of(h, ix->bcap) + *pos) & (ix->bcap - 1);
	     ix->b[s].ino && *pos < ix->bcap; s = (s + 1) & (ix->bcap - 1)) {
		(*pos)++;
		if (ix->b[s].hash == h)
			return &ix->b[s];
	}
	return NULL;
}

const struct xr_upd_file *xr_upd_file_next(const struct xr_upd_index *ix,
					   __u64 h, size_t *pos)
{
	size_t s;

	if (!ix->fcap)
		return NULL;
	for (s = (slot_of(h, ix->fcap) + *pos) & (ix->fcap - 1);
	     ix->f[s].ino && *pos < ix->fcap; s = (s + 1) & (ix->fcap - 1)) {
		(*pos)++;
		if (ix->f[s].hash == h)
			return &ix->f[s];
	}
	return NULL;
}

errcode_t xr_upd_index_init(struct xr_upd *up)
{
	memset(up->a, 0, up->fs->blocksize);
	up->ix.zero_hash = xr_upd_hash(up->a, up->fs->blocksize);
	return 0;
}

void xr_upd_index_free(struct xr_upd_index *ix)
{
	ext2fs_free_mem(&ix->b);
	ext2fs_free_mem(&ix->f);
	memset(ix, 0, sizeof(*ix));
}

/* The blocks of one mapping: hashed, the whole ones indexed. */
static errcode_t hash_map(struct xr_upd *up, ext2_ino_t ino,
			  const struct xr_map *m, __u64 size, size_t nb)
{
	unsigned int bs = up->fs->blocksize;
	blk64_t per = XR_POP_STAGE_BYTES / bs, k, i, n;
	errcode_t err = 0;

	for (k = 0; !err && k < m->len && m->lblk + k < nb; k += n) {
		n = m->len - k < per ? m->len - k : per;
		if (m->lblk + k + n > nb)
			n = nb - (m->lblk + k);
		err = io_channel_read_blk64(up->fs->io, m->pblk + k, (int)n,
					    up->a);
		for (i = 0; !err && i < n; i++) {
			blk64_t l = m->lblk + k + i;
			char *blk = up->a + i * bs;
			__u64 end = (l + 1) * (__u64)bs;

			if (end > size)		/* the tail: zeros past EOF */
				memset(blk + (size - l * bs), 0, end - size);
			up->bh[l] = xr_upd_hash(blk, bs);
			if (up->bh[l] == up->ix.zero_hash)
				continue;
			err = xr_upd_add_blk(&up->ix, end <= size ? up->bh[l] :
					xr_upd_tail_key(up->bh[l],
					(unsigned int)(size - l * bs)),
					ino, (__u32)l);
		}
		up->done += n;
	}
	return err;
}

static errcode_t index_file(struct xr_upd *up, ext2_ino_t ino,
			    struct ext2_inode *inode)
{
	struct xr_map_vec maps = { 0 };
	__u64 size = EXT2_I_SIZE(inode);
	size_t nb = xr_size_blocks(up->fs, size), i;
	errcode_t err;

	if (nb > MAX_FILE_BLOCKS || nb >= (1ULL << 32))
		return 0;
	err = xr_upd_bh_room(up, nb);
	for (i = 0; !err && i < nb; i++)
		up->bh[i] = up->ix.zero_hash;
	if (!err)
		err = xr_get_mappings(up->fs, ino, inode, 0, nb, &maps);
	for (i = 0; !err && i < maps.n; i++)
		if (!maps.v[i].uninit)
			err = hash_map(up, ino, &maps.v[i], size, nb);
	if (!err)
		err = xr_upd_add_file(&up->ix, xr_upd_file_hash(up->bh, nb,
								size),
				      size, ino);
	xr_map_vec_free(&maps);
	if (up->u->progress)
		up->u->progress("reading the image", up->done,
				ext2fs_blocks_count(up->fs->super) -
				ext2fs_free_blocks_count(up->fs->super),
				up->u->priv);
	return err;
}

/* An extent-mapped regular file in use, not one of the reserved. */
static int indexable(ext2_filsys fs, ext2_ino_t ino,
		     const struct ext2_inode *inode)
{
	return ino >= EXT2_FIRST_INO(fs->super) &&
	       LINUX_S_ISREG(inode->i_mode) && inode->i_links_count &&
	       !inode->i_dtime && (inode->i_flags & EXT4_EXTENTS_FL) &&
	       !(inode->i_flags & (EXT4_INLINE_DATA_FL | UNSUPPORTED_FL)) &&
	       ino != fs->super->s_usr_quota_inum &&
	       ino != fs->super->s_grp_quota_inum &&
	       ino != fs->super->s_prj_quota_inum;
}

errcode_t xr_upd_index_image(struct xr_upd *up)
{
	ext2_inode_scan scan = NULL;
	struct ext2_inode inode;
	ext2_ino_t ino;
	errcode_t err = ext2fs_open_inode_scan(up->fs, 0, &scan);

	while (!err) {
		err = ext2fs_get_next_inode(scan, &ino, &inode);
		if (err || !ino)
			break;
		if (indexable(up->fs, ino, &inode))
			err = index_file(up, ino, &inode);
	}
	if (scan)
		ext2fs_close_inode_scan(scan);
	up->done = 0;
	return err;
}
