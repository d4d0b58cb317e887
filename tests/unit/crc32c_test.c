/*
 * crc32c_test.c --- the library's crc32c (tree/crc32c.c) gives what
 * libext2fs's ext2fs_crc32c_le gives: random buffers of every length up
 * to a few blocks, at every alignment, from random seeds, whole and in
 * two pieces.  Prints "ok N" and exits 0, or the first difference and 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include "base/xr_crc32c.h"

int main(void)
{
	static unsigned char buf[9000 + 8];
	unsigned long n = 0;
	size_t len, off, cut;
	__u32 seed, a, b;

	srand(14);
	for (len = 0; len < sizeof(buf); len++)
		buf[len] = rand();
	for (len = 0; len <= 9000; len += (len < 80 ? 1 : 997)) {
		for (off = 0; off < 8; off++, n++) {
			seed = ((__u32)rand() << 16) ^ (__u32)rand();
			a = ext2fs_crc32c_le(seed, buf + off, len);
			b = xr_crc32c(seed, buf + off, len);
			cut = len ? (size_t)rand() % len : 0;
			if (a != b || a != xr_crc32c(xr_crc32c(seed, buf + off,
							       cut),
						    buf + off + cut,
						    len - cut)) {
				printf("differ: len %zu off %zu seed %08x: "
				       "%08x %08x\n", len, off, seed, a, b);
				return 1;
			}
		}
	}
	printf("ok %lu\n", n);
	return 0;
}
