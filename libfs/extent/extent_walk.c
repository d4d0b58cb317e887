/*
 * extent_walk.c --- the one walk of an inode's leaf extents, in file
 * order, for the file operations (extent_map.c) and, through
 * extref_iterate_extents(), for debugfs.extref.
 *
 * The nodes are read through libext2fs's extent handle, which checks
 * each node's header (ext2fs_extent_header_verify, the check
 * extent_node.c also runs) and its checksum as it reads it.  The
 * checker keeps its own walk (check/fsck_extents.c): it reads the nodes
 * of all inodes a level at a time, sorted by block and in runs, which a
 * per-inode walk cannot do without making fsck slower.
 */
#include "extent/xr_extent.h"

/*
 * Call func for every leaf extent of an extent-mapped inode and, with
 * XR_WALK_INDEX, every index entry too (once, before the leaves below
 * it; e_flags without EXT2_EXTENT_FLAGS_LEAF, e_pblk the child block).
 * func returns 0 to go on, EXTREF_ITER_STOP to stop (0 is returned), or
 * an error, which is returned.  The end of the tree is 0; any other
 * error of libext2fs's walk (a damaged node) is returned as it is.
 */
errcode_t xr_extent_walk(ext2_filsys fs, ext2_ino_t ino,
			 struct ext2_inode *inode, int flags,
			 xr_extent_func func, void *priv)
{
	return xr_extent_walk_from(fs, ino, inode, flags, 0, func, priv);
}

/*
 * Where a walk from lblk starts: the leaf extent that holds lblk, or the
 * last one before it, or the first one after it (lblk before the first
 * extent of the leaf the index leads to), as ext2fs_extent_goto leaves
 * the handle; only the nodes on the path to it are read.  Extents before
 * it all end at or before lblk in a sound tree (each leaf's extents lie
 * at or after its index key).  *op: what the walk gets first.
 *
 * The goto leaves an index entry it reached going forward marked as not
 * yet descended: the walk, coming up to it, goes down into the same
 * child again and meets extents it has passed (seen_end, below).
 */
static errcode_t walk_start(ext2_extent_handle_t h, blk64_t lblk, int *op)
{
	struct ext2fs_extent e;
	errcode_t err;

	*op = EXT2_EXTENT_ROOT;
	if (!lblk)
		return 0;
	err = ext2fs_extent_goto(h, lblk);
	/* no extent to stand on (an empty tree or leaf): walk from the
	 * root, which ends as it always did */
	if ((!err || err == EXT2_ET_EXTENT_NOT_FOUND) &&
	    !ext2fs_extent_get(h, EXT2_EXTENT_CURRENT, &e) &&
	    (e.e_flags & EXT2_EXTENT_FLAGS_LEAF)) {
		*op = EXT2_EXTENT_CURRENT;
		return 0;
	}
	if (!err || err == EXT2_ET_EXTENT_NOT_FOUND ||
	    err == EXT2_ET_EXTENT_NO_NEXT || err == EXT2_ET_EXTENT_NO_DOWN ||
	    err == EXT2_ET_NO_CURRENT_NODE)
		return 0;
	return err;
}

/*
 * The most steps a walk of a sound tree takes: each node is entered
 * once and each of its entries met at most twice (down and back up),
 * and the nodes are at most the inode's blocks, at most the
 * filesystem's.  Index entries that all name one block would make
 * libext2fs's walk go down into it again and again (entries to the
 * power of the depth): past this bound the tree is damaged.
 */
static __u64 walk_bound(ext2_filsys fs, const struct ext2_inode *inode)
{
	blk64_t nodes = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)
						 inode) / (fs->blocksize / 512);

	if (nodes > ext2fs_blocks_count(fs->super))
		nodes = ext2fs_blocks_count(fs->super);
	return 2 * (nodes + 1) * (fs->blocksize / 12 + 1);
}

errcode_t xr_extent_walk_from(ext2_filsys fs, ext2_ino_t ino,
			      struct ext2_inode *inode, int flags,
			      blk64_t lblk, xr_extent_func func, void *priv)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent e;
	errcode_t err;
	int op, seek;
	/* one entry a step, index entries too, so that the steps count */
	int next = EXT2_EXTENT_NEXT;
	blk64_t seen_end = 0;	/* a seek's walk: end of the last extent */
	__u64 steps = walk_bound(fs, inode);

	if (!(inode->i_flags & EXT4_EXTENTS_FL))
		return EXT2_ET_INODE_NOT_EXTENT;
	err = ext2fs_extent_open2(fs, ino, inode, &h);
	if (err)
		return err;
	err = walk_start(h, (flags & XR_WALK_INDEX) ? 0 : lblk, &op);
	seek = op == EXT2_EXTENT_CURRENT;
	while (!err && !(err = ext2fs_extent_get(h, op, &e))) {
		op = next;
		if (!steps--) {
			err = EXT2_ET_EXTENT_INDEX_BAD;
			break;
		}
		if (e.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT)
			continue;
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) &&
		    !(flags & XR_WALK_INDEX))
			continue;
		if (seek) {
			if (seen_end && e.e_lblk < seen_end)
				continue;	/* met again (walk_start) */
			seen_end = e.e_lblk + e.e_len;
		}
		err = func(&e, priv);
		if (err)
			break;
	}
	if (err == EXT2_ET_EXTENT_NO_NEXT || err == EXTREF_ITER_STOP)
		err = 0;
	ext2fs_extent_free(h);
	return err;
}

struct pub_walk {
	extref_extent_func	func;
	void			*priv;
};

static errcode_t pub_extent(const struct ext2fs_extent *e, void *priv)
{
	struct pub_walk *w = priv;
	struct extref_extent out;

	out.lblk = e->e_lblk;
	out.pblk = e->e_pblk;
	out.len = e->e_len;
	out.unwritten = (e->e_flags & EXT2_EXTENT_FLAGS_UNINIT) != 0;
	out.index = !(e->e_flags & EXT2_EXTENT_FLAGS_LEAF);
	return w->func(&out, w->priv);
}

errcode_t extref_iterate_extents(extref_fs_t xfs, ext2_ino_t ino,
				 struct ext2_inode *inode, int flags,
				 extref_extent_func func, void *priv)
{
	struct pub_walk w = { .func = func, .priv = priv };

	return xr_extent_walk(extref_fs_ext2(xfs), ino, inode,
			      (flags & EXTREF_EXTENTS_INDEX) ? XR_WALK_INDEX : 0,
			      pub_extent, &w);
}
