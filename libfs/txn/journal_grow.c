/*
 * journal_grow.c --- the image's journal made longer, crash-safely
 * (extref_journal_grow), and long enough for a transaction it refused
 * (extref_journal_fit).  docs/TRANSACTIONS.md, "An update whose in-use
 * blocks outgrow the journal: the journal grows".
 *
 *   1. The log is emptied (checkpoint: s_start 0).
 *   2. One ordinary transaction of the journal as it is: free blocks
 *      allocated (after the journal's last block when free: the
 *      allocator's goal), mapped at the end of the journal inode's
 *      extent tree, its size and block count raised, the superblock's
 *      backup of the inode's map and size (s_jnl_blocks) set, the
 *      bitmaps and group counts.  The new blocks are zeroed directly
 *      before the commit (free until it, as any new block of file data).
 *      Committed, then checkpointed.
 *   3. The journal superblock (one block) written with the new s_maxlen.
 *   4. The journal, the transactions' size limit and the system zone
 *      read again.
 * A crash inside 2 leaves the image as it was (zeros in free blocks);
 * between 2 and 3 an inode longer than s_maxlen, which the kernel's
 * jbd2_journal_load, e2fsck's e2fsck_journal_load and our own open take
 * at s_maxlen; after 3 the longer journal.
 */
#include <string.h>
#include "extref_err.h"
#include "journal/xr_journal.h"
#include "txn/xr_handle.h"
#include "txn/xr_txio.h"

/* mke2fs's largest journal (-J size): no tool is surprised by it. */
#define JGROW_MAX	10240000ULL
/* Zeros written at most this many blocks at a time. */
#define ZERO_RUN	256

static errcode_t read_jinode(ext2_filsys fs, struct ext2_inode_large *in)
{
	errcode_t err = ext2fs_read_inode_full(fs, fs->super->s_journal_inum,
					       (struct ext2_inode *)in,
					       sizeof(*in));

	if (!err && (!(in->i_flags & EXT4_EXTENTS_FL) ||
		     !LINUX_S_ISREG(in->i_mode)))
		err = EXTREF_ERR_JNL_GROW;
	return err;
}

/* Zeros over the journal's blocks [from, to), straight to the image. */
static errcode_t zero_new(ext2_filsys fs, struct ext2_inode_large *in,
			  blk64_t from, blk64_t to)
{
	ext2_ino_t ino = fs->super->s_journal_inum;
	blk64_t l, pblk, start = 0;
	int run = 0;
	char *zero = NULL;
	errcode_t err = ext2fs_get_memzero((size_t)ZERO_RUN * fs->blocksize,
					   &zero);

	for (l = from; !err && l < to; l++) {
		err = ext2fs_bmap2(fs, ino, (struct ext2_inode *)in, NULL, 0,
				   l, NULL, &pblk);
		if (!err && !pblk)
			err = EXTREF_ERR_JNL_GROW;
		if (err || (run && pblk == start + run && run < ZERO_RUN)) {
			run++;
			continue;
		}
		if (run)
			err = xr_tx_write_data(fs, start, run, zero);
		start = pblk;
		run = 1;
	}
	if (!err && run)
		err = xr_tx_write_data(fs, start, run, zero);
	ext2fs_free_mem(&zero);
	return err;
}

/* The superblock's backup of inode 8 (e2fsck compares it). */
static void backup_map(ext2_filsys fs, const struct ext2_inode_large *in)
{
	memcpy(fs->super->s_jnl_blocks, in->i_block, EXT2_N_BLOCKS * 4);
	fs->super->s_jnl_blocks[15] = in->i_size_high;
	fs->super->s_jnl_blocks[16] = in->i_size;
	fs->super->s_jnl_backup_type = EXT3_JNL_BACKUP_BLOCKS;
	ext2fs_mark_super_dirty(fs);
}

/* Step 2's changes, inside the transaction. */
static errcode_t extend(ext2_filsys fs, blk64_t old, blk64_t len)
{
	ext2_ino_t ino = fs->super->s_journal_inum;
	struct ext2_inode_large in;
	errcode_t err = read_jinode(fs, &in);

	/* the goal: after the last extent's blocks (fallocate's own) */
	if (!err)
		err = ext2fs_fallocate(fs, EXT2_FALLOCATE_FORCE_INIT |
				       EXT2_FALLOCATE_INIT_BEYOND_EOF, ino,
				       (struct ext2_inode *)&in, ~0ULL, old,
				       len - old);
	if (!err)
		err = ext2fs_inode_size_set(fs, (struct ext2_inode *)&in,
					    len * fs->blocksize);
	if (!err)
		err = ext2fs_write_inode_full(fs, ino, (struct ext2_inode *)&in,
					      sizeof(in));
	if (!err)
		err = zero_new(fs, &in, old, len);
	if (!err)
		backup_map(fs, &in);
	return err;
}

/*
 * The blocks inode 8 maps: s_maxlen or more (a growth that crashed
 * before step 3 left them mapped and zeroed: they are used as they are).
 */
static errcode_t inode_len(ext2_filsys fs, blk64_t *len)
{
	struct ext2_inode_large in;
	errcode_t err = read_jinode(fs, &in);

	if (!err)
		*len = EXT2_I_SIZE(&in) / fs->blocksize;
	return err;
}

static errcode_t grow_tx(extref_fs_t xfs, blk64_t old, blk64_t len)
{
	errcode_t err = xr_tx_begin(xfs);

	if (err)
		return err;
	return xr_tx_end(xfs, extend(extref_fs_ext2(xfs), old, len));
}

errcode_t extref_journal_grow(extref_fs_t xfs, blk64_t blocks)
{
	struct xr_journal *j = xr_tx_journal(xfs);
	blk64_t have = 0;
	errcode_t err;

	if (!j)
		return EXTREF_ERR_JNL_NONE;
	if (blocks <= xr_journal_len(j))
		return 0;
	if (blocks > JGROW_MAX)
		return EXTREF_ERR_JNL_GROW;
	err = xr_tx_journal_empty(xfs);			/* 1 */
	if (!err)
		err = inode_len(extref_fs_ext2(xfs), &have);
	if (!err && have > blocks && have <= JGROW_MAX)
		blocks = have;		/* all that the inode maps already */
	if (!err && have < blocks)
		err = grow_tx(xfs, have, blocks);		/* 2 */
	if (!err)
		err = xr_tx_journal_empty(xfs);
	if (!err)
		err = xr_journal_set_maxlen(j, (__u32)blocks);	/* 3 */
	if (!err)
		err = xr_tx_journal_reload(xfs);		/* 4 */
	return err;
}

/* The longest journal the free space allows now (blocks), 0: none. */
blk64_t xr_journal_grow_limit(extref_fs_t xfs)
{
	struct xr_journal *j = xr_tx_journal(xfs);
	blk64_t n;

	if (!j)
		return 0;
	n = xr_journal_len(j) +
	    ext2fs_free_blocks_count(extref_fs_ext2(xfs)->super);
	return n < JGROW_MAX ? n : JGROW_MAX;
}

/*
 * After a transaction refused EXTREF_ERR_TXN_TOO_BIG: the journal it
 * needed and an eighth more (the same run again may touch a few more
 * groups), when the free space holds that growth (and its extent
 * blocks) besides the blocks the transaction took and an eighth more;
 * else EXTREF_ERR_TXN_TOO_BIG and nothing changed.
 */
errcode_t extref_journal_fit(extref_fs_t xfs)
{
	struct xr_journal *j = xr_tx_journal(xfs);
	blk64_t need, alloc, len, add, free;
	errcode_t err;

	xr_tx_need(xfs, &need, &alloc);
	if (!j || !need)
		return EXTREF_ERR_TXN_TOO_BIG;
	/* inside a caller's transaction the journal cannot change */
	err = xr_tx_journal_empty(xfs);
	if (err == EXT2_ET_INVALID_ARGUMENT)
		return EXTREF_ERR_TXN_TOO_BIG;
	if (err)
		return err;
	len = need + need / 8 + 16;
	if (len <= xr_journal_len(j))	/* grown already: twice as long */
		len = 2 * xr_journal_len(j);
	add = len - xr_journal_len(j);
	free = ext2fs_free_blocks_count(extref_fs_ext2(xfs)->super);
	if (len > JGROW_MAX || add + add / 256 + 16 + alloc + alloc / 8 > free)
		return EXTREF_ERR_TXN_TOO_BIG;
	err = extref_journal_grow(xfs, len);
	/* no run of free blocks left for it after all: rolled back */
	if (err == EXT2_ET_BLOCK_ALLOC_FAIL || err == EXTREF_ERR_JNL_GROW)
		err = EXTREF_ERR_TXN_TOO_BIG;
	return err;
}
