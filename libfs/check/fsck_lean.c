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
 * cost of the passes on images of many small shared extents).  As the
 * probe keeps no inode, all mappings of the same blocks can share a key
 * and its count: a block cloned into many files takes one key, not one
 * a file.
 */
#include <stdint.h>
#include <string.h>
#include "extref_fsck_int.h"

#define LEAN_COUNT_MAX	0xffffU

/* Whether the probe can number every block of the filesystem. */
int xr_fsck_lean_fits(const struct xr_fsck *c)
{
	return c->nblocks <= XR_LEAN_MAX_BLOCKS;
}

/*
 * Keys met before, by a small hash of their blocks: many inodes that map
 * the same blocks (a block cloned into many files) then take one key,
 * whose count says how many.  The hash is a cache (a slot holds the last
 * key that fell in it), tried once there are XR_LEAN_HASH_FROM keys (a
 * small image does not pay for its table), dropped when it stops paying
 * (few hits among the keys of a round).
 */
#define HASH_BITS	18
#define HASH_ROUND	65536	/* keys between two looks at the hits */

/* Fibonacci hashing of the block (consecutive blocks spread evenly). */
static size_t slot_of(__u64 key)
{
	__u64 x = (key >> XR_LEAN_PBLK_SHIFT) +
		  ((key >> 16) & 0x7fff) * 0x10001;	/* and the length */

	return (x * 0x9e3779b97f4a7c15ULL) >> (64 - HASH_BITS);
}

static void hash_start(struct xr_fsck *c)
{
	c->lean_hash_tried = 1;
	if (ext2fs_get_array(1U << HASH_BITS, sizeof(*c->lean_hash),
			     &c->lean_hash))
		c->lean_hash = NULL;	/* a cache: none is slower only */
	else
		memset(c->lean_hash, 0xff,
		       (1U << HASH_BITS) * sizeof(*c->lean_hash));
}

/* Whether it still pays: at least one hit in 16 tries this round. */
static void hash_review(struct xr_fsck *c)
{
	if (++c->lean_tries < HASH_ROUND)
		return;
	if (c->lean_hits < c->lean_tries / 16)
		ext2fs_free_mem(&c->lean_hash);
	c->lean_tries = c->lean_hits = 0;
}

/* The key's slot counts it when it holds the same blocks. */
static int hash_hit(struct xr_fsck *c, __u64 key, size_t slot)
{
	__u32 at = c->lean_hash[slot];
	__u64 *k = at < c->nmap ? &c->lean[at] : NULL;

	if (!k || (*k | 0xffff) != (key | 0xffff) || (*k & 0xffff) == 0xffff)
		return 0;
	(*k)++;
	c->lean_hits++;
	return 1;
}

/* The rest of xr_fsck_lean_put: the hash, then a new key. */
errcode_t xr_fsck_lean_add_key(struct xr_fsck *c, __u64 key)
{
	size_t slot = slot_of(key);
	errcode_t err;

	if (!c->lean_hash_tried && c->nmap >= XR_LEAN_HASH_FROM)
		hash_start(c);
	if (c->lean_hash && hash_hit(c, key, slot)) {
		hash_review(c);
		return 0;
	}
	err = xr_big_grow(&c->lean, &c->caplean, c->nmap, sizeof(*c->lean));
	if (err)
		return err;
	if (c->lean_hash && c->nmap <= UINT32_MAX - 1) {
		c->lean_hash[slot] = c->nmap;
		hash_review(c);
	}
	c->lean[c->nmap++] = key;
	return 0;
}

/* Record a mapping, cut in pieces of at most XR_MAP_MAX_LEN blocks. */
errcode_t xr_fsck_lean_add(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			   ext2_ino_t ino)
{
	errcode_t err = 0;

	(void) ino;
	while (!err && len) {
		unsigned part = len > XR_MAP_MAX_LEN ? XR_MAP_MAX_LEN : len;

		err = xr_fsck_lean_put(c, xr_lean_key(pblk, part));
		pblk += part;
		len -= part;
	}
	return err;
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
