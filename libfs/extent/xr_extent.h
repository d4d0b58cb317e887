/*
 * xr_extent.h --- the extent layer: a file's extent tree read, walked,
 * split and built, and the run and mapping vectors every operation,
 * the checker and the builder pass around.  Below ops/, check/ and the
 * builder; above txn/ (the tree's blocks are logged through it).
 */
#ifndef XR_EXTENT_H
#define XR_EXTENT_H

#include "extref_extent.h"

/* A run of physical blocks. */
struct xr_prange {
	blk64_t		pblk;
	blk64_t		len;
};

struct xr_prange_vec {
	struct xr_prange	*v;
	size_t			n, cap;
};

/* One extent mapping (or part of one) of a file. */
struct xr_map {
	blk64_t		lblk;
	blk64_t		pblk;
	blk64_t		len;
	int		uninit;
};

struct xr_map_vec {
	struct xr_map	*v;
	size_t		n, cap;
};

/* ranges.c: the vectors. */
errcode_t xr_prange_push(struct xr_prange_vec *v, blk64_t pblk, blk64_t len);
errcode_t xr_map_push(struct xr_map_vec *v, const struct xr_map *m);
void xr_prange_vec_free(struct xr_prange_vec *v);
void xr_map_vec_free(struct xr_map_vec *v);

/*
 * extent_walk.c: every leaf extent of an extent-mapped inode, in file
 * order, and with XR_WALK_INDEX every index entry (func returns 0,
 * EXTREF_ITER_STOP or an error).
 */
#define XR_WALK_INDEX	0x0001
typedef errcode_t (*xr_extent_func)(const struct ext2fs_extent *e,
				    void *priv);
errcode_t xr_extent_walk(ext2_filsys fs, ext2_ino_t ino,
			 struct ext2_inode *inode, int flags,
			 xr_extent_func func, void *priv);
/* The same from the leaf extent at or before lblk (or the first after
 * it), reading only the path there; lblk 0, or XR_WALK_INDEX: the whole
 * walk. */
errcode_t xr_extent_walk_from(ext2_filsys fs, ext2_ino_t ino,
			      struct ext2_inode *inode, int flags,
			      blk64_t lblk, xr_extent_func func, void *priv);

/* extent_map.c: mappings of an extent-mapped inode. */
errcode_t xr_get_mappings(ext2_filsys fs, ext2_ino_t ino,
			  struct ext2_inode *inode, blk64_t lstart,
			  blk64_t lend, struct xr_map_vec *out);
errcode_t xr_unmap(ext2_filsys fs, ext2_ino_t ino, struct ext2_inode *inode,
		   blk64_t lstart, blk64_t lend, struct xr_prange_vec *removed);
errcode_t xr_map_insert(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode, const struct xr_map *m);

/* extent_node.c: the one reader of raw extent nodes. */
#define XR_EXT_MAX_DEPTH	5	/* the kernel's EXT4_MAX_EXTENT_DEPTH */
#define XR_EXT_ANY_DEPTH	(-1)	/* a root: any depth up to the max */
#define XR_EXT_CSUM		0x1	/* check a block's tail checksum */
errcode_t xr_extent_node_check(ext2_filsys fs, ext2_ino_t ino,
			       const void *eh, int size, int depth, int flags);
errcode_t xr_extent_block_read(ext2_filsys fs, ext2_ino_t ino, blk64_t pblk,
			       int depth, void *buf);
errcode_t xr_extent_tree_verify(ext2_filsys fs, ext2_ino_t ino,
				const struct ext2_inode *inode,
				blk64_t *nodes);

/*
 * extent_bulk.c: an empty extent tree built from its mappings at once,
 * planned (memory, room) before anything changes, then built.
 */
struct xr_ext_level {
	void		*v;		/* 12-byte leaf or index entries */
	size_t		n, cap;
};
struct xr_extent_plan {
	/* lv[0]: the leaves' extents; lv[d]: the index entries naming the
	 * nodes of level d - 1; lv[depth]: what the inode's root holds */
	struct xr_ext_level	lv[XR_EXT_MAX_DEPTH + 1];
	int			depth;
	blk64_t			data, nodes;	/* blocks mapped; the tree's */
	blk64_t			*taken;		/* the tree's, as allocated */
	size_t			ntaken;
	char			*buf;
};
int xr_extent_tree_empty(const struct ext2_inode *inode);
errcode_t xr_extent_plan(ext2_filsys fs, const struct xr_map *m, size_t n,
			 struct xr_extent_plan *p);
errcode_t xr_extent_plan_build(ext2_filsys fs, ext2_ino_t ino,
			       struct ext2_inode *inode,
			       struct xr_extent_plan *p);
void xr_extent_plan_free(struct xr_extent_plan *p);
errcode_t xr_extent_build(ext2_filsys fs, ext2_ino_t ino,
			  struct ext2_inode *inode, const struct xr_map *m,
			  size_t n);

/* extent_rebuild.c: a range's many new mappings, the tree built again. */
errcode_t xr_extent_rebuild(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode *inode, blk64_t lstart,
			    blk64_t lend, const struct xr_map *nm, size_t nnew,
			    struct xr_prange_vec *removed);

/* extent_splice.c: the same change in one write, where it fits. */
errcode_t xr_extent_splice(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, blk64_t lstart,
			   blk64_t lend, const struct xr_map *nm, size_t nnew,
			   struct xr_prange_vec *removed);
errcode_t xr_replace_range(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode *inode, blk64_t lstart,
			   blk64_t lend, const struct xr_map *nm, size_t nnew,
			   struct xr_prange_vec *removed);

/* Blocks kept free for extent-tree splits during a remap. */
#define XR_EXTENT_SLACK	8

#endif /* XR_EXTENT_H */
