/*
 * xr_zone.h --- the filesystem's system zone (zone.c): the blocks that
 * are its own metadata, as the kernel's block_validity keeps them
 * (fs/ext4/block_validity.c): superblocks and their backups, group
 * descriptors and the reserved GDT blocks, block and inode bitmaps,
 * inode tables, and the journal's blocks.
 *
 * Built once per read-write open (image/open.c), from the geometry and
 * one walk of the journal inode: O(groups).  Every extent an operation
 * reads as data, writes in place or frees is checked against it, and
 * every block allocated, each in O(log groups), whatever the tree's stamp
 * says: a file moved onto an inode table by another tool is refused
 * (EXTREF_ERR_ZONE_MAP), never written through.
 */
#ifndef XR_ZONE_H
#define XR_ZONE_H

#include "extref.h"

struct xr_zone;

/*
 * The zone of fs, built and attached to it: the descriptors are checked
 * first as ext2fs_check_desc() does (a bitmap or inode table that
 * another group's metadata holds, or outside the filesystem, is refused
 * with libext2fs's code), then, with XR_ZONE_JOURNAL, the journal
 * inode's blocks, which must lie inside the filesystem and outside the
 * group metadata, the tree's records and inode 5's blocks (tree may be
 * NULL): else EXTREF_ERR_JNL_OVERLAP.  With XR_ZONE_ALLOC, allocations
 * through libext2fs (ext2fs_new_block2, ext2fs_alloc_block2,
 * ext2fs_new_range with no bitmap of their own) never return a block of
 * the zone, nor one of inode 5's (tree given) that inode 5 still maps:
 * one the bitmap calls free is EXTREF_ERR_ZONE_BITMAP.  A zone attached
 * before to fs is replaced, and kept when the new one fails.
 */
#define XR_ZONE_JOURNAL	0x1
#define XR_ZONE_ALLOC	0x2
errcode_t xr_zone_attach(ext2_filsys fs, extref_tree_t tree, int flags);
/*
 * The allocation hooks also pass over every block a record of *slot
 * covers (the session's tree, read through the slot at each search, so
 * that a tree loaded again after a rollback is the one searched; NULL
 * in it: none): a shared block the bitmap calls free is in use.
 */
void xr_zone_records(ext2_filsys fs, extref_tree_t *slot);
/* The zone of fs goes (its allocation hooks too); none: nothing. */
void xr_zone_detach(ext2_filsys fs);

/*
 * [blk, blk + len) is outside the zone, outside inode 5's blocks (when
 * the zone was built with the tree) and inside the filesystem's data
 * blocks: 0; else EXTREF_ERR_ZONE_MAP.  No zone attached to fs (a
 * read-only open): 0.  For the mappings of any inode but inode 5.
 */
errcode_t xr_zone_check(ext2_filsys fs, blk64_t blk, blk64_t len);
/* A zone looked up once, for a caller that checks many extents. */
struct xr_zone *xr_zone_of(ext2_filsys fs);
errcode_t xr_zone_check_in(const struct xr_zone *z, blk64_t blk,
			   blk64_t len);
/*
 * The same, and every block of [blk, blk + len) in use in the block
 * bitmap (a file's own blocks, before an operation changes it): else
 * EXTREF_ERR_ZONE_UNMARKED.
 */
errcode_t xr_zone_check_mapped(const struct xr_zone *z, blk64_t blk,
			       blk64_t len);
/*
 * The checker's repair of a file that maps metadata (0x0102: the file
 * gets a copy of its own) reads those mappings: while on, the mapping
 * checks pass; frees and allocations are checked as ever.
 */
void xr_zone_repair(ext2_filsys fs, int on);
/* [blk, blk + len) meets the zone proper (inode 5 aside), or lies
 * outside the filesystem's data blocks. */
int xr_zone_is_meta(ext2_filsys fs, blk64_t blk, blk64_t len);
/*
 * A free of [blk, blk + len) may go ahead: outside the zone, inside the
 * filesystem, and every block of it in use in the block bitmap (e2fsck's
 * "already free" otherwise): else EXTREF_ERR_ZONE_FREE.
 */
errcode_t xr_zone_check_free(ext2_filsys fs, blk64_t blk, blk64_t len);

#endif /* XR_ZONE_H */
