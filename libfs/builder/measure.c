/*
 * measure.c --- counting what a source's files will take in an image,
 * before it is made (extref_source_measure for a directory,
 * extref_archive_measure2 for an archive): their non-zero blocks, and
 * how many are distinct for the dedupe mode asked (block: a 64-bit hash
 * of each block, counted once; file: the blocks of one file of each
 * signature and size).  Only a size: the build confirms every match
 * byte for byte.  The bytes of a file come in at increasing offsets, in
 * pieces of any size (xr_measure_put), or as whole blocks from the
 * start of a block (xr_measure_blocks).
 */
#include <string.h>
#include "populate_int.h"

/* extents an inode holds, and an extent block */
#define IN_INODE_EXTENTS 4

static errcode_t set_alloc(struct xr_measure *m, size_t slots)
{
	errcode_t err;

#ifdef EXTREF_FAULT_INJECTION
	if (xr_fault_nomem())	/* a growth, as xr_grow's */
		return EXT2_ET_NO_MEMORY;
#endif
	err = ext2fs_get_array(slots, sizeof(*m->set), &m->set);
	if (!err) {
		memset(m->set, 0, slots * sizeof(*m->set));
		m->mask = slots - 1;
	}
	return err;
}

/* h in the set; 1 when it was not there. */
static int set_place(struct xr_measure *m, __u64 h)
{
	size_t j;

	for (j = h & m->mask; m->set[j]; j = (j + 1) & m->mask)
		if (m->set[j] == h)
			return 0;
	m->set[j] = h;
	m->n++;
	return 1;
}

/* Add h (the set doubles at 3/4 full); *added: it was new. */
static errcode_t set_add(struct xr_measure *m, __u64 h, int *added)
{
	__u64 *old = m->set;
	size_t i, oslots = m->mask + 1;
	errcode_t err;

	h |= 1;				/* 0 marks an empty slot */
	if ((m->n + 1) * 4 > oslots * 3) {
		err = set_alloc(m, oslots * 2);
		if (err) {
			m->set = old;
			return err;
		}
		m->n = 0;
		for (i = 0; i < oslots; i++)
			if (old[i])
				set_place(m, old[i]);
		ext2fs_free_mem(&old);
	}
	*added = set_place(m, h);
	return 0;
}

errcode_t xr_measure_begin(struct xr_measure *m, struct extref_source_size *s,
			   unsigned int bs, int mode)
{
	errcode_t err;

	memset(m, 0, sizeof(*m));
	memset(s, 0, sizeof(*s));
	m->s = s;
	m->bs = bs;
	m->mode = mode;
	if (bs < 1024 || bs > 65536 || (bs & (bs - 1)))
		return EXT2_ET_INVALID_ARGUMENT;
	err = ext2fs_get_memzero(bs, &m->zero);
	if (!err)
		err = ext2fs_get_mem(bs, &m->blk);
	if (!err && mode != EXTREF_DEDUPE_NONE)
		err = set_alloc(m, 4096);
	return err;
}

void xr_measure_end(struct xr_measure *m)
{
	if (m->mode == EXTREF_DEDUPE_NONE)
		m->s->distinct_blocks = m->s->data_blocks;
	ext2fs_free_mem(&m->set);
	ext2fs_free_mem(&m->zero);
	ext2fs_free_mem(&m->blk);
}

/* One whole block (zero-padded) of the file, at lblk. */
static errcode_t one_block(struct xr_measure *m, blk64_t lblk,
			   const char *p)
{
	int added;
	errcode_t err = 0;

	if (!memcmp(p, m->zero, m->bs))
		return 0;
	m->nblocks++;
	m->s->data_blocks++;
	if (m->mode == EXTREF_DEDUPE_BLOCK) {
		err = set_add(m, xr_block_hash(p, m->bs), &added);
		m->s->distinct_blocks += added;
	} else if (m->mode == EXTREF_DEDUPE_FILE) {
		m->fsig = xr_pop_fdd_mix(m->fsig, lblk, p, m->bs);
	}
	return err;
}

errcode_t xr_measure_blocks(struct xr_measure *m, __u64 off, char *p,
			    size_t len)
{
	errcode_t err = 0;
	size_t i;

	for (i = 0; !err && i < len; i += m->bs) {
		size_t n = len - i < m->bs ? len - i : m->bs;

		if (n < m->bs)		/* the last block: zero-padded */
			memset(p + i + n, 0, m->bs - n);
		err = one_block(m, (off + i) / m->bs, p + i);
	}
	return err;
}

static errcode_t close_part(struct xr_measure *m)
{
	if (!m->part)
		return 0;
	m->part = 0;
	return one_block(m, m->part_lblk, m->blk);
}

errcode_t xr_measure_put(struct xr_measure *m, __u64 off, const void *buf,
			 size_t len)
{
	const char *src = buf;
	errcode_t err = 0;

	while (!err && len) {
		blk64_t lblk = off / m->bs;
		size_t in = off % m->bs;
		size_t n = m->bs - in < len ? m->bs - in : len;

		if (m->part && m->part_lblk != lblk)
			err = close_part(m);
		if (!err && !m->part) {
			memset(m->blk, 0, m->bs);
			m->part = 1;
			m->part_lblk = lblk;
		}
		if (!err) {
			memcpy(m->blk + in, src, n);
			if (in + n == m->bs)
				err = close_part(m);
		}
		off += n;
		src += n;
		len -= n;
	}
	return err;
}

void xr_measure_file_begin(struct xr_measure *m)
{
	m->fsig = 0;
	m->nblocks = 0;
	m->part = 0;
}

errcode_t xr_measure_file_end(struct xr_measure *m, __u64 size)
{
	errcode_t err = close_part(m);
	int added = 0;

	/* file dedupe: a file's blocks count once per distinct content */
	if (!err && m->mode == EXTREF_DEDUPE_FILE && m->nblocks) {
		err = set_add(m, m->fsig ^ (size * 0x9E3779B185EBCA87ULL),
			      &added);
		if (added)
			m->s->distinct_blocks += m->nblocks;
	}
	if (m->nblocks > IN_INODE_EXTENTS) /* extents, at worst one a block */
		m->s->meta_blocks += (m->nblocks + 339) / 340;
	return err;
}
