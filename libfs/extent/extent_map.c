/*
 * extent_map.c --- read, remove and add extent mappings of an inode.
 *
 * These change only the inode's extent tree and i_blocks; they never
 * free or allocate data blocks and never touch reference counts.  The
 * callers pair them with counts.c in the write order of FORMAT.md.
 */
#include "extent/xr_extent.h"
#include "txn/xr_zone.h"

static blk64_t ext_end(const struct ext2fs_extent *e)
{
	return e->e_lblk + e->e_len;
}

static int is_uninit(const struct ext2fs_extent *e)
{
	return (e->e_flags & EXT2_EXTENT_FLAGS_UNINIT) != 0;
}

struct clip {
	blk64_t			lstart, lend;
	struct xr_map_vec	*out;
	const struct xr_zone	*zone;	/* a writer's system zone */
};

static errcode_t clip_extent(const struct ext2fs_extent *e, void *priv)
{
	struct clip *c = priv;
	struct xr_map m;
	errcode_t err;

	if (e->e_lblk >= c->lend)
		return EXTREF_ITER_STOP;
	if (ext_end(e) <= c->lstart)
		return 0;
	m.lblk = e->e_lblk > c->lstart ? e->e_lblk : c->lstart;
	m.len = (ext_end(e) < c->lend ? ext_end(e) : c->lend) - m.lblk;
	m.pblk = e->e_pblk + (m.lblk - e->e_lblk);
	m.uninit = is_uninit(e);
	err = xr_zone_check_in(c->zone, m.pblk, m.len);
	return err ? err : xr_map_push(c->out, &m);
}

/*
 * Every leaf extent overlapping [lstart, lend), clipped to it.  In an
 * image open for writing, a mapping of the system zone (metadata, the
 * journal) is EXTREF_ERR_ZONE_MAP: what an operation reads, writes in
 * place or frees is never the filesystem's own metadata.
 */
errcode_t xr_get_mappings(ext2_filsys fs, ext2_ino_t ino,
			  struct ext2_inode *inode, blk64_t lstart,
			  blk64_t lend, struct xr_map_vec *out)
{
	struct clip c = { .lstart = lstart, .lend = lend, .out = out,
			  .zone = ino == EXTREF_INO ? NULL : xr_zone_of(fs) };
	errcode_t err;

	err = xr_extent_walk_from(fs, ino, inode, 0, lstart, clip_extent, &c);
	return err == EXT2_ET_EXTENT_NO_DOWN ? 0 : err;
}

/*
 * Position h on the first extent that ends after blk.  Returns
 * EXT2_ET_EXTENT_NO_NEXT when there is none.
 */
static errcode_t seek_extent(ext2_extent_handle_t h, blk64_t blk,
			     struct ext2fs_extent *e)
{
	errcode_t err = ext2fs_extent_goto(h, blk);

	if (err && err != EXT2_ET_EXTENT_NOT_FOUND)
		return err;
	err = ext2fs_extent_get(h, EXT2_EXTENT_CURRENT, e);
	if (err)
		return EXT2_ET_EXTENT_NO_NEXT;	/* no extent at all */
	while (ext_end(e) <= blk) {
		err = ext2fs_extent_get(h, EXT2_EXTENT_NEXT_LEAF, e);
		if (err)
			return err;
	}
	return 0;
}

/* Take [os, oe) out of extent e, the handle's current extent. */
static errcode_t cut_extent(ext2_extent_handle_t h, struct ext2fs_extent *e,
			    blk64_t os, blk64_t oe)
{
	struct ext2fs_extent tail;
	errcode_t err;

	if (os == e->e_lblk && oe == ext_end(e)) {
		/*
		 * The next extent may now be the first of its leaf: the
		 * index above must follow (a removed leaf has no current
		 * node left to fix, which is fine).
		 */
		err = ext2fs_extent_delete(h, 0);
		if (!err)
			err = ext2fs_extent_fix_parents(h);
		return err == EXT2_ET_NO_CURRENT_NODE ? 0 : err;
	}
	if (os == e->e_lblk) {
		e->e_pblk += oe - e->e_lblk;
		e->e_len = ext_end(e) - oe;
		e->e_lblk = oe;
		err = ext2fs_extent_replace(h, 0, e);
		return err ? err : ext2fs_extent_fix_parents(h);
	}
	tail = *e;
	tail.e_lblk = oe;
	tail.e_pblk = e->e_pblk + (oe - e->e_lblk);
	tail.e_len = ext_end(e) - oe;
	e->e_len = os - e->e_lblk;
	err = ext2fs_extent_replace(h, 0, e);
	if (!err && tail.e_len)
		err = ext2fs_extent_insert(h, EXT2_EXTENT_INSERT_AFTER, &tail);
	return err ? err : ext2fs_extent_fix_parents(h);
}

/*
 * Remove every mapping of [lstart, lend).  The physical ranges that lost
 * a mapping are appended to removed, in file order.  The inode is
 * written.
 */
errcode_t xr_unmap(ext2_filsys fs, ext2_ino_t ino, struct ext2_inode *inode,
		   blk64_t lstart, blk64_t lend, struct xr_prange_vec *removed)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent e;
	blk64_t os, oe;
	const struct xr_zone *zone = ino == EXTREF_INO ? NULL :
				     xr_zone_of(fs);
	errcode_t err;

	if (!(inode->i_flags & EXT4_EXTENTS_FL))
		return EXT2_ET_INODE_NOT_EXTENT;
	err = ext2fs_extent_open2(fs, ino, inode, &h);
	if (err)
		return err;
	while (lstart < lend) {
		err = seek_extent(h, lstart, &e);
		if (err || e.e_lblk >= lend)
			break;
		os = e.e_lblk > lstart ? e.e_lblk : lstart;
		oe = ext_end(&e) < lend ? ext_end(&e) : lend;
		err = xr_zone_check_in(zone, e.e_pblk + (os - e.e_lblk),
				       oe - os);
		if (!err)
			err = xr_prange_push(removed,
					     e.e_pblk + (os - e.e_lblk),
					     oe - os);
		if (!err)
			err = cut_extent(h, &e, os, oe);
		if (!err)
			err = ext2fs_iblk_sub_blocks(fs, inode, oe - os);
		if (err)
			break;
		lstart = oe;
	}
	if (err == EXT2_ET_EXTENT_NO_NEXT)
		err = 0;
	ext2fs_extent_free(h);
	return err ? err : ext2fs_write_inode(fs, ino, inode);
}

/* Map one piece (at most the largest extent length) into a hole. */
static errcode_t insert_piece(ext2_extent_handle_t h, const struct xr_map *m)
{
	struct ext2fs_extent e, cur;
	blk64_t max = m->uninit ? EXT_UNINIT_MAX_LEN : EXT_INIT_MAX_LEN;
	errcode_t err;

	e.e_lblk = m->lblk;
	e.e_pblk = m->pblk;
	e.e_len = m->len;
	e.e_flags = m->uninit ? EXT2_EXTENT_FLAGS_UNINIT : 0;
	err = ext2fs_extent_goto(h, m->lblk);
	if (!err)
		return EXTREF_ERR_RANGE;	/* already mapped */
	if (err != EXT2_ET_EXTENT_NOT_FOUND)
		return err;
	if (ext2fs_extent_get(h, EXT2_EXTENT_CURRENT, &cur))
		err = ext2fs_extent_insert(h, 0, &e);		/* empty */
	else if (cur.e_lblk > m->lblk)
		err = ext2fs_extent_insert(h, 0, &e);		/* before */
	else if (ext_end(&cur) == m->lblk &&
		 cur.e_pblk + cur.e_len == m->pblk &&
		 is_uninit(&cur) == m->uninit && cur.e_len + m->len <= max) {
		cur.e_len += m->len;				/* extend */
		err = ext2fs_extent_replace(h, 0, &cur);
	} else {
		err = ext2fs_extent_insert(h, EXT2_EXTENT_INSERT_AFTER, &e);
	}
	return err ? err : ext2fs_extent_fix_parents(h);
}

/*
 * Map [m->lblk, +m->len) to m->pblk.  The logical range must be a hole.
 * i_blocks grows by the mapped blocks; the inode is written.
 */
errcode_t xr_map_insert(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode, const struct xr_map *m)
{
	ext2_extent_handle_t h;
	struct xr_map piece = *m;
	blk64_t max = m->uninit ? EXT_UNINIT_MAX_LEN : EXT_INIT_MAX_LEN;
	errcode_t err;

	err = ext2fs_extent_open2(fs, ino, inode, &h);
	if (err)
		return err;
	while (!err && piece.len) {
		struct xr_map p = piece;

		if (p.len > max)
			p.len = max;
		err = insert_piece(h, &p);
		if (!err)
			err = ext2fs_iblk_add_blocks(fs, inode, p.len);
		piece.lblk += p.len;
		piece.pblk += p.len;
		piece.len -= p.len;
	}
	ext2fs_extent_free(h);
	return err ? err : ext2fs_write_inode(fs, ino, inode);
}
