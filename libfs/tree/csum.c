/*
 * csum.c --- checksums of the tree's blocks.
 */
#include "extref_int.h"
#include "base/xr_crc32c.h"

/*
 * The seed: the filesystem's checksum seed when it stores one
 * (metadata_csum_seed), else crc32c(~0, s_uuid), as ext4 metadata does.
 * It does not depend on metadata_csum being enabled.
 */
__u32 extref_csum_seed(ext2_filsys fs)
{
	if (ext2fs_has_feature_csum_seed(fs->super))
		return fs->super->s_checksum_seed;
	return ext2fs_crc32c_le(~0U, fs->super->s_uuid,
				sizeof(fs->super->s_uuid));
}

/* crc32c of a block whose 4-byte checksum field at csum_off counts as 0. */
__u32 xr_block_csum(__u32 seed, const void *block, unsigned int bs,
		    unsigned int csum_off)
{
	static const unsigned char zero[4];
	const unsigned char *p = block;
	__u32 crc;

	crc = xr_crc32c(seed, p, csum_off);
	crc = xr_crc32c(crc, zero, sizeof(zero));
	return xr_crc32c(crc, p + csum_off + 4, bs - csum_off - 4);
}

/* The header's: its bytes before the checksum field. */
__u32 xr_header_csum(__u32 seed, const void *block)
{
	return xr_crc32c(seed, block, EXTREF_HDR_CSUM_OFFSET);
}

__u32 extref_header_csum(ext2_filsys fs, const void *block)
{
	return xr_header_csum(extref_csum_seed(fs), block);
}

__u32 extref_node_csum(ext2_filsys fs, const void *block)
{
	return xr_block_csum(extref_csum_seed(fs), block, fs->blocksize,
			     EXTREF_NODE_CSUM_OFFSET);
}
