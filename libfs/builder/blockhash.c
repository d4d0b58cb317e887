/*
 * blockhash.c --- a fast 64-bit hash of a block, to find candidates for
 * sharing.  Never trusted alone: every match is confirmed byte for byte.
 *
 * Four lanes of 64-bit multiply-rotate rounds over 32-byte stripes (the
 * core of xxHash64), then an avalanche; any length, the bytes past the
 * last whole stripe folded in one by one.  Nothing hashed here reaches
 * the image, so the value may differ between hosts without changing it.
 * And the read that confirms a match, past libext2fs's block cache.
 */
#include <string.h>
#include "populate_int.h"

#define P1	0x9E3779B185EBCA87ULL
#define P2	0xC2B2AE3D27D4EB4FULL
#define P3	0x165667B19E3779F9ULL

static __u64 rotl(__u64 x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static __u64 rd64(const unsigned char *p)
{
	__u64 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static __u64 round64(__u64 acc, __u64 in)
{
	return rotl(acc + in * P2, 31) * P1;
}

__u64 xr_block_hash(const void *buf, size_t len)
{
	const unsigned char *p = buf, *end = p + len;
	__u64 a = P1 + P2, b = P2, c = 0, d = -P1, h;

	for (; end - p >= 32; p += 32) {
		a = round64(a, rd64(p));
		b = round64(b, rd64(p + 8));
		c = round64(c, rd64(p + 16));
		d = round64(d, rd64(p + 24));
	}
	h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18) + len;
	for (; p < end; p++)
		h = rotl(h ^ (*p * P3), 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	return h ^ (h >> 32);
}

errcode_t xr_pop_read_block(ext2_filsys fs, blk64_t blk, void *buf)
{
	return io_channel_read_blk64(fs->io, blk, -(int)fs->blocksize, buf);
}
