/*
 * fsck_lean.c --- the probe's mappings: 8 bytes each where the full
 * form (struct xr_mapping) takes 16.
 *
 * Every check runs first as a silent probe (fsck.c) that keeps, of each
 * mapping, only what the counts need: its block, length and how many
 * identical mappings of one inode it stands for, packed in a 64-bit key
 * that sorts by block.  The inode, which only a problem's message names,
 * is left out.  On most images nothing is wrong and the probe's result
 * is the answer; a probe that meets any problem is thrown away and the
 * passes run again in full, so every message and repair comes from the
 * full form.  Memory and the time spent filling and sorting it halve
 * (the kernel zeroes each new page the array grows into, the largest
 * cost of the passes on images of many small shared extents).
 */
#include "extref_fsck_int.h"

#define LEAN_COUNT_MAX	0xffffU

/* Whether the probe can number every block of the filesystem. */
int xr_fsck_lean_fits(const struct xr_fsck *c)
{
	return c->nblocks <= XR_LEAN_MAX_BLOCKS;
}

/*
 * Record a mapping, cut in pieces of at most XR_MAP_MAX_LEN blocks; the
 * same inode mapping the same blocks again right after raises the last
 * key's count (as xr_fsck_add_mapping does).
 */
errcode_t xr_fsck_lean_add(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			   ext2_ino_t ino)
{
	errcode_t err;

	while (len) {
		unsigned part = len > XR_MAP_MAX_LEN ? XR_MAP_MAX_LEN : len;
		__u64 key = xr_lean_key(pblk, part);

		if (c->nmap && c->lean_ino == ino &&
		    (c->lean[c->nmap - 1] & ~(__u64)LEAN_COUNT_MAX) ==
		    (key & ~(__u64)LEAN_COUNT_MAX) &&
		    (c->lean[c->nmap - 1] & LEAN_COUNT_MAX) < LEAN_COUNT_MAX) {
			c->lean[c->nmap - 1]++;
		} else {
			err = xr_big_grow(&c->lean, &c->caplean, c->nmap,
					  sizeof(*c->lean));
			if (err)
				return err;
			c->lean[c->nmap++] = key;
			c->lean_ino = ino;
		}
		pblk += part;
		len -= part;
	}
	return 0;
}

/* By block (the keys' order below the block does not matter). */
void xr_fsck_lean_sort(struct xr_fsck *c)
{
	xr_sort_keys(c->lean, c->nmap, XR_LEAN_PBLK_SHIFT);
}

/* Index of the first key that can overlap block b (xr_fsck_first_map). */
size_t xr_fsck_lean_first(const struct xr_fsck *c, blk64_t b)
{
	blk64_t from = b > XR_MAP_MAX_LEN ? b - XR_MAP_MAX_LEN : 0;
	__u64 key = (__u64)from << XR_LEAN_PBLK_SHIFT;

	return XR_PARTITION_POINT(c->nmap, i, c->lean[i] < key);
}
