/*
 * owned.c --- proof that a block of inode 5 is the tree's own, made
 * before the tree writes it.
 *
 * Inode 5's extent tree is as hostile as the rest of an image: inside
 * h_nblocks or past it, it may map a block that is group metadata,
 * another file's data, or one block at two lblks.  The tree writes an lblk
 * only once it is proven its own (xr_write_lblk refuses any other): a
 * block it allocated itself in this session is; any other block must be
 *   - inside the filesystem;
 *   - none of the groups' superblocks, descriptors, reserved GDT blocks,
 *     bitmaps or inode tables, nor an extent block of inode 5;
 *   - marked in use in the block bitmap;
 *   - covered by no record of the tree (a record is counted data);
 *   - mapped at no other lblk of inode 5;
 *   - and, past the h_nblocks the tree was opened with (blocks an
 *     interrupted commit left, which the tree never wrote), mapped by no
 *     other inode: every inode is read once, the first time such a
 *     block is to be reused.
 * Each lblk is proven once per open.
 */
#include "extref_int.h"

static errcode_t new_map(ext2_filsys fs, const char *descr,
			 ext2fs_block_bitmap *ret)
{
	int type = fs->default_bitmap_type;
	errcode_t err;

	/* Extents, not a bit per block: these maps hold few runs. */
	fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
	err = ext2fs_allocate_block_bitmap(fs, descr, ret);
	fs->default_bitmap_type = type;
	return err;
}

static int in_fs(ext2_filsys fs, blk64_t b, blk64_t len)
{
	blk64_t total = ext2fs_blocks_count(fs->super);

	return len && b >= fs->super->s_first_data_block && b < total &&
	       len <= total - b;
}

static void mark_range(ext2_filsys fs, ext2fs_block_bitmap map, blk64_t b,
		       blk64_t len)
{
	if (in_fs(fs, b, len))
		ext2fs_mark_block_bitmap_range2(map, b, len);
}

/* Superblocks, descriptors, reserved GDT, bitmaps, inode tables. */
static void mark_group_meta(ext2_filsys fs, ext2fs_block_bitmap map)
{
	blk64_t super, old_desc, new_desc;
	blk_t used;
	dgrp_t g;

	for (g = 0; g < fs->group_desc_count; g++) {
		ext2fs_super_and_bgd_loc2(fs, g, &super, &old_desc, &new_desc,
					  &used);
		if (super || g == 0)
			mark_range(fs, map, ext2fs_group_first_block2(fs, g),
				   used);
		if (new_desc)
			mark_range(fs, map, new_desc, 1);
		mark_range(fs, map, ext2fs_block_bitmap_loc(fs, g), 1);
		mark_range(fs, map, ext2fs_inode_bitmap_loc(fs, g), 1);
		mark_range(fs, map, ext2fs_inode_table_loc(fs, g),
			   fs->inode_blocks_per_group);
	}
}

/*
 * Inode 5's blocks: its leaf blocks into own_blocks (those met twice
 * into own_twice as well), its extent index blocks into meta_blocks.
 */
static int note_ino5_block(ext2_filsys fs, blk64_t *blocknr,
			   e2_blkcnt_t blockcnt, blk64_t ref_blk,
			   int ref_offset, void *priv)
{
	struct extref_tree *t = priv;

	(void) ref_blk; (void) ref_offset;
	if (!in_fs(fs, *blocknr, 1))
		return 0;
	if (blockcnt < 0)
		ext2fs_mark_block_bitmap2(t->meta_blocks, *blocknr);
	else if (ext2fs_test_block_bitmap2(t->own_blocks, *blocknr))
		ext2fs_mark_block_bitmap2(t->own_twice, *blocknr);
	else
		ext2fs_mark_block_bitmap2(t->own_blocks, *blocknr);
	return 0;
}

/* The maps every proof needs, made on the first one. */
static errcode_t build_maps(struct extref_tree *t)
{
	ext2_filsys fs = t->fs;
	errcode_t err = 0;

	if (t->meta_blocks)
		return 0;
	if (!fs->block_map)
		err = ext2fs_read_block_bitmap(fs);
	if (!err)
		err = new_map(fs, "extref tree: metadata", &t->meta_blocks);
	if (!err)
		err = new_map(fs, "extref tree: own blocks", &t->own_blocks);
	if (!err)
		err = new_map(fs, "extref tree: mapped twice", &t->own_twice);
	if (!err) {
		mark_group_meta(fs, t->meta_blocks);
		err = extref_block_iterate(fs, EXTREF_INO, BLOCK_FLAG_READ_ONLY,
				       note_ino5_block, t);
	}
	if (err)
		xr_owned_free(t);
	return err;
}

static int note_foreign(ext2_filsys fs, blk64_t *blocknr,
			e2_blkcnt_t blockcnt, blk64_t ref_blk,
			int ref_offset, void *priv)
{
	struct extref_tree *t = priv;

	(void) fs; (void) blockcnt; (void) ref_blk; (void) ref_offset;
	if (in_fs(t->fs, *blocknr, 1) &&
	    ext2fs_test_block_bitmap2(t->own_blocks, *blocknr))
		ext2fs_mark_block_bitmap2(t->foreign, *blocknr);
	return 0;
}

/* One inode's blocks, data and metadata, that inode 5 also maps. */
static errcode_t scan_one(struct extref_tree *t, ext2_ino_t ino,
			  struct ext2_inode *inode)
{
	blk64_t acl = ext2fs_file_acl_block(t->fs, inode);

	if (acl && in_fs(t->fs, acl, 1) &&
	    ext2fs_test_block_bitmap2(t->own_blocks, acl))
		ext2fs_mark_block_bitmap2(t->foreign, acl);
	if (!ext2fs_inode_has_valid_blocks2(t->fs, inode))
		return 0;
	return extref_block_iterate(t->fs, ino, BLOCK_FLAG_READ_ONLY, note_foreign,
				t);
}

/*
 * Every other inode's blocks, once: those inode 5 maps too go to
 * t->foreign.  An inode that cannot be read fails the proof.
 */
static errcode_t scan_foreign(struct extref_tree *t)
{
	ext2_filsys fs = t->fs;
	int isz = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode *inode = NULL;
	ext2_inode_scan scan = NULL;
	ext2_ino_t ino;
	errcode_t err;

	if (t->foreign)
		return 0;
	err = new_map(fs, "extref tree: mapped elsewhere", &t->foreign);
	if (!err)
		err = ext2fs_get_mem(isz, &inode);
	if (!err)
		err = ext2fs_open_inode_scan(fs, 0, &scan);
	while (!err) {
		err = ext2fs_get_next_inode_full(scan, &ino, inode, isz);
		if (err || ino == 0)
			break;
		if (ino == EXTREF_INO || (ino >= EXT2_FIRST_INO(fs->super) &&
		    (inode->i_links_count == 0 || inode->i_dtime)))
			continue;
		err = scan_one(t, ino, inode);
	}
	if (scan)
		ext2fs_close_inode_scan(scan);
	ext2fs_free_mem(&inode);
	if (err && t->foreign) {
		ext2fs_free_block_bitmap(t->foreign);
		t->foreign = NULL;
	}
	return err;
}

/* Whether pblk, which inode 5 maps at lblk, passes every check above. */
static errcode_t prove_pblk(struct extref_tree *t, __u32 lblk, blk64_t pblk)
{
	ext2_filsys fs = t->fs;
	__u32 count;
	errcode_t err;

	err = build_maps(t);
	if (err)
		return err;
	if (!in_fs(fs, pblk, 1) ||
	    ext2fs_test_block_bitmap2(t->meta_blocks, pblk) ||
	    !ext2fs_test_block_bitmap2(fs->block_map, pblk) ||
	    !ext2fs_test_block_bitmap2(t->own_blocks, pblk) ||
	    ext2fs_test_block_bitmap2(t->own_twice, pblk))
		return EXTREF_ERR_TREE_BLOCK_FOREIGN;
	err = extref_tree_get_count(t, pblk, &count);
	if (err)
		return err;
	if (count >= 2)
		return EXTREF_ERR_TREE_BLOCK_FOREIGN;
	if (lblk >= t->open_nblocks) {
		err = scan_foreign(t);
		if (err)
			return err;
		if (ext2fs_test_block_bitmap2(t->foreign, pblk))
			return EXTREF_ERR_TREE_BLOCK_FOREIGN;
	}
	return 0;
}

/* Make lblk writable by the tree, or say why it is not the tree's. */
errcode_t xr_lblk_prove(struct extref_tree *t, __u32 lblk)
{
	errcode_t err;

	if (lblk >= t->pmap_len || !t->pmap[lblk])
		return EXTREF_ERR_INO5_SIZE;
	if (t->pmap_own[lblk])
		return 0;
	err = prove_pblk(t, lblk, t->pmap[lblk]);
	if (!err)
		t->pmap_own[lblk] = 1;
	return err;
}

struct from_walk {
	struct extref_tree	*t;
	__u32			from;
	errcode_t		err;
};

static int prove_one(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		     blk64_t ref_blk, int ref_offset, void *priv)
{
	struct from_walk *w = priv;
	struct extref_tree *t = w->t;

	(void) fs; (void) ref_blk; (void) ref_offset;
	if (blockcnt < (e2_blkcnt_t)w->from)
		return 0;
	if ((__u64)blockcnt < t->pmap_len && t->pmap[blockcnt] == *blocknr &&
	    t->pmap_own[blockcnt])
		return 0;
	w->err = prove_pblk(t, blockcnt > 0xffffffffLL ? 0xffffffffU :
			    (__u32)blockcnt, *blocknr);
	return w->err ? BLOCK_ABORT : 0;
}

/*
 * Whether every block inode 5 maps from lblk `from` on is the tree's own,
 * so that freeing them (giving the file back) frees nobody else's.
 */
errcode_t xr_lblks_prove_from(struct extref_tree *t, __u32 from)
{
	struct from_walk w = { t, from, 0 };
	errcode_t err;

	err = build_maps(t);
	if (!err)
		err = extref_block_iterate(t->fs, EXTREF_INO,
				       BLOCK_FLAG_READ_ONLY |
				       BLOCK_FLAG_DATA_ONLY,
				       prove_one, &w);
	return err ? err : w.err;
}

/* A block the tree has just allocated is its own. */
void xr_lblk_fresh(struct extref_tree *t, __u32 lblk)
{
	blk64_t pblk = t->pmap[lblk];

	t->pmap_own[lblk] = 1;
	if (t->own_blocks && in_fs(t->fs, pblk, 1))
		ext2fs_mark_block_bitmap2(t->own_blocks, pblk);
}

void xr_owned_free(struct extref_tree *t)
{
	ext2fs_block_bitmap *maps[] = { &t->meta_blocks, &t->own_blocks,
					&t->own_twice, &t->foreign };
	size_t i;

	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		if (*maps[i]) {
			ext2fs_free_block_bitmap(*maps[i]);
			*maps[i] = NULL;
		}
}
