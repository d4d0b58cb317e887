/*
 * fsck_unshare.c --- -E unshare: blocks mapped several times with no
 * record are not recorded as shared; each mapping but the first gets its
 * own copy of the data (what e2fsck's pass 1D does for multiply-claimed
 * blocks).  A data block that is also metadata (0x0102) gives every file
 * that maps it a copy.  The tree is rebuilt afterwards from a fresh scan.
 */
#include <string.h>
#include "extref_fsck_int.h"
#include "ops/extref_ops_int.h"
#include "txn/xr_txio.h"

/*
 * Note [s, e) for copies; keep (XR_UNS_KEEP_*) says which inodes keep
 * their mapping.  Returns non-zero when out of memory.
 */
errcode_t xr_fsck_note_unshare(struct xr_fsck *c, blk64_t s, blk64_t e,
			       int keep)
{
	errcode_t err = xr_grow(&c->uns, &c->capuns, c->nuns, sizeof(*c->uns));

	if (err)
		return err;
	c->uns[c->nuns].start = s;
	c->uns[c->nuns].len = e - s;
	c->uns[c->nuns].count = keep;
	c->nuns++;
	return 0;
}

/* Give [lblk, lblk+len) of ino, mapped at pblk, new blocks, one by one. */
static errcode_t copy_range(ext2_filsys fs, ext2_ino_t ino,
			    const struct xr_map *m, char *buf)
{
	struct ext2_inode inode;
	struct xr_prange_vec removed = { 0 };
	blk64_t i, nb = 0;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);

	for (i = 0; !err && i < m->len; i++) {
		struct xr_map one = { m->lblk + i, 0, 1, m->uninit };

		err = ext2fs_new_block2(fs, nb ? nb + 1 : m->pblk + i, NULL,
					&nb);
		if (err)
			break;
		ext2fs_block_alloc_stats2(fs, nb, +1);
		one.pblk = nb;
		err = io_channel_read_blk64(fs->io, m->pblk + i, 1, buf);
		/* file data in a new block: not journaled (ordered) */
		if (!err)
			err = xr_tx_write_data(fs, nb, 1, buf);
		if (!err)
			err = xr_unmap(fs, ino, &inode, one.lblk, one.lblk + 1,
				       &removed);
		if (!err)
			err = xr_map_insert(fs, ino, &inode, &one);
		removed.n = 0;
	}
	xr_prange_vec_free(&removed);
	return err;
}

/*
 * Every file range of ino that maps into [s, e).  With keep set, the
 * first one stays and the rest are copied; else all are copied.
 */
static errcode_t unshare_inode(struct xr_fsck *c, ext2_ino_t ino,
			       blk64_t s, blk64_t e, int keep, char *buf)
{
	struct ext2_inode inode;
	struct xr_map_vec maps = { 0 };
	size_t i;
	errcode_t err;

	err = ext2fs_read_inode(c->fs, ino, &inode);
	if (!err)
		err = xr_get_mappings(c->fs, ino, &inode, 0, 1ULL << 32, &maps);
	for (i = 0; !err && i < maps.n; i++) {
		struct xr_map m = maps.v[i];
		blk64_t a = m.pblk > s ? m.pblk : s;
		blk64_t b = m.pblk + m.len < e ? m.pblk + m.len : e;

		if (a >= b)
			continue;
		if (keep) {
			keep = 0;
			continue;
		}
		m.lblk += a - m.pblk;
		m.pblk = a;
		m.len = b - a;
		err = copy_range(c->fs, ino, &m, buf);
	}
	xr_map_vec_free(&maps);
	return err;
}

/* Whether the i-th inode (ino) mapping a range keeps its mapping. */
static int keeps(const struct xr_fsck *c, int keep, size_t i, ext2_ino_t ino)
{
	if (keep == XR_UNS_KEEP_FIRST)
		return i == 0;
	if (keep == XR_UNS_KEEP_SPECIAL)
		return xr_fsck_special_ino(c, ino);
	return 0;
}

/* Copy every noted range for the mappings that do not keep it. */
errcode_t xr_fsck_unshare(struct xr_fsck *c)
{
	char *buf = NULL;
	__u32 inos[64];
	size_t r, i, n;
	errcode_t err;

	err = ext2fs_get_mem(c->fs->blocksize, &buf);
	for (r = 0; !err && r < c->nuns; r++) {
		blk64_t s = c->uns[r].start, e = s + c->uns[r].len;

		/* The distinct inodes mapping the range, in scan order. */
		n = 0;
		for (i = 0; i < c->nmap; i++) {
			const struct xr_mapping *m = &c->map[i];
			size_t k;

			if (m->pblk >= e || m->pblk + m->len <= s)
				continue;
			for (k = 0; k < n && inos[k] != m->ino; k++)
				;
			if (k == n && n < 64)
				inos[n++] = m->ino;
		}
		for (i = 0; !err && i < n; i++)
			err = unshare_inode(c, inos[i], s, e,
					    keeps(c, c->uns[r].count, i,
						  inos[i]), buf);
		/* the range copied for all: a commit may go here */
		if (!err)
			err = xr_fsck_tx_split(c);
	}
	ext2fs_free_mem(&buf);
	c->res->changed = 1;
	return err;
}
