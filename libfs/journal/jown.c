/*
 * jown.c --- the journal inode's blocks are its own: no block twice in
 * its map, none in the group metadata (superblocks, descriptors and
 * their reserve, bitmaps, inode tables), none mapped by another inode
 * (data, extent tree or indirect blocks, extended attribute block),
 * inode 5's tree included.  A journal that shares a block would write
 * its log over that block at the next commit, and a replay would read
 * back what it just wrote: every writer and every replay refuses it
 * (EXTREF_ERR_JNL_OVERLAP); fsck.extref repairs it as e2fsck treats a
 * bad journal inode.
 */
#include <string.h>
#include "journal_int.h"

struct own_ctx {
	ext2fs_block_bitmap jmap;	/* the journal's blocks */
	blk64_t		first, nblocks;	/* the bitmap's range */
	ext2_ino_t	ino;		/* the inode being looked at */
	ext2_ino_t	hit;		/* one that maps a journal block */
	blk64_t		blk;		/* ... that block */
};

static int test(struct own_ctx *c, blk64_t blk)
{
	return blk >= c->first && blk < c->nblocks &&
	       ext2fs_test_block_bitmap2(c->jmap, blk);
}

static int own_blk(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t lblk,
		   blk64_t ref_blk, int ref_offset, void *priv)
{
	struct own_ctx *c = priv;

	(void)fs; (void)lblk; (void)ref_blk; (void)ref_offset;
	if (!test(c, *blocknr))
		return 0;
	c->hit = c->ino;
	c->blk = *blocknr;
	return BLOCK_ABORT;
}

/* Does [blk, blk + n) hold a journal block?  (Out of range: no.) */
static int test_range(struct own_ctx *c, blk64_t blk, blk64_t n)
{
	if (blk < c->first || blk >= c->nblocks || n > c->nblocks - blk)
		return 0;
	return !ext2fs_test_block_bitmap_range2(c->jmap, blk, n);
}

/* An extent-mapped inode, extent by extent (index blocks included). */
static errcode_t own_extents(ext2_filsys fs, struct own_ctx *c,
			     const struct ext2_inode *inode)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent e;
	errcode_t err;
	int op = EXT2_EXTENT_ROOT;
	/* every index entry names a block of the file's own: one more than
	 * its blocks is a tree whose entries name one block again (crafted),
	 * walked once a path; not this check's to judge, and bounded */
	blk64_t left = ext2fs_get_stat_i_blocks(fs, (struct ext2_inode *)inode)
		       / (fs->blocksize / 512) + 8;

	err = ext2fs_extent_open(fs, c->ino, &h);
	if (err)
		return 0;		/* not this check's to judge */
	while (!(err = ext2fs_extent_get(h, op, &e))) {
		op = EXT2_EXTENT_NEXT;
		if (e.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT)
			continue;
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) && !left--)
			break;
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) ? test(c, e.e_pblk)
		    : test_range(c, e.e_pblk, e.e_len)) {
			c->hit = c->ino;
			c->blk = e.e_pblk;
			if (e.e_flags & EXT2_EXTENT_FLAGS_LEAF)
				(void)ext2fs_find_first_set_block_bitmap2(
					c->jmap, e.e_pblk,
					e.e_pblk + e.e_len - 1, &c->blk);
			break;
		}
	}
	ext2fs_extent_free(h);
	return 0;
}

/* Mark the journal's blocks; a block mapped twice is an overlap. */
static errcode_t mark_journal(struct xr_journal *j, struct own_ctx *c)
{
	__u32 i;

	for (i = 0; i < j->sb.maxlen; i++) {
		if (ext2fs_test_block_bitmap2(c->jmap, j->map[i])) {
			xr_jdetail("the journal maps block %llu twice",
				   (unsigned long long)j->map[i]);
			return EXTREF_ERR_JNL_OVERLAP;
		}
		ext2fs_mark_block_bitmap2(c->jmap, j->map[i]);
	}
	return 0;
}

static errcode_t check_groups(ext2_filsys fs, struct own_ctx *c)
{
	ext2fs_block_bitmap meta;
	blk64_t b, end;
	errcode_t err;
	dgrp_t g;

	err = ext2fs_allocate_block_bitmap(fs, "group metadata", &meta);
	if (err)
		return err;
	for (g = 0; g < fs->group_desc_count; g++) {
		ext2fs_reserve_super_and_bgd(fs, g, meta);
		ext2fs_mark_block_bitmap2(meta, ext2fs_block_bitmap_loc(fs, g));
		ext2fs_mark_block_bitmap2(meta, ext2fs_inode_bitmap_loc(fs, g));
		b = ext2fs_inode_table_loc(fs, g);
		end = b + fs->inode_blocks_per_group;
		if (end > ext2fs_blocks_count(fs->super))
			end = ext2fs_blocks_count(fs->super);
		for (; b < end; b++)
			ext2fs_mark_block_bitmap2(meta, b);
	}
	for (b = fs->super->s_first_data_block;
	     b < ext2fs_blocks_count(fs->super) && !c->blk; b++)
		if (ext2fs_test_block_bitmap2(meta, b) && test(c, b))
			c->blk = b;
	ext2fs_free_block_bitmap(meta);
	if (c->blk)
		xr_jdetail("block %llu of the journal is group metadata",
			   (unsigned long long)c->blk);
	return c->blk ? EXTREF_ERR_JNL_OVERLAP : 0;
}

/* Every inode in use (and every reserved one) but the journal's. */
static errcode_t check_inodes(ext2_filsys fs, ext2_ino_t jino,
			      struct own_ctx *c)
{
	ext2_inode_scan scan;
	struct ext2_inode inode;
	errcode_t err;

	err = ext2fs_open_inode_scan(fs, 0, &scan);
	if (err)
		return err;
	while (!c->hit) {
		err = ext2fs_get_next_inode(scan, &c->ino, &inode);
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
			continue;
		if (err || !c->ino)
			break;
		if (c->ino == jino || (!inode.i_links_count &&
		     c->ino >= EXT2_FIRST_INO(fs->super)) || !inode.i_mode)
			continue;
		if (test(c, ext2fs_file_acl_block(fs, &inode))) {
			c->hit = c->ino;
			c->blk = ext2fs_file_acl_block(fs, &inode);
			break;
		}
		if (!ext2fs_inode_has_valid_blocks2(fs, &inode))
			continue;
		if (inode.i_flags & EXT4_EXTENTS_FL)
			(void)own_extents(fs, c, &inode);
		else
			(void)extref_block_iterate(fs, c->ino,
					BLOCK_FLAG_READ_ONLY, own_blk, c);
	}
	ext2fs_close_inode_scan(scan);
	if (!err && c->hit)
		xr_jdetail("block %llu of the journal is mapped by inode %u too",
			   (unsigned long long)c->blk, c->hit);
	return err ? err : c->hit ? EXTREF_ERR_JNL_OVERLAP : 0;
}

errcode_t xr_journal_check_blocks(struct xr_journal *j)
{
	ext2_filsys fs = j->fs;
	struct own_ctx c;
	errcode_t err;

	memset(&c, 0, sizeof(c));
	c.first = fs->super->s_first_data_block;
	c.nblocks = ext2fs_blocks_count(fs->super);
	err = ext2fs_allocate_block_bitmap(fs, "journal blocks", &c.jmap);
	if (err)
		return err;
	err = mark_journal(j, &c);
	if (!err)
		err = check_groups(fs, &c);
	if (!err)
		err = check_inodes(fs, fs->super->s_journal_inum, &c);
	ext2fs_free_block_bitmap(c.jmap);
	return err;
}

/* extref.h: the check through fs's own channel. */
errcode_t extref_journal_check_blocks(ext2_filsys fs)
{
	struct xr_journal *j = NULL;
	errcode_t err;

	/* bigalloc: no extref image has it (mkfs.extref refuses it), and
	 * its maps name clusters: e2fsck's to judge */
	if (!ext2fs_has_feature_journal(fs->super) ||
	    ext2fs_has_feature_bigalloc(fs->super) ||
	    !fs->super->s_journal_inum || xr_journal_open(fs, fs->io, &j))
		return 0;
	err = xr_journal_check_blocks(j);
	xr_journal_close(j);
	/* an inode that cannot be read (a bad checksum) is e2fsck's */
	return err == EXTREF_ERR_JNL_OVERLAP ? err : 0;
}
