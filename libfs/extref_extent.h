/*
 * extref_extent.h --- a file's extents as the extent layer reads them:
 * each mapping with its shared state, or each leaf and index entry of
 * the extent tree.  Read-only calls; every operation that changes an
 * extent tree is in extref_ops.h.
 */
#ifndef EXTREF_EXTENT_H
#define EXTREF_EXTENT_H

#include "extref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported; the rest of the library is not. */
#pragma GCC visibility push(default)

/* One extent mapping of a file, with its reference count (0: no record). */
struct extref_mapping {
	blk64_t		lblk;
	blk64_t		pblk;
	blk64_t		len;
	int		unwritten;
	int		shared;		/* some block of it has a record */
};
typedef errcode_t (*extref_mapping_func)(const struct extref_mapping *m,
					 void *priv);
/*
 * Each extent of ino, split where the shared state changes, in file
 * order.  func returns as extref.h's callbacks do (EXTREF_ITER_STOP).
 */
errcode_t extref_iterate_mappings(extref_fs_t fs, ext2_ino_t ino,
				  extref_mapping_func func, void *priv);

/*
 * One leaf extent of a file, as its extent tree holds it, or (index set)
 * an index entry: pblk the extent block it points to, lblk the first
 * logical block below it.
 */
struct extref_extent {
	blk64_t		lblk;
	blk64_t		pblk;
	__u32		len;
	int		unwritten;
	int		index;
};
typedef errcode_t (*extref_extent_func)(const struct extref_extent *e,
					void *priv);
/* Flags for extref_iterate_extents(). */
#define EXTREF_EXTENTS_INDEX	0x0001	/* index entries too */
/*
 * Each leaf extent of the extent-mapped inode ino (inode: as read by the
 * caller), in file order, unsplit and without counts; with
 * EXTREF_EXTENTS_INDEX each index entry too, before the extents below
 * it.  func returns as extref.h's callbacks do.  EXT2_ET_INODE_NOT_EXTENT
 * for an inode without extents; a damaged node stops the walk with
 * libext2fs's error.
 */
errcode_t extref_iterate_extents(extref_fs_t fs, ext2_ino_t ino,
				 struct ext2_inode *inode, int flags,
				 extref_extent_func func, void *priv);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_EXTENT_H */
