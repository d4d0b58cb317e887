/*
 * txn.c --- operations as transactions of the image's ext4 journal.
 *
 * On an image with an internal journal, the holding channel (txio.c)
 * keeps every write in memory.  A commit:
 *   1. writes the reference-count tree and the quota usage that changed,
 *      then the block and inode bitmaps of every group that changed, the
 *      descriptor blocks that hold those groups and the primary
 *      superblock (needs_recovery set) into the held blocks;
 *   2. hands the held blocks and the revokes to the journal
 *      (journal/commit.c): descriptors and copies, flush, commit block,
 *      flush: the commit point;
 *   3. writes the blocks in place, without a flush.
 * The journal is emptied (its superblock says so, and the superblock's
 * needs_recovery goes) when it has no room for the next transaction and
 * at close, after a flush of what was written in place.  A crash before
 * the commit block leaves the image as it was; after it, a replay (by the
 * next extref tool, stock e2fsck or the kernel) gives the committed state.
 *
 * A rollback drops the held blocks and puts libext2fs's view back as it
 * was at the last commit: the superblock and group descriptors from a copy,
 * the bitmaps read again, the inode cache emptied, the tree and the quota
 * usage loaded again.
 *
 * Which groups changed: the block allocation hooks of libext2fs name
 * every block allocated or freed, xr_tx_note_inode every inode the
 * library allocates or frees, and any group whose descriptor differs from
 * the copy is taken too (inodes libext2fs allocates itself).
 */
#include <stddef.h>
#include <string.h>
#include "tree/extref_int.h"
#include "txn/xr_txio.h"
#include "journal/xr_journal.h"
#include "txn/xr_handle.h"
#include "txn/xr_zone.h"

struct xr_tx {
	extref_fs_t	xfs;
	ext2_filsys	fs;
	struct xr_txio	*io;
	struct xr_journal *j;
	int		depth;
	int		atomic_depth;	/* depth of the outermost atomic begin */
	int		jown_done;	/* the journal's blocks proven its own */
	struct ext2_super_block super;	/* as last committed */
	void		*gd;		/* descriptors as last committed */
	size_t		gd_size;
	int		fsflags;
	__u8		*dirty;		/* per group: 1 block, 2 inode bitmap */
	dgrp_t		ndirty;		/* groups with dirty set */
	blk64_t		max_blocks;	/* a transaction of an empty journal */
	struct xr_txfree *freed;	/* freed since the commit (below) */
	size_t		nfreed, cap_freed;
	ext2fs_block_bitmap pending;	/* the blocks of freed, or NULL */
	int		revived;	/* one of them allocated again */
	errcode_t	freed_err;	/* a free that could not be kept back */
	struct xr_fresh	*fresh;		/* blocks written early (txn_split.c) */
	int		spill_depth;	/* depth of the begin that asked */
	int		in_range;	/* in xr_block_alloc_stats_range */
	blk64_t		freed_total;	/* blocks freed since the commit */
	blk64_t		ceiling;	/* xr_tx_set_ceiling; 0: max_blocks */
	blk64_t		need_len;	/* the last commit too big: the */
	blk64_t		need_alloc;	/* journal it needed, its blocks */
	int		batch_depth;	/* a batch's begin (EXTREF_TX_BATCH) */
	size_t		nfreed_sp;	/* freed before the running step */
	int		revived_sp;
	ext2fs_block_bitmap pending_sp;	/* pending then, once revived since */
	errcode_t	lost;		/* a batch's commit failed: refused */
	void		(*old_cb)(ext2_filsys, blk64_t, int);
	void		(*old_range_cb)(ext2_filsys, blk64_t, blk_t, int);
};

/*
 * Blocks freed since the last commit stay marked in use in the bitmap
 * until the commit, as ext4 keeps them from reuse until its transaction
 * commits: the committed state still maps them, and file data written
 * straight to a block reused now would overwrite what a rollback or a
 * crash brings back.  The commit unmarks them (the free counts were
 * updated when they were freed).  Allocations search the bitmap and so
 * never take such a block; one allocated again by its number in the same
 * transaction (an expert's set_block_bitmap in a batch) leaves the
 * pending set, and the commit leaves it in use.
 */
struct xr_txfree {
	blk64_t		blk;
	blk64_t		num;
};

static int untouched(struct xr_tx *tx);
static blk64_t commit_blocks(struct xr_tx *tx);

/* An operation of a batch is running (its begin took a savepoint). */
static int in_step(const struct xr_tx *tx)
{
	return tx->batch_depth && tx->depth > tx->batch_depth;
}

#define DIRTY_BLOCKS	1
#define DIRTY_INODES	2

static struct xr_tx *tx_of(ext2_filsys fs)
{
	struct xr_txio *t = xr_txio_of(fs);

	return t ? xr_txio_owner(t) : NULL;
}

static void mark_group(struct xr_tx *tx, dgrp_t g, __u8 what)
{
	if (!tx->dirty[g])
		tx->ndirty++;
	tx->dirty[g] |= what;
}

static void note_blocks(struct xr_tx *tx, blk64_t blk, blk64_t num)
{
	dgrp_t g, last;

	if (!num || blk >= ext2fs_blocks_count(tx->fs->super))
		return;
	g = ext2fs_group_of_blk2(tx->fs, blk);
	last = ext2fs_group_of_blk2(tx->fs, blk + num - 1);
	for (; g <= last && g < tx->fs->group_desc_count; g++)
		mark_group(tx, g, DIRTY_BLOCKS);
}

static void push_freed(struct xr_tx *tx, blk64_t blk, blk64_t num)
{
	errcode_t err = xr_grow(&tx->freed, &tx->cap_freed, tx->nfreed,
				sizeof(*tx->freed));

	if (err) {	/* the block may be reused: the operation must fail */
		tx->freed_err = err;
		return;
	}
	tx->freed[tx->nfreed].blk = blk;
	tx->freed[tx->nfreed++].num = num;
	tx->freed_total += num;
}

/* The pending set: a tree of ranges, small whatever the image's size. */
static errcode_t new_pending(struct xr_tx *tx)
{
	ext2_filsys fs = tx->fs;
	int type = fs->default_bitmap_type;
	errcode_t err;

	fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
	err = ext2fs_allocate_block_bitmap(fs, "freed in a transaction",
					   &tx->pending);
	fs->default_bitmap_type = type;
	if (err)
		tx->pending = NULL;
	return err;
}

static void defer_free(struct xr_tx *tx, blk64_t blk, blk64_t num)
{
	if (!tx->fs->block_map)
		return;
	if (!tx->pending && new_pending(tx)) {
		tx->freed_err = EXT2_ET_NO_MEMORY;
		return;
	}
	ext2fs_mark_block_bitmap_range2(tx->fs->block_map, blk, num);
	ext2fs_mark_block_bitmap_range2(tx->pending, blk, num);
	push_freed(tx, blk, num);
}

/* Blocks freed in the transaction and allocated again by number: in use
 * after all. */
static void revive(struct xr_tx *tx, blk64_t blk, blk64_t num)
{
	blk64_t b, end = blk + num;

	if (!tx->pending || !tx->nfreed)
		return;
	if (in_step(tx) && !tx->pending_sp &&
	    ext2fs_copy_bitmap(tx->pending, &tx->pending_sp)) {
		tx->pending_sp = NULL;
		tx->freed_err = EXT2_ET_NO_MEMORY;
	}
	while (blk < end && !ext2fs_find_first_set_block_bitmap2(tx->pending,
							blk, end - 1, &b)) {
		ext2fs_unmark_block_bitmap2(tx->pending, b);
		tx->revived = 1;
		blk = b + 1;
	}
}

static void forget_freed(struct xr_tx *tx)
{
	if (tx->pending)
		ext2fs_clear_block_bitmap(tx->pending);
	tx->nfreed = 0;
	tx->revived = 0;
}

/* At the commit: the blocks freed are free in the bitmap too. */
static void release_freed(struct xr_tx *tx)
{
	size_t i;
	blk64_t b;

	for (i = 0; i < tx->nfreed; i++) {
		const struct xr_txfree *f = &tx->freed[i];

		if (!tx->revived) {
			ext2fs_unmark_block_bitmap_range2(tx->fs->block_map,
							  f->blk, f->num);
			continue;
		}
		for (b = f->blk; b < f->blk + f->num &&
		     !ext2fs_find_first_set_block_bitmap2(tx->pending, b,
				f->blk + f->num - 1, &b); b++)
			ext2fs_unmark_block_bitmap2(tx->fs->block_map, b);
	}
	forget_freed(tx);
}

int extref_tx_freed(extref_fs_t xfs, blk64_t blk)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	return tx && tx->pending && tx->nfreed &&
	       ext2fs_test_block_bitmap2(tx->pending, blk);
}

/*
 * Blocks allocated: new ones no committed path reaches (written early in
 * a transaction that asks for it, txn_split.c), but for one freed in
 * this transaction and allocated again by its number, which the
 * committed state still maps (revive).
 */
static void alloc_note(struct xr_tx *tx, blk64_t blk, blk64_t num)
{
	blk64_t b, end = blk + num;

	if (tx->depth && xr_fresh_active(tx->fresh)) {
		xr_fresh_note(tx->fresh, blk, num);
		for (b = blk; tx->pending && tx->nfreed && b < end &&
		     !ext2fs_find_first_set_block_bitmap2(tx->pending, b,
							  end - 1, &b); b++)
			xr_fresh_forget(tx->fresh, b);
	}
	revive(tx, blk, num);
}

/* A free of the system zone (libext2fs's own, of an extent block the
 * image names there): the operation fails, rolled back. */
static void zone_free_note(struct xr_tx *tx, blk64_t blk, blk64_t num)
{
	if (tx->depth && !tx->freed_err && xr_zone_is_meta(tx->fs, blk, num))
		tx->freed_err = EXTREF_ERR_ZONE_FREE;
}

static void block_cb(ext2_filsys fs, blk64_t blk, int inuse)
{
	struct xr_tx *tx = tx_of(fs);

	if (tx) {
		if (inuse < 0)
			zone_free_note(tx, blk, 1);
		if (inuse < 0 && tx->depth)
			defer_free(tx, blk, 1);
		else if (inuse > 0)
			alloc_note(tx, blk, 1);
		note_blocks(tx, blk, 1);
		if (tx->old_cb)
			tx->old_cb(fs, blk, inuse);
	}
}

static void range_note(struct xr_tx *tx, blk64_t blk, blk64_t num,
		       int inuse)
{
	if (inuse < 0)
		zone_free_note(tx, blk, num);
	if (inuse < 0 && tx->depth)
		defer_free(tx, blk, num);
	else if (inuse > 0)
		alloc_note(tx, blk, num);
	note_blocks(tx, blk, num);
}

/*
 * libext2fs 1.47.0 calls this with the end of the range and a count of 0
 * (the values its loop leaves; later versions pass the range): the
 * library's own range changes go through xr_block_alloc_stats_range,
 * which names the range itself.
 */
static void range_cb(ext2_filsys fs, blk64_t blk, blk_t num, int inuse)
{
	struct xr_tx *tx = tx_of(fs);

	if (tx) {
		if (!tx->in_range)
			range_note(tx, blk, num, inuse);
		if (tx->old_range_cb)
			tx->old_range_cb(fs, blk, num, inuse);
	}
}

void xr_block_alloc_stats_range(ext2_filsys fs, blk64_t blk, blk_t num,
				int inuse)
{
	struct xr_tx *tx = tx_of(fs);

	if (tx)
		tx->in_range++;
	ext2fs_block_alloc_stats_range(fs, blk, num, inuse);
	if (tx) {
		tx->in_range--;
		range_note(tx, blk, num, inuse);
	}
}

void extref_tx_note_block(extref_fs_t xfs, blk64_t blk)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx)
		return;
	/* marked in use by hand: a pending free of it is off */
	if (tx->fs->block_map && ext2fs_test_block_bitmap2(tx->fs->block_map,
							   blk))
		revive(tx, blk, 1);
	note_blocks(tx, blk, 1);
}

int extref_tx_pending(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	return tx && tx->depth && !untouched(tx);
}

void xr_tx_note_inode(ext2_filsys fs, ext2_ino_t ino)
{
	struct xr_tx *tx = tx_of(fs);

	if (!tx || !ino || ino > fs->super->s_inodes_count)
		return;
	mark_group(tx, ext2fs_group_of_ino(fs, ino), DIRTY_INODES);
	if (tx->depth && xr_fresh_active(tx->fresh) && fs->inode_map &&
	    ext2fs_test_inode_bitmap2(fs->inode_map, ino))
		xr_fresh_note_inode(tx->fresh, ino, tx->gd);
}

/* Remember libext2fs's view as committed, for a rollback. */
static void snapshot(struct xr_tx *tx)
{
	memcpy(&tx->super, tx->fs->super, sizeof(tx->super));
	memcpy(tx->gd, tx->fs->group_desc, tx->gd_size);
	tx->fsflags = tx->fs->flags;
	memset(tx->dirty, 0, tx->fs->group_desc_count);
	tx->ndirty = 0;
	tx->freed_total = 0;
	xr_fresh_reset(tx->fresh, 0);	/* committed: reachable now */
}

/*
 * A commit of n blocks and nrev revokes is too big for the journal:
 * remember the journal length it needs and the blocks the transaction
 * took (allocated since the last commit: the free count's drop and the
 * blocks freed, which stay in use until the commit: its peak), for a
 * caller that grows the journal and runs the operation again
 * (journal_grow.c).
 */
static void note_need(struct xr_tx *tx, blk64_t n, size_t nrev)
{
	blk64_t before = ext2fs_free_blocks_count(&tx->super);
	blk64_t now = ext2fs_free_blocks_count(tx->fs->super);

	/* now = before - allocated + freed (counted free at once) */
	tx->need_len = xr_journal_len_for(tx->j, n, nrev);
	tx->need_alloc = before + tx->freed_total > now ?
			 before + tx->freed_total - now : 0;
}

/* Groups whose descriptor changed although no hook named them. */
static void note_changed_descs(struct xr_tx *tx)
{
	ext2_filsys fs = tx->fs;
	size_t dsz = EXT2_DESC_SIZE(fs->super);
	dgrp_t g;

	for (g = 0; g < fs->group_desc_count; g++)
		if (memcmp((char *)fs->group_desc + g * dsz,
			   (char *)tx->gd + g * dsz, dsz))
			mark_group(tx, g, DIRTY_BLOCKS | DIRTY_INODES);
}

/*
 * Blocks freed and not yet committed are free in the bitmap written, as
 * the free counts already say, though still in use in memory: in a batch
 * a step's held blocks are then a consistent image, committed at once or
 * later (until then no allocation takes those blocks).
 */
static void clear_pending(struct xr_tx *tx, blk64_t first, blk64_t nbits,
			  char *buf)
{
	ext2_filsys fs = tx->fs;
	blk64_t b, end = first + EXT2FS_C2B(fs, nbits) - 1;

	if (!tx->pending || !tx->nfreed)
		return;
	if (end >= ext2fs_blocks_count(fs->super))
		end = ext2fs_blocks_count(fs->super) - 1;
	for (b = first; b <= end &&
	     !ext2fs_find_first_set_block_bitmap2(tx->pending, b, end, &b);
	     b = EXT2FS_C2B(fs, EXT2FS_B2C(fs, b) + 1))
		ext2fs_clear_bit(EXT2FS_B2C(fs, b) - EXT2FS_B2C(fs, first),
				 buf);
}

/* One group's block bitmap as ext2fs_write_bitmaps lays it out. */
static errcode_t put_block_bitmap(struct xr_tx *tx, dgrp_t g, char *buf)
{
	ext2_filsys fs = tx->fs;
	int nbytes = EXT2_CLUSTERS_PER_GROUP(fs->super) / 8;
	blk64_t start = EXT2FS_B2C(fs, fs->super->s_first_data_block) +
			(blk64_t)g * EXT2_CLUSTERS_PER_GROUP(fs->super);
	errcode_t err;

	if (ext2fs_has_group_desc_csum(fs) &&
	    ext2fs_bg_flags_test(fs, g, EXT2_BG_BLOCK_UNINIT))
		return 0;
	memset(buf, 0xff, fs->blocksize);
	err = ext2fs_get_block_bitmap_range2(fs->block_map,
					     EXT2FS_C2B(fs, start),
					     nbytes * 8, buf);
	if (!err && g == fs->group_desc_count - 1) {
		/* the last group: the bits past the filesystem are set */
		blk64_t nbits = EXT2FS_NUM_B2C(fs,
			(ext2fs_blocks_count(fs->super) -
			 fs->super->s_first_data_block) %
			EXT2_BLOCKS_PER_GROUP(fs->super));
		int j;

		for (j = nbits ? (int)nbits : nbytes * 8; j < nbytes * 8; j++)
			ext2fs_set_bit(j, buf);
	}
	if (err)
		return err;
	clear_pending(tx, EXT2FS_C2B(fs, start), (blk64_t)nbytes * 8, buf);
	err = ext2fs_block_bitmap_csum_set(fs, g, buf, nbytes);
	if (!err)
		err = io_channel_write_blk64(fs->io,
					     ext2fs_block_bitmap_loc(fs, g), 1,
					     buf);
	return err;
}

static errcode_t put_inode_bitmap(ext2_filsys fs, dgrp_t g, char *buf)
{
	int nbytes = EXT2_INODES_PER_GROUP(fs->super) / 8;
	errcode_t err;

	if (ext2fs_has_group_desc_csum(fs) &&
	    ext2fs_bg_flags_test(fs, g, EXT2_BG_INODE_UNINIT))
		return 0;
	memset(buf, 0xff, fs->blocksize);
	err = ext2fs_get_inode_bitmap_range2(fs->inode_map,
			(__u64)g * EXT2_INODES_PER_GROUP(fs->super) + 1,
			nbytes * 8, buf);
	if (!err)
		err = ext2fs_inode_bitmap_csum_set(fs, g, buf, nbytes);
	if (!err)
		err = io_channel_write_blk64(fs->io,
					     ext2fs_inode_bitmap_loc(fs, g), 1,
					     buf);
	return err;
}

/* The descriptor block that holds group g. */
static errcode_t put_desc_block(ext2_filsys fs, dgrp_t g)
{
	dgrp_t per = EXT2_DESC_PER_BLOCK(fs->super);
	dgrp_t i = g / per;
	blk64_t loc = ext2fs_descriptor_block_loc2(fs,
				fs->super->s_first_data_block, i);

	return io_channel_write_blk64(fs->io, loc, 1,
				      (char *)fs->group_desc +
				      (size_t)i * fs->blocksize);
}

static errcode_t put_groups(struct xr_tx *tx)
{
	ext2_filsys fs = tx->fs;
	dgrp_t g, per = EXT2_DESC_PER_BLOCK(fs->super), last_desc = ~0U;
	char *buf;
	errcode_t err = ext2fs_get_mem(fs->blocksize, &buf);

	if (err)
		return err;
	note_changed_descs(tx);
	for (g = 0; !err && g < fs->group_desc_count; g++) {
		if (!tx->dirty[g])
			continue;
		if (fs->block_map && (tx->dirty[g] & DIRTY_BLOCKS))
			err = put_block_bitmap(tx, g, buf);
		if (!err && fs->inode_map && (tx->dirty[g] & DIRTY_INODES))
			err = put_inode_bitmap(fs, g, buf);
		ext2fs_group_desc_csum_set(fs, g);
	}
	/* then the descriptor blocks, now that the checksums are set */
	for (g = 0; !err && g < fs->group_desc_count; g++) {
		if (!tx->dirty[g] || g / per == last_desc)
			continue;
		last_desc = g / per;
		err = put_desc_block(fs, g);
	}
	ext2fs_free_mem(&buf);
	return err;
}

/*
 * The primary superblock, if it changed, with needs_recovery set: the
 * journal is in use.  A change of the checksum alone is an expert's raw
 * edit, already written as given.
 */
static errcode_t put_super(struct xr_tx *tx)
{
	ext2_filsys fs = tx->fs;

	if (!memcmp(fs->super, &tx->super,
		    offsetof(struct ext2_super_block, s_checksum)))
		return 0;
	ext2fs_set_feature_journal_needs_recovery(fs->super);
	ext2fs_superblock_csum_set(fs, fs->super);
	return xr_txio_put_bytes(tx->io, SUPERBLOCK_OFFSET, SUPERBLOCK_SIZE,
				 fs->super);
}

/*
 * Empty the journal: what was written in place reaches the disk first,
 * then the journal superblock marks the log empty, then needs_recovery
 * is cleared.  At close (last) that last write goes without a flush of
 * its own: ext2fs_close writes the superblock again (needs_recovery
 * clear in fs->super too) and the holding channel flushes as it closes.
 */
static errcode_t checkpoint(struct xr_tx *tx, int last)
{
	errcode_t err = io_channel_flush(xr_txio_lower(tx->io));

	if (!err)
		err = last ? xr_journal_checkpoint_done_noflush(tx->j)
			   : xr_journal_checkpoint_done(tx->j);
	if (!err) {
		xr_txio_forget_logged(tx->io);
		ext2fs_clear_feature_journal_needs_recovery(tx->fs->super);
		ext2fs_clear_feature_journal_needs_recovery(&tx->super);
	}
	return err;
}

/*
 * Before the session writes (at the attach, or with the stamp at its
 * first transaction): the journal's blocks are its own (jown.c), or the
 * log would go over another file or metadata.  It
 * costs a walk of every inode's map, which the tree's stamp spares a
 * small change as it spares the proof of the counts: the stamp says a
 * proving writer checked this too and the allocation state is the one it
 * left (FORMAT.md section 11).
 */
static errcode_t journal_owned(struct xr_tx *tx)
{
	errcode_t err = 0;

	if (!tx->jown_done && extref_fs_proof(tx->xfs) != EXTREF_PROOF_STAMP)
		err = xr_journal_check_blocks(tx->j);
	/* an inode the walk cannot read (a bad checksum: what fsck.extref
	 * is repairing, say) is not an overlap; its blocks are e2fsck's */
	if (err != EXTREF_ERR_JNL_OVERLAP)
		err = 0;
	tx->jown_done = !err;
	return err;
}

static errcode_t to_journal(struct xr_tx *tx)
{
	struct xr_txblock *held;
	struct xr_jblock *jb = NULL;
	const blk64_t *rev;
	size_t n, nrev, i;
	errcode_t err;

	rev = xr_txio_revokes(tx->io, &nrev);
	err = xr_txio_held(tx->io, &held, &n);
	if (err || (!n && !nrev))
		goto out;
	/* no room left in the log: empty it first; still none: too big */
	if (n > xr_journal_capacity(tx->j, nrev) && xr_journal_dirty(tx->j)) {
		err = checkpoint(tx, 0);
		if (err)
			goto out;
	}
	if (n > xr_journal_capacity(tx->j, nrev)) {
		note_need(tx, n, nrev);
		err = EXTREF_ERR_TXN_TOO_BIG;
		goto out;
	}
	err = ext2fs_get_array(n ? n : 1, sizeof(*jb), &jb);
	for (i = 0; !err && i < n; i++) {
		jb[i].blk = held[i].blk;
		jb[i].data = held[i].data;
	}
	if (!err)
		err = xr_journal_commit(tx->j, jb, n, rev, nrev);
	if (!err)
		err = xr_txio_write_home(tx->io);
	if (!err)
		xr_txio_clear_revokes(tx->io);
out:
	ext2fs_free_mem(&jb);
	ext2fs_free_mem(&held);
	return err;
}

static errcode_t commit_writes(struct xr_tx *tx);

/* Commit everything written since the last commit: the library's own
 * writes (xr_txio_raw_writes). */
static errcode_t commit(struct xr_tx *tx)
{
	errcode_t err;

	xr_txio_op(tx->io, 1);
	err = commit_writes(tx);
	xr_txio_op(tx->io, -1);
	return err;
}

static errcode_t commit_writes(struct xr_tx *tx)
{
	extref_tree_t t = extref_fs_tree(tx->xfs);
	errcode_t err = tx->freed_err;

	if (!err && t && (t->flags & EXTREF_TREE_RW))
		err = extref_tree_commit(t);
	if (!err)	/* quota usage and any other layer's hook */
		err = xr_fs_hooks_flush(tx->xfs);
	if (!err) {
		release_freed(tx);
		err = put_groups(tx);
	}
	if (!err)
		err = put_super(tx);
	if (!err)	/* new blocks in place, before the journal's flush */
		err = xr_fresh_spill(tx->fresh, tx->io);
	if (!err)
		err = to_journal(tx);
	if (!err) {
		/* the bitmaps on disk are those in memory now */
		tx->fs->flags &= ~(EXT2_FLAG_BB_DIRTY | EXT2_FLAG_IB_DIRTY);
		snapshot(tx);
	}
	return err;
}

/* Nothing written, allocated or changed in the tree since the commit. */
static int untouched(struct xr_tx *tx)
{
	extref_tree_t t = extref_fs_tree(tx->xfs);
	dgrp_t g;

	if (xr_txio_nheld(tx->io) || (t && t->dirty) || tx->nfreed ||
	    tx->freed_err ||
	    memcmp(&tx->super, tx->fs->super, sizeof(tx->super)) ||
	    memcmp(tx->gd, tx->fs->group_desc, tx->gd_size))
		return 0;
	for (g = 0; g < tx->fs->group_desc_count; g++)
		if (tx->dirty[g])
			return 0;
	return 1;
}

/* The blocks freed and not committed stay in use in memory (the bitmaps
 * were read from what the commits and a batch's steps wrote). */
static void mark_pending(struct xr_tx *tx)
{
	size_t i;

	for (i = 0; i < tx->nfreed; i++)
		ext2fs_mark_block_bitmap_range2(tx->fs->block_map,
						tx->freed[i].blk,
						tx->freed[i].num);
}

/* libext2fs's view, the tree and the hooks' state read again: as they
 * were at the snapshot, whose blocks are on disk or held. */
static errcode_t reload_views(struct xr_tx *tx)
{
	ext2_filsys fs = tx->fs;
	errcode_t err;

	memcpy(fs->super, &tx->super, sizeof(tx->super));
	memcpy(fs->group_desc, tx->gd, tx->gd_size);
	fs->flags = tx->fsflags;
	ext2fs_flush_icache(fs);
	if (fs->block_map)
		ext2fs_free_block_bitmap(fs->block_map);
	if (fs->inode_map)
		ext2fs_free_inode_bitmap(fs->inode_map);
	fs->block_map = NULL;
	fs->inode_map = NULL;
	err = ext2fs_read_bitmaps(fs);
	if (!err)
		mark_pending(tx);
	if (!err)
		err = xr_fs_reload_tree(tx->xfs);
	if (!err)
		err = xr_fs_hooks_reset(tx->xfs);
	memset(tx->dirty, 0, fs->group_desc_count);
	tx->ndirty = 0;
	tx->freed_err = 0;
	xr_fresh_reset(tx->fresh, 1);
	return err;
}

/* Back to the last commit. */
static errcode_t rollback(struct xr_tx *tx)
{
	if (untouched(tx)) {	/* a refusal: only the caches may differ */
		xr_txio_drop(tx->io);
		ext2fs_flush_icache(tx->fs);
		return 0;
	}
	xr_txio_drop(tx->io);
	forget_freed(tx);
	return reload_views(tx);
}

/* ---- batches: several operations, each a step, in one transaction ---- */

/*
 * A step starts: commit the batch first once it holds half the journal
 * (a step of up to half then fits), or XR_BATCH_HELD blocks (64 MiB of
 * 4 KiB blocks: what a batch keeps in memory, whatever the journal),
 * then take the savepoint.
 */
#define XR_BATCH_HELD	16384
static errcode_t batch_lost(struct xr_tx *tx, errcode_t err)
{
	/* the steps acknowledged since the last commit are gone: so is
	 * every later one, until the batch ends */
	(void)rollback(tx);
	tx->lost = EXTREF_ERR_BATCH_LOST;
	return err;
}

static errcode_t step_begin(struct xr_tx *tx)
{
	errcode_t err = tx->lost;
	blk64_t held = err ? 0 : commit_blocks(tx);

	if (held > tx->max_blocks / 2 || held > XR_BATCH_HELD) {
		err = commit(tx);
		if (err)
			return batch_lost(tx, err);
	}
	if (!err)
		err = xr_txio_savepoint(tx->io);
	tx->nfreed_sp = tx->nfreed;
	tx->revived_sp = tx->revived;
	return err;
}

static void step_forget(struct xr_tx *tx)
{
	xr_txio_sp_end(tx->io);
	if (tx->pending_sp)
		ext2fs_free_block_bitmap(tx->pending_sp);
	tx->pending_sp = NULL;
}

/* Nothing held, freed or changed since the step began. */
static int step_untouched(struct xr_tx *tx)
{
	extref_tree_t t = extref_fs_tree(tx->xfs);

	return !xr_txio_sp_changed(tx->io) && !(t && t->dirty) &&
	       tx->nfreed == tx->nfreed_sp && !tx->freed_err &&
	       !tx->ndirty &&
	       !memcmp(&tx->super, tx->fs->super, sizeof(tx->super)) &&
	       !memcmp(tx->gd, tx->fs->group_desc, tx->gd_size);
}

/* The step failed: back to its savepoint, the steps before it kept. */
static errcode_t step_rollback(struct xr_tx *tx, errcode_t err)
{
	errcode_t err2;
	size_t i;

	if (step_untouched(tx)) {
		step_forget(tx);
		ext2fs_flush_icache(tx->fs);
		return err;
	}
	xr_txio_sp_rollback(tx->io);
	if (tx->pending_sp) {	/* a revive since: the set as it was */
		ext2fs_free_block_bitmap(tx->pending);
		tx->pending = tx->pending_sp;
		tx->pending_sp = NULL;
	} else {
		for (i = tx->nfreed_sp; tx->pending && i < tx->nfreed; i++)
			ext2fs_unmark_block_bitmap_range2(tx->pending,
							  tx->freed[i].blk,
							  tx->freed[i].num);
	}
	tx->nfreed = tx->nfreed_sp;
	tx->revived = tx->revived_sp;
	err2 = reload_views(tx);
	step_forget(tx);
	/* a view that cannot be read again cannot be trusted */
	return err2 ? err2 : err;
}

/*
 * The step made the batch too big for one commit: the batch before it
 * commits alone (the blocks as the savepoint kept them: the last step
 * left a consistent image), then the step alone.
 */
static errcode_t commit_apart(struct xr_tx *tx)
{
	errcode_t err;

	xr_txio_sp_swap(tx->io);
	err = to_journal(tx);
	xr_txio_sp_swap(tx->io);
	if (!err)
		err = xr_txio_sp_revoke_logged(tx->io);
	if (!err)
		err = to_journal(tx);
	if (!err)
		release_freed(tx);
	return err;
}

/* The step stays: its state goes into the held blocks (a consistent
 * image: clear_pending), to be committed with the batch. */
static errcode_t step_keep(struct xr_tx *tx)
{
	extref_tree_t t = extref_fs_tree(tx->xfs);
	errcode_t err = tx->freed_err;
	size_t nrev;

	xr_txio_op(tx->io, 1);
	if (!err && t && (t->flags & EXTREF_TREE_RW))
		err = extref_tree_commit(t);
	if (!err)
		err = xr_fs_hooks_flush(tx->xfs);
	if (!err)
		err = put_groups(tx);
	if (!err)
		err = put_super(tx);
	if (!err)
		err = xr_fresh_spill(tx->fresh, tx->io);
	if (!err) {
		(void)xr_txio_revokes(tx->io, &nrev);
		if (xr_txio_nheld(tx->io) > xr_journal_capacity(tx->j, nrev))
			err = commit_apart(tx);
	}
	xr_txio_op(tx->io, -1);
	if (err)
		return step_rollback(tx, err);
	tx->fs->flags &= ~(EXT2_FLAG_BB_DIRTY | EXT2_FLAG_IB_DIRTY);
	snapshot(tx);
	step_forget(tx);
	return 0;
}

errcode_t xr_tx_begin2(extref_fs_t xfs, int atomic)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx)
		return 0;
	if (!tx->depth) {	/* the outermost: hold from now on */
		errcode_t err = journal_owned(tx);

		if (err)
			return err;
		/*
		 * Bitmaps changed between operations (the tree's own API
		 * allocates for inode 5) go to the disk first, as is: a
		 * rollback reads the bitmaps back from there.
		 */
		if (tx->fs->flags & (EXT2_FLAG_BB_DIRTY | EXT2_FLAG_IB_DIRTY)) {
			err = ext2fs_write_bitmaps(tx->fs);
			if (err)
				return err;
		}
		snapshot(tx);
		tx->need_len = tx->need_alloc = 0;
		xr_txio_hold(tx->io, 1);
	} else if (tx->depth == tx->batch_depth) {
		errcode_t err = step_begin(tx);

		if (err)
			return err;
	}
	tx->depth++;
	if (atomic && !tx->atomic_depth)
		tx->atomic_depth = tx->depth;
	return 0;
}

/* A batch: the outermost begin; each begin inside it is a step. */
errcode_t xr_tx_batch_begin(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err;

	if (!tx)
		return 0;
	if (tx->depth)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_tx_begin2(xfs, 1);
	if (!err)
		tx->batch_depth = tx->depth;
	return err;
}

/* Commit the batch's steps now, between two of them. */
errcode_t xr_tx_batch_commit(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err;

	if (!tx || !tx->batch_depth)
		return 0;
	if (tx->lost)
		return tx->lost;
	if (tx->depth != tx->batch_depth)
		return EXT2_ET_INVALID_ARGUMENT;
	err = commit(tx);
	return err ? batch_lost(tx, err) : 0;
}

/* The library's own operation: its writes are not raw (xr_txio_op). */
errcode_t xr_tx_begin(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err = xr_tx_begin2(xfs, 0);

	if (!err && tx)
		xr_txio_op(tx->io, 1);
	return err;
}

errcode_t xr_tx_end(extref_fs_t xfs, errcode_t err)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (tx && tx->depth)
		xr_txio_op(tx->io, -1);
	return xr_tx_end2(xfs, err);
}

/*
 * The operation that asked for its new blocks to go in place early ended
 * inside a transaction that commits in parts (the image builder's update
 * or dedupe): its new blocks go in place now, and spilling stops, so that
 * the split points after it commit again.  Inside an atomic begin, or as
 * the outermost operation, spilling lasts to the one commit at the end.
 */
static errcode_t spill_end(struct xr_tx *tx, errcode_t err)
{
	if (!err)
		err = xr_fresh_spill(tx->fresh, tx->io);
	xr_fresh_reset(tx->fresh, 1);
	tx->spill_depth = 0;
	return err;
}

errcode_t xr_tx_end2(extref_fs_t xfs, errcode_t err)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err2;

	if (!tx)
		return err;
	if (tx->depth <= 0)	/* an end without its begin */
		return err ? err : EXT2_ET_INVALID_ARGUMENT;
	if (tx->depth-- == tx->atomic_depth)
		tx->atomic_depth = 0;
	if (tx->depth > 0 && tx->depth < tx->spill_depth && !tx->atomic_depth)
		err = spill_end(tx, err);
	if (tx->depth > 0 && tx->depth == tx->batch_depth)
		return err ? step_rollback(tx, err) : step_keep(tx);
	if (tx->depth > 0)
		return err;
	if (tx->lost && !err)
		err = tx->lost;
	tx->batch_depth = 0;
	tx->lost = 0;
	if (!err)
		err = commit(tx);
	err2 = err ? rollback(tx) : 0;
	xr_fresh_reset(tx->fresh, 1);
	tx->spill_depth = 0;
	tx->ceiling = 0;
	xr_txio_hold(tx->io, 0);	/* between operations: written as is */
	/* a rollback that fails leaves a view that cannot be trusted */
	return err2 ? err2 : err;
}

/*
 * The blocks the commit would journal now, from above: those held, the
 * tree's dirty nodes (each written to a new block, with inode 5's inode
 * and a share of its extent blocks, and the header), the bitmaps and a
 * descriptor block of each group changed, the superblock.
 */
static blk64_t commit_blocks(struct xr_tx *tx)
{
	extref_tree_t t = extref_fs_tree(tx->xfs);
	blk64_t n = xr_txio_nheld(tx->io) + 1 + 3 * (blk64_t)tx->ndirty;

	if (t && t->dirty)	/* a node's new block, and its old one freed */
		n += 2 * (blk64_t)t->ndirty + t->ndirty / 64 + 3;
	return n;
}

/*
 * The least the commit will journal: the blocks held that were in use
 * before (after a spill, all of those held), the bitmaps of the groups
 * changed, the superblock.
 */
static blk64_t least_journaled(struct xr_tx *tx)
{
	return xr_txio_nheld(tx->io) + 1 + 2 * (blk64_t)tx->ndirty;
}

/*
 * A split point of a transaction that commits once at its end: its new
 * blocks go in place once half the journal's worth was held; once the
 * blocks that were in use before outgrow the journal, the commit could
 * never be written, and the run ends now (EXTREF_ERR_TXN_TOO_BIG) rather
 * than at its end.
 */
static errcode_t fresh_split_point(struct xr_tx *tx)
{
	blk64_t limit = tx->ceiling > tx->max_blocks ? tx->ceiling
						     : tx->max_blocks;
	errcode_t err = xr_fresh_split_point(tx->fresh, tx->io,
					     tx->max_blocks);

	if (err || least_journaled(tx) <= limit)
		return err;
	err = xr_fresh_spill(tx->fresh, tx->io);
	if (!err && least_journaled(tx) > limit) {
		note_need(tx, least_journaled(tx), 0);
		err = EXTREF_ERR_TXN_TOO_BIG;
	}
	return err;
}

errcode_t xr_tx_split_point(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (tx && xr_fresh_active(tx->fresh))	/* one commit, at the end */
		return fresh_split_point(tx);
	if (!tx || tx->atomic_depth || commit_blocks(tx) < tx->max_blocks / 2)
		return 0;
	return commit(tx);
}

errcode_t xr_tx_split_now(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx || !tx->depth || tx->atomic_depth ||
	    xr_fresh_active(tx->fresh))
		return 0;
	return commit(tx);
}

errcode_t xr_tx_spill_on(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err;

	if (!tx || !tx->depth)
		return 0;
	err = xr_fresh_on(tx->fs, &tx->fresh);
	if (!err && !tx->spill_depth)
		tx->spill_depth = tx->depth;
	return err;
}

errcode_t xr_tx_spill_inodes_on(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err = xr_tx_spill_on(xfs);

	if (!err && tx && tx->depth)
		xr_fresh_inodes_on(tx->fresh);
	return err;
}

errcode_t xr_tx_spill_now(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx || !tx->depth || !xr_fresh_active(tx->fresh))
		return 0;
	return xr_fresh_spill(tx->fresh, tx->io);
}

void xr_tx_set_ceiling(extref_fs_t xfs, blk64_t blocks)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (tx && tx->depth)
		tx->ceiling = blocks;
}

void xr_tx_need(extref_fs_t xfs, blk64_t *len, blk64_t *alloc)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	*len = tx ? tx->need_len : 0;
	*alloc = tx ? tx->need_alloc : 0;
}

struct xr_journal *xr_tx_journal(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	return tx ? tx->j : NULL;
}

errcode_t xr_tx_journal_empty(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx)
		return EXTREF_ERR_JNL_NONE;
	if (tx->depth)
		return EXT2_ET_INVALID_ARGUMENT;
	return xr_journal_dirty(tx->j) ? checkpoint(tx, 0) : 0;
}

/*
 * The journal read again after its length changed (journal_grow.c): its
 * map and superblock, the transactions' size limit, and the system zone
 * (the journal's blocks are in it) built again as the open built it.
 * The blocks it gained were allocated by a transaction of this session,
 * so the proof that they are the journal's own stands.
 */
errcode_t xr_tx_journal_reload(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	struct xr_journal *j;
	errcode_t err;

	if (!tx || tx->depth)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_journal_open(tx->fs, xr_txio_lower(tx->io), &j);
	if (err)
		return err;
	xr_journal_close(tx->j);
	tx->j = j;
	tx->max_blocks = xr_journal_capacity(j, 0);
	err = xr_zone_attach(tx->fs, xfs->tree, XR_ZONE_JOURNAL |
			     XR_ZONE_ALLOC);
	if (!err)
		xr_zone_records(tx->fs, &xfs->tree);
	return err;
}

errcode_t xr_tx_fits(extref_fs_t xfs, blk64_t blocks, blk64_t alloc)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx || blocks <= tx->max_blocks)
		return 0;
	/* what extref_journal_fit grows the journal to (journal_grow.c) */
	tx->need_len = xr_journal_len_for(tx->j, blocks, 0);
	tx->need_alloc = alloc;
	return EXTREF_ERR_TXN_TOO_BIG;
}

/* The extref_fs whose transactions fs's writes go into, or NULL. */
extref_fs_t xr_tx_fs_of(ext2_filsys fs)
{
	struct xr_tx *tx = tx_of(fs);

	return tx ? tx->xfs : NULL;
}

/*
 * Blocks the running transaction may still gather and fit an empty
 * journal at its commit (~0: no transactions on xfs).
 */
blk64_t xr_tx_room(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	size_t held;

	if (!tx)
		return ~(blk64_t)0;
	held = commit_blocks(tx);
	return held < tx->max_blocks ? tx->max_blocks - held : 0;
}

static void tx_free(struct xr_tx *tx)
{
	ext2_filsys fs = tx->fs;
	void (*cb)(ext2_filsys, blk64_t, int);
	void (*rcb)(ext2_filsys, blk64_t, blk_t, int);

	ext2fs_set_block_alloc_stats_callback(fs, tx->old_cb, &cb);
	ext2fs_set_block_alloc_stats_range_callback(fs, tx->old_range_cb,
						    &rcb);
	if (tx->io)
		xr_txio_detach(fs, tx->io);
	xr_journal_close(tx->j);
	ext2fs_free_mem(&tx->gd);
	ext2fs_free_mem(&tx->dirty);
	ext2fs_free_mem(&tx->freed);
	xr_fresh_free(&tx->fresh);
	if (tx->pending)
		ext2fs_free_block_bitmap(tx->pending);
	ext2fs_free_mem(&tx);
}

static errcode_t tx_new(extref_fs_t xfs, struct xr_tx **ret)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_tx *tx;
	errcode_t err = ext2fs_get_memzero(sizeof(*tx), &tx);

	if (err)
		return err;
	tx->xfs = xfs;
	tx->fs = fs;
	tx->gd_size = (size_t)fs->desc_blocks * fs->blocksize;
	err = ext2fs_get_mem(tx->gd_size, &tx->gd);
	if (!err)
		err = ext2fs_get_memzero(fs->group_desc_count, &tx->dirty);
	if (!err)
		err = xr_journal_open(fs, fs->io, &tx->j);
	if (!err && xr_journal_dirty(tx->j))
		err = EXTREF_ERR_JNL_REPLAY_FIRST;	/* open replays first */
	/* a writer that does not use the stamp proves the journal's blocks
	 * now, before anything (its open proves everything anyway); one that
	 * does, at its first transaction, once the proof is known */
	if (!err && (fs->flags & EXT2_FLAG_RW) &&
	    !(xfs->flags & EXTREF_OPEN_STAMP))
		err = journal_owned(tx);
	if (!err)
		tx->max_blocks = xr_journal_capacity(tx->j, 0);
	if (err) {
		xr_journal_close(tx->j);
		ext2fs_free_mem(&tx->gd);
		ext2fs_free_mem(&tx->dirty);
		ext2fs_free_mem(&tx);
		return err;
	}
	*ret = tx;
	return 0;
}

/* An expert's raw edit is about to be written: the tree's stamp goes
 * first (handle.c), so that the next open proves the counts again. */
static errcode_t first_raw(void *owner)
{
	struct xr_tx *tx = owner;

	return extref_fs_raw_edit(tx->xfs);
}

errcode_t xr_tx_attach(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_tx *tx = NULL;
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW) || !ext2fs_has_feature_journal(fs->super)
	    || !fs->super->s_journal_inum || *xr_fs_txp(xfs))
		return 0;
	if (!fs->block_map || !fs->inode_map) {
		err = ext2fs_read_bitmaps(fs);
		if (err)
			return err;
	}
	err = tx_new(xfs, &tx);
	if (!err)
		err = xr_txio_attach(fs, &tx->io);
	if (err) {
		if (tx) {
			xr_journal_close(tx->j);
			ext2fs_free_mem(&tx->gd);
			ext2fs_free_mem(&tx->dirty);
			ext2fs_free_mem(&tx);
		}
		return err;
	}
	xr_txio_set_owner(tx->io, tx);
	xr_txio_on_first_raw(tx->io, first_raw);
	ext2fs_set_block_alloc_stats_callback(fs, block_cb, &tx->old_cb);
	ext2fs_set_block_alloc_stats_range_callback(fs, range_cb,
						    &tx->old_range_cb);
	snapshot(tx);
	*xr_fs_txp(xfs) = tx;
	return 0;
}

errcode_t xr_tx_detach(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);
	errcode_t err;

	if (!tx)
		return 0;
	err = 0;
	if (tx->depth) {	/* a batch left open: it commits */
		tx->depth = 0;
		err = commit(tx);
		if (err)
			(void)rollback(tx);
	}
	if (!err && xr_journal_dirty(tx->j))
		err = checkpoint(tx, 1);
	xr_txio_hold(tx->io, 0);
	*xr_fs_txp(xfs) = NULL;
	/* the channel stays, passing through, until ext2fs_close closes it */
	xr_txio_set_owner(tx->io, NULL);
	tx->io = NULL;
	tx_free(tx);
	return err;
}

void xr_tx_discard(extref_fs_t xfs)
{
	struct xr_tx *tx = *xr_fs_txp(xfs);

	if (!tx)
		return;
	xr_txio_drop(tx->io);
	*xr_fs_txp(xfs) = NULL;
	tx_free(tx);
}
