/*
 * extent_splice.c --- replace the mappings of a logical range in one
 * write, when the range lies in one extent leaf (or in the inode) that
 * has room for the result.
 *
 * libext2fs changes an extent tree one entry at a time and writes after
 * each change: cutting the middle out of an extent is a shrink and then
 * an insert, and between the two writes the rest of the extent is
 * unmapped.  Here the leaf is rewritten whole, so an interruption leaves
 * the old mappings or the new ones.  When that is not possible (the leaf
 * would overflow, or its first key would move) the caller falls back to
 * the entry-by-entry path.
 */
#include <string.h>
#include "extent/xr_extent.h"
#include <ext2fs/ext3_extents.h>
#include "extent_raw.h"

struct piece {
	blk64_t		lblk, pblk, len;
	int		uninit;
};

struct leaf {
	char			*buf;		/* the leaf block, or NULL */
	blk64_t			pblk;		/* its block, 0 for the inode */
	struct ext3_extent_header *eh;
	blk64_t			lo, hi;		/* its key range (hi 0: none) */
};

/*
 * Walk index levels from the inode down to the leaf covering lstart.
 * Every node is checked (extent_node.c) before its entries are used: a
 * corrupt eh_entries would otherwise walk the entries past the node.
 */
static errcode_t find_leaf(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, blk64_t lstart,
			   struct leaf *lf)
{
	struct ext3_extent_header *eh = (void *)inode->i_block;
	int depth;
	errcode_t err;

	lf->buf = NULL;
	lf->pblk = 0;
	lf->lo = 0;
	lf->hi = 0;
	err = xr_extent_node_check(fs, ino, eh, sizeof(inode->i_block),
				   XR_EXT_ANY_DEPTH, 0);
	if (err)
		return err;
	depth = ext2fs_le16_to_cpu(eh->eh_depth);
	if (depth) {
		err = ext2fs_get_mem(fs->blocksize, &lf->buf);
		if (err)
			return err;
	}
	while (depth-- > 0) {
		struct ext3_extent_idx *ix = EXT_FIRST_INDEX(eh);
		int n = ext2fs_le16_to_cpu(eh->eh_entries), i = 0;

		if (n == 0)
			return EXT2_ET_OP_NOT_SUPPORTED;
		while (i + 1 < n && ext2fs_le32_to_cpu(ix[i + 1].ei_block) <=
				    lstart)
			i++;
		lf->lo = ext2fs_le32_to_cpu(ix[i].ei_block);
		if (i + 1 < n)
			lf->hi = ext2fs_le32_to_cpu(ix[i + 1].ei_block);
		lf->pblk = xr_extent_idx_child(&ix[i]);
		/* The checksum too: the leaf is re-stamped when rewritten. */
		err = xr_extent_block_read(fs, ino, lf->pblk, depth, lf->buf);
		if (err)
			return err;
		eh = (void *)lf->buf;
	}
	lf->eh = eh;
	return 0;
}

static void add_piece(struct piece *p, int *n, blk64_t lblk, blk64_t pblk,
		      blk64_t len, int uninit)
{
	if (!len)
		return;
	p[*n].lblk = lblk;
	p[*n].pblk = pblk;
	p[*n].len = len;
	p[*n].uninit = uninit;
	(*n)++;
}

/* Sort by logical block and merge neighbours that continue each other. */
static int normalize(struct piece *p, int n)
{
	int i, j, out = 0;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && p[j].lblk < p[j - 1].lblk; j--) {
			struct piece t = p[j];

			p[j] = p[j - 1];
			p[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		struct piece *last = out ? &p[out - 1] : NULL;
		blk64_t max = p[i].uninit ? EXT_UNINIT_MAX_LEN
					  : EXT_INIT_MAX_LEN;

		if (last && last->lblk + last->len == p[i].lblk &&
		    last->pblk + last->len == p[i].pblk &&
		    last->uninit == p[i].uninit && last->len < max) {
			/* Fill the extent up to its largest length first. */
			blk64_t k = max - last->len;

			if (k > p[i].len)
				k = p[i].len;
			last->len += k;
			p[i].lblk += k;
			p[i].pblk += k;
			p[i].len -= k;
			if (!p[i].len)
				continue;
		}
		p[out++] = p[i];
	}
	return out;
}

errcode_t xr_extent_splice(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, blk64_t lstart,
			   blk64_t lend, const struct xr_map *nm, size_t nnew,
			   struct xr_prange_vec *removed)
{
	struct leaf lf;
	struct ext3_extent *ex;
	struct piece *p = NULL;
	struct xr_prange_vec gone = { 0 };
	blk64_t added = 0, dropped = 0;
	int n = 0, cap, nr, i, max;
	size_t k;
	errcode_t err;

	if (!(inode->i_flags & EXT4_EXTENTS_FL))
		return EXT2_ET_OP_NOT_SUPPORTED;
	err = find_leaf(fs, ino, inode, lstart, &lf);
	if (err)
		goto out;
	err = EXT2_ET_OP_NOT_SUPPORTED;
	if ((lf.pblk && lstart < lf.lo) || (lf.hi && lend > lf.hi))
		goto out;
	nr = ext2fs_le16_to_cpu(lf.eh->eh_entries);
	max = ext2fs_le16_to_cpu(lf.eh->eh_max);
	cap = nr + 2 + (int)nnew * 2 + 2;
	for (k = 0; k < nnew; k++)
		cap += nm[k].len / EXT_UNINIT_MAX_LEN + 1;
	if (ext2fs_get_array(cap, sizeof(*p), &p)) {
		err = EXT2_ET_NO_MEMORY;
		goto out;
	}
	ex = EXT_FIRST_EXTENT(lf.eh);
	for (i = 0; i < nr; i++) {
		blk64_t s = ext2fs_le32_to_cpu(ex[i].ee_block);
		int un;
		blk64_t len = xr_extent_len(&ex[i], &un);
		blk64_t pb = xr_extent_start(&ex[i]);
		blk64_t e = s + len, os, oe;

		if (e <= lstart || s >= lend) {
			add_piece(p, &n, s, pb, len, un);
			continue;
		}
		os = s > lstart ? s : lstart;
		oe = e < lend ? e : lend;
		add_piece(p, &n, s, pb, os - s, un);
		add_piece(p, &n, oe, pb + (oe - s), e - oe, un);
		if (xr_prange_push(&gone, pb + (os - s), oe - os)) {
			err = EXT2_ET_NO_MEMORY;
			goto out;
		}
		dropped += oe - os;
	}
	for (k = 0; k < nnew; k++) {
		blk64_t l = nm[k].lblk, pb = nm[k].pblk, left = nm[k].len;
		blk64_t mx = nm[k].uninit ? EXT_UNINIT_MAX_LEN
					  : EXT_INIT_MAX_LEN;

		if (l < lstart || l + left > lend)
			goto out;
		while (left) {
			blk64_t part = left > mx ? mx : left;

			add_piece(p, &n, l, pb, part, nm[k].uninit);
			l += part;
			pb += part;
			left -= part;
		}
		added += nm[k].len;
	}
	n = normalize(p, n);
	/* It must fit, and a leaf below the root keeps its first key. */
	if (n > max || (lf.pblk && (n == 0 || p[0].lblk != lf.lo)))
		goto out;
	for (i = 0; i < n; i++) {
		ex[i].ee_block = ext2fs_cpu_to_le32(p[i].lblk);
		ex[i].ee_len = ext2fs_cpu_to_le16(p[i].len +
				(p[i].uninit ? EXT_INIT_MAX_LEN : 0));
		ex[i].ee_start = ext2fs_cpu_to_le32(p[i].pblk & 0xffffffff);
		ex[i].ee_start_hi = ext2fs_cpu_to_le16(p[i].pblk >> 32);
	}
	memset(ex + n, 0, (nr > n ? nr - n : 0) * sizeof(*ex));
	lf.eh->eh_entries = ext2fs_cpu_to_le16(n);
	err = 0;
	if (lf.pblk) {
		err = ext2fs_extent_block_csum_set(fs, ino, lf.eh);
		if (!err)
			err = io_channel_write_blk64(fs->io, lf.pblk, 1, lf.buf);
	}
	if (!err && added)
		err = ext2fs_iblk_add_blocks(fs, inode, added);
	if (!err && dropped)
		err = ext2fs_iblk_sub_blocks(fs, inode, dropped);
	if (!err)
		err = ext2fs_write_inode(fs, ino, inode);
	for (k = 0; !err && k < gone.n; k++)
		err = xr_prange_push(removed, gone.v[k].pblk, gone.v[k].len);
out:
	xr_prange_vec_free(&gone);
	ext2fs_free_mem(&p);
	ext2fs_free_mem(&lf.buf);
	return err;
}

/*
 * Replace the mappings of [lstart, lend) by nm: built at once into a
 * tree with nothing mapped, in one write when possible, the tree built
 * again for many mappings (extent_rebuild.c), else entry by entry
 * (unmap, then map).
 */
errcode_t xr_replace_range(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, blk64_t lstart,
			   blk64_t lend, const struct xr_map *nm, size_t nnew,
			   struct xr_prange_vec *removed)
{
	errcode_t err;
	size_t k;

	/* nothing mapped yet (a new file): the tree built at once */
	if (xr_extent_tree_empty(inode))
		return xr_extent_build(fs, ino, inode, nm, nnew);
	err = xr_extent_splice(fs, ino, inode, lstart, lend, nm, nnew,
			       removed);
	if (err == EXT2_ET_OP_NOT_SUPPORTED)	/* many: the tree rebuilt */
		err = xr_extent_rebuild(fs, ino, inode, lstart, lend, nm,
					nnew, removed);
	if (err != EXT2_ET_OP_NOT_SUPPORTED)
		return err;
	err = xr_unmap(fs, ino, inode, lstart, lend, removed);
	for (k = 0; !err && k < nnew; k++)
		err = xr_map_insert(fs, ino, inode, &nm[k]);
	return err;
}
