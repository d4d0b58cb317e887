/*
 * jcsum.c --- sizes of jbd2 records and their checksums.
 *
 * jbd2 checksums are crc32c without the final inversion (libext2fs's
 * ext2fs_crc32c_le), seeded with crc32c(~0, s_uuid) except the journal
 * superblock's, seeded with ~0.
 */
#include <string.h>
#include <stddef.h>
#include "journal_int.h"
#include "base/xr_crc32c.h"

/* Bytes of one descriptor tag (without the UUID that may follow it). */
unsigned xr_jtag_bytes(__u32 incompat)
{
	unsigned sz = sizeof(struct jbd2_disk_tag);

	if (incompat & JBD2_FEATURE_INCOMPAT_CSUM_V3)
		return sizeof(struct jbd2_disk_tag3);
	if (incompat & JBD2_FEATURE_INCOMPAT_CSUM_V2)
		sz += sizeof(__u16);
	if (incompat & JBD2_FEATURE_INCOMPAT_64BIT)
		return sz;
	return sz - sizeof(__u32);
}

unsigned xr_jtail_bytes(__u32 incompat)
{
	return (incompat & XR_JNL_CSUM) ? sizeof(struct jbd2_disk_tail) : 0;
}

unsigned xr_jrevoke_rec_bytes(__u32 incompat)
{
	return (incompat & JBD2_FEATURE_INCOMPAT_64BIT) ? 8 : 4;
}

/* Tags one descriptor holds: the first is followed by the UUID. */
unsigned xr_jtags_per_desc(unsigned bs, __u32 incompat)
{
	unsigned tb = xr_jtag_bytes(incompat);
	unsigned room = bs - sizeof(struct jbd2_disk_header) -
			xr_jtail_bytes(incompat);

	return 1 + (room - tb - JBD2_UUID_BYTES) / tb;
}

unsigned xr_jrevokes_per_block(unsigned bs, __u32 incompat)
{
	return (bs - sizeof(struct jbd2_disk_revoke) -
		xr_jtail_bytes(incompat)) / xr_jrevoke_rec_bytes(incompat);
}

__u32 xr_jsb_csum(const void *raw)
{
	unsigned char copy[sizeof(struct jbd2_disk_super)];

	memcpy(copy, raw, sizeof(copy));
	memset(copy + offsetof(struct jbd2_disk_super, s_checksum), 0, 4);
	return ext2fs_crc32c_le(~0U, copy, sizeof(copy));
}

/* crc32c(seed, blk) with the four bytes at csum_off taken as zero. */
__u32 xr_jblock_csum(__u32 seed, const void *blk, unsigned bs,
		     unsigned csum_off)
{
	static const unsigned char zero[4];
	const unsigned char *p = blk;
	__u32 c;

	c = xr_crc32c(seed, p, csum_off);
	c = xr_crc32c(c, zero, 4);
	return xr_crc32c(c, p + csum_off + 4, bs - csum_off - 4);
}

/* A tag's checksum: over the tid (big-endian), then the copy as logged. */
__u32 xr_jtag_csum(__u32 seed, __u32 tid, const void *copy, unsigned bs)
{
	unsigned char seq[4];

	xr_put_be32(seq, tid);
	return xr_crc32c(xr_crc32c(seed, seq, 4), copy, bs);
}

/* Descriptor and revoke blocks end in a tail with checksum v2/v3. */
void xr_jtail_set(struct xr_journal *j, void *blk)
{
	unsigned off = j->bs - sizeof(struct jbd2_disk_tail);

	if (j->sb.incompat & XR_JNL_CSUM)
		xr_put_be32((__u8 *)blk + off,
			    xr_jblock_csum(j->seed, blk, j->bs, off));
}

int xr_jtail_ok(struct xr_journal *j, const void *blk)
{
	unsigned off = j->bs - sizeof(struct jbd2_disk_tail);

	if (!(j->sb.incompat & XR_JNL_CSUM))
		return 1;
	return xr_be32((const __u8 *)blk + off) ==
	       xr_jblock_csum(j->seed, blk, j->bs, off);
}

/* The commit block's h_chksum[0] with v2/v3; the old COMPAT_CHECKSUM
 * (crc32 over the copies) is not verified. */
int xr_jcommit_ok(struct xr_journal *j, const void *blk)
{
	unsigned off = offsetof(struct jbd2_disk_commit, h_chksum);

	if (!(j->sb.incompat & XR_JNL_CSUM))
		return 1;
	return xr_be32((const __u8 *)blk + off) ==
	       xr_jblock_csum(j->seed, blk, j->bs, off);
}
