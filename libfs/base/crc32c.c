/*
 * crc32c.c --- crc32c for the tree's blocks and the journal's records.
 *
 * libext2fs's ext2fs_crc32c_le works through tables, a few bytes at a
 * time; x86-64's SSE4.2 crc32 instruction takes eight bytes at once.  A
 * small copy-on-write write checksums a dozen 4 KiB journal copies and
 * the tree's nodes, which this makes several times cheaper.  Without the
 * instruction (another CPU, another architecture) libext2fs computes it.
 */
#include <stdint.h>
#include <string.h>
#include "base/xr_crc32c.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <nmmintrin.h>
#define XR_CRC32C_HW 1

__attribute__((target("sse4.2")))
static __u32 crc_hw(__u32 crc, const unsigned char *p, size_t len)
{
	__u64 c = crc, v;

	for (; len && ((uintptr_t)p & 7); len--)
		c = _mm_crc32_u8((__u32)c, *p++);
	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
	}
	for (; len; len--)
		c = _mm_crc32_u8((__u32)c, *p++);
	return (__u32)c;
}

/* Asked once; a race only asks twice. */
static int have_hw(void)
{
	static int have = -1;

	if (have < 0)
		have = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	return have;
}
#endif

__u32 xr_crc32c(__u32 crc, const void *buf, size_t len)
{
#ifdef XR_CRC32C_HW
	if (have_hw())
		return crc_hw(crc, buf, len);
#endif
	return ext2fs_crc32c_le(crc, buf, len);
}
