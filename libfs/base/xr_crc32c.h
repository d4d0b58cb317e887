/*
 * xr_crc32c.h --- crc32c for the checksums the library computes itself
 * (crc32c.c).
 */
#ifndef XR_CRC32C_H
#define XR_CRC32C_H

#include <stddef.h>
#include <ext2fs/ext2fs.h>

/*
 * The same function as libext2fs's ext2fs_crc32c_le: crc in, the running
 * value out, no inversion before or after.  Faster where the CPU has a
 * crc32c instruction.
 */
__u32 xr_crc32c(__u32 crc, const void *buf, size_t len);

#endif /* XR_CRC32C_H */
