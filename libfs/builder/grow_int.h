/*
 * grow_int.h --- the size an image grows to (grow_size.c), for
 * build_grow.c.
 */
#ifndef EXTREF_GROW_INT_H
#define EXTREF_GROW_INT_H

#include "build_int.h"

/*
 * The blocks count fs grows to so that need_blocks blocks and
 * need_inodes inodes are free, headroom percent more of the whole;
 * fs's own count when they are free already.  EXTREF_ERR_GROW_TOO_BIG
 * past the group descriptors' reserve (or 2^32 blocks without 64bit).
 */
errcode_t xr_grow_target(ext2_filsys fs, __u64 need_blocks,
			 __u64 need_inodes, unsigned int headroom,
			 blk64_t *target);

#endif /* EXTREF_GROW_INT_H */
