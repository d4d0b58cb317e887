/*
 * xr_blockiter.h --- ext2fs_block_iterate3 with a bound (blockiter.c).
 */
#ifndef XR_BLOCKITER_H
#define XR_BLOCKITER_H

#include <ext2fs/ext2fs.h>

/*
 * ext2fs_block_iterate3(fs, ino, flags, NULL, func, priv), stopped with
 * EXTREF_ERR_BLOCK_MAP_LOOP once it has met more blocks, data and
 * mapping blocks together, than the inode has (i_blocks, at most the
 * filesystem's): a map whose index or indirect blocks are named again
 * would otherwise be walked once a path, entries to the power of the
 * depth.
 */
errcode_t xr_block_iterate(ext2_filsys fs, ext2_ino_t ino, int flags,
			   int (*func)(ext2_filsys fs, blk64_t *blocknr,
				       e2_blkcnt_t blockcnt, blk64_t ref_blk,
				       int ref_offset, void *priv),
			   void *priv);

#endif /* XR_BLOCKITER_H */
