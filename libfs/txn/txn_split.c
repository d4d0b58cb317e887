/*
 * txn_split.c --- a change bigger than the journal, without parts anyone
 * can see: the blocks an operation allocates are written in place early.
 *
 * A block allocated since the last commit is one no committed path
 * reaches: the committed bitmaps have it free (blocks freed since the
 * commit stay marked in use until it, txn.c), so no allocation hands out
 * a block the committed state still maps.  What such a block holds before
 * the commit that links it is junk in free space: stock e2fsck, the kernel
 * and fsck.extref ignore it.  So, in a transaction that asks for it
 * (xr_tx_spill_on: a recursive reflink, a reflink or clone whose new
 * extent tree may be large; the image builder's update), the new
 * directory, extent, symlink and extended attribute blocks (and the
 * tree's appended nodes; with xr_tx_spill_inodes_on, the update's, also
 * the inode table blocks of new inodes past the part of the table the
 * committed descriptors call used, which stock e2fsck and the kernel
 * never read) are written
 * in place as data is (ordered mode): when the transaction holds half the
 * journal at a split point, and again at its commit, before the journal's
 * first flush.  Only the blocks that were in use before (inode tables,
 * bitmaps, descriptors, the superblock, the parent directory, the tree's
 * reused nodes and header, quota files) go through the journal, in the
 * one commit at the end.  A crash before that commit block leaves the
 * image as it was (plus junk in free blocks); after it, the whole result.
 * Nothing is committed half-way, so nothing is left to reclaim.
 *
 * A spilled block that an earlier transaction (not yet checkpointed)
 * logged as metadata is revoked in the commit (txio.c), or a replay would
 * put the old copy back over it.
 */
#include "tree/extref_int.h"
#include "txn/xr_txio.h"

struct xr_fresh {
	ext2_filsys		fs;
	ext2fs_block_bitmap	map;	/* allocated since the last commit */
	int			on;	/* spilling asked for */
	int			inodes;	/* new inodes' table blocks too */
	int			any;	/* map not empty */
	size_t			mark;	/* blocks held after the last spill */
};

errcode_t xr_fresh_on(ext2_filsys fs, struct xr_fresh **ret)
{
	struct xr_fresh *f = *ret;
	errcode_t err;

	if (!f) {
		err = ext2fs_get_memzero(sizeof(*f), &f);
		if (err)
			return err;
		f->fs = fs;
		err = ext2fs_allocate_block_bitmap(fs, "fresh blocks", &f->map);
		if (err) {
			ext2fs_free_mem(&f);
			return err;
		}
		*ret = f;
	}
	f->on = 1;
	return 0;
}

int xr_fresh_active(const struct xr_fresh *f)
{
	return f && f->on;
}

/* Blocks allocated by the running transaction (libext2fs's hooks). */
void xr_fresh_note(struct xr_fresh *f, blk64_t blk, blk64_t num)
{
	blk64_t end;

	if (!f || !f->on || !num)
		return;
	end = ext2fs_blocks_count(f->fs->super);
	if (blk < f->fs->super->s_first_data_block || blk >= end)
		return;
	if (num > end - blk)
		num = end - blk;
	ext2fs_mark_block_bitmap_range2(f->map, blk, num);
	f->any = 1;
}

/* The committed descriptor's count of inodes in use at the table's
 * start (e2fsck and the kernel read no inode past it). */
static __u32 used_inodes(ext2_filsys fs, const void *gd, dgrp_t g)
{
	struct ext4_group_desc *d = (struct ext4_group_desc *)
		ext2fs_group_desc(fs, (struct opaque_ext2_group_desc *)gd, g);
	__u32 ipg = fs->super->s_inodes_per_group, unused;

	if (d->bg_flags & EXT2_BG_INODE_UNINIT)
		return 0;
	unused = d->bg_itable_unused;
	if (EXT2_DESC_SIZE(fs->super) >= EXT2_MIN_DESC_SIZE_64BIT)
		unused |= (__u32)d->bg_itable_unused_hi << 16;
	return unused < ipg ? ipg - unused : 0;
}

/*
 * Inode ino was allocated: its inode table block is a new block too when
 * every inode it holds lies past the committed descriptor's used part of
 * the table (a filesystem with group descriptor checksums: stock e2fsck
 * and the kernel read no inode there, and the next allocation's commit
 * moves the mark) and no other inode of it is in use now.
 */
void xr_fresh_note_inode(struct xr_fresh *f, ext2_ino_t ino,
			 const void *gd)
{
	ext2_filsys fs;
	__u32 ipg, per, idx, first, i;
	dgrp_t g;
	blk64_t blk;

	if (!f || !f->on || !f->inodes || !ino ||
	    !ext2fs_has_group_desc_csum(f->fs))
		return;
	fs = f->fs;
	ipg = fs->super->s_inodes_per_group;
	per = fs->blocksize / EXT2_INODE_SIZE(fs->super);
	if (!ipg || !per || ino > fs->super->s_inodes_count)
		return;
	g = (ino - 1) / ipg;
	idx = (ino - 1) % ipg;
	first = idx - idx % per;
	if (first < used_inodes(fs, gd, g) || !ext2fs_inode_table_loc(fs, g))
		return;
	blk = ext2fs_inode_table_loc(fs, g) + first / per;
	if (blk >= ext2fs_blocks_count(fs->super) ||
	    ext2fs_test_block_bitmap2(f->map, blk))
		return;
	for (i = 0; i < per && first + i < ipg; i++)
		if (g * ipg + first + i + 1 != ino &&
		    ext2fs_test_inode_bitmap2(fs->inode_map,
					      g * ipg + first + i + 1))
			return;
	ext2fs_mark_block_bitmap2(f->map, blk);
	f->any = 1;
}

/* New inodes' table blocks count as new blocks (xr_fresh_note_inode) for
 * as long as spilling lasts. */
void xr_fresh_inodes_on(struct xr_fresh *f)
{
	if (f && f->on)
		f->inodes = 1;
}

/* A block the committed state maps after all (freed and taken again in
 * the same transaction). */
void xr_fresh_forget(struct xr_fresh *f, blk64_t blk)
{
	if (f && f->on && blk < ext2fs_blocks_count(f->fs->super))
		ext2fs_unmark_block_bitmap2(f->map, blk);
}

/* After a commit or a rollback: nothing is fresh; off with off. */
void xr_fresh_reset(struct xr_fresh *f, int off)
{
	if (!f)
		return;
	if (f->any)
		ext2fs_clear_block_bitmap(f->map);
	f->any = 0;
	f->mark = 0;
	if (off)
		f->on = f->inodes = 0;
}

void xr_fresh_free(struct xr_fresh **f)
{
	if (!*f)
		return;
	ext2fs_free_block_bitmap((*f)->map);
	ext2fs_free_mem(f);
}

static int is_fresh(void *arg, blk64_t blk)
{
	struct xr_fresh *f = arg;

	return blk < ext2fs_blocks_count(f->fs->super) &&
	       ext2fs_test_block_bitmap2(f->map, blk);
}

/* Write the fresh held blocks in place (no flush: the commit's first one
 * puts them on disk before its commit block). */
errcode_t xr_fresh_spill(struct xr_fresh *f, struct xr_txio *io)
{
	errcode_t err;

	if (!f || !f->on || !f->any)
		return 0;
	err = xr_txio_spill(io, is_fresh, f, NULL);
	if (!err)
		f->mark = xr_txio_nheld(io);
	return err;
}

/* At a split point: spill once half the journal's worth was held since
 * the last spill. */
errcode_t xr_fresh_split_point(struct xr_fresh *f, struct xr_txio *io,
			       blk64_t max_blocks)
{
	size_t held = xr_txio_nheld(io);

	if (held < f->mark || held - f->mark < max_blocks / 2)
		return 0;
	return xr_fresh_spill(f, io);
}
