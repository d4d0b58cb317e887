/*
 * xr_txio.h --- the transaction layer's io channel (txio.c) and the
 * transactions built on it (txn.c).
 *
 * On an image with a journal, every write an operation makes is held in
 * memory, block by block (the last write of a block wins), and reads see
 * the held blocks.  At the operation's end the held blocks are committed
 * to the journal as one transaction and then written in place; if the
 * operation fails they are dropped and the image is as it was.  File data
 * written to blocks the operation allocated goes to the image at once
 * (xr_tx_write_data): no path reaches those blocks before the commit, and
 * the journal's first flush puts them on disk before the commit block
 * (ordered mode).
 */
#ifndef XR_TXIO_H
#define XR_TXIO_H

#include "extref.h"

struct xr_txio;

/* One held block: its number and its fs->blocksize bytes. */
struct xr_txblock {
	blk64_t		blk;
	unsigned char	*data;
};

/* Put a holding channel over fs->io (and fs->image_io); it passes every
 * call through until xr_txio_hold(t, 1). */
errcode_t xr_txio_attach(ext2_filsys fs, struct xr_txio **ret);
/* Take it away again: fs->io is the channel it wrapped.  Held blocks are
 * dropped. */
void xr_txio_detach(ext2_filsys fs, struct xr_txio *t);
/* The channel under the holding one (the journal writes through it). */
io_channel xr_txio_lower(struct xr_txio *t);
/* The channel that reads the image as it is on disk: io itself, or the
 * one under a holding channel (logdump shows the journal as it is). */
io_channel xr_disk_io(io_channel io);
/* The holding channel of fs, or NULL. */
struct xr_txio *xr_txio_of(ext2_filsys fs);

void xr_txio_hold(struct xr_txio *t, int on);
int xr_txio_holding(struct xr_txio *t);

/* Write len bytes at byte offset off into the held blocks. */
errcode_t xr_txio_put_bytes(struct xr_txio *t, __u64 off, size_t len,
			    const void *data);

/* The blocks held now, in block order (the array is the caller's to free
 * with ext2fs_free_mem; the data stays the channel's). */
errcode_t xr_txio_held(struct xr_txio *t, struct xr_txblock **ret,
		       size_t *n);
size_t xr_txio_nheld(struct xr_txio *t);
/* Write every held block in place through the lower channel (no flush)
 * and mark it as logged: a later data write to it needs a revoke. */
errcode_t xr_txio_write_home(struct xr_txio *t);
/*
 * Write in place, through the lower channel and without a flush, every
 * held block that fresh(arg, blk) names (a block no committed path
 * reaches: txn_split.c), and stop holding it; one logged in a transaction
 * not yet checkpointed gets a revoke in the next commit (cancelled if the
 * block is held again: its copy is then journaled).  *nspilled: how many.
 */
errcode_t xr_txio_spill(struct xr_txio *t,
			int (*fresh)(void *arg, blk64_t blk), void *arg,
			size_t *nspilled);
/*
 * Savepoints, for a batch of operations in one transaction: the state of
 * the held blocks and revokes as each operation starts.  xr_txio_sp_end:
 * the operation stays; xr_txio_sp_rollback: back to the savepoint;
 * xr_txio_sp_changed: anything changed since.  xr_txio_sp_swap exchanges
 * the state now with the savepoint's (twice: the state at the savepoint
 * committed alone in between), and xr_txio_sp_revoke_logged then
 * revokes what that commit logged and the operation wrote as data.
 */
errcode_t xr_txio_savepoint(struct xr_txio *t);
void xr_txio_sp_end(struct xr_txio *t);
void xr_txio_sp_rollback(struct xr_txio *t);
int xr_txio_sp_changed(struct xr_txio *t);
void xr_txio_sp_swap(struct xr_txio *t);
errcode_t xr_txio_sp_revoke_logged(struct xr_txio *t);
/* Drop the held blocks and the revokes gathered since the last commit. */
void xr_txio_drop(struct xr_txio *t);
/* The log was emptied (checkpoint): no block is logged any more. */
void xr_txio_forget_logged(struct xr_txio *t);
/* Blocks logged earlier and since written as data: the next transaction
 * revokes them (xr_txio_clear_revokes after it commits). */
const blk64_t *xr_txio_revokes(struct xr_txio *t, size_t *n);
void xr_txio_clear_revokes(struct xr_txio *t);
/* Flushes asked for while holding (they wait for the commit). */
unsigned long xr_txio_held_flushes(struct xr_txio *t);
/*
 * Writes (discards, zeroouts) made outside the library's own operations
 * and commits (txn.c marks those with xr_txio_op(t, +1) ... (t, -1)),
 * held or not: an expert's raw edits, a library user's own libext2fs
 * writes.
 */
void xr_txio_op(struct xr_txio *t, int delta);
unsigned long xr_txio_raw_writes(struct xr_txio *t);
/* fn(owner) runs once, before the first such write reaches the channel
 * (txn.c: the tree's stamp goes first); its error fails that write. */
void xr_txio_on_first_raw(struct xr_txio *t, errcode_t (*fn)(void *owner));

/*
 * Write count blocks of file data at blk, blocks the running operation
 * allocated: straight to the image, dropping any held copy (and revoking
 * a logged one).  Without a holding channel this is a plain write.
 */
errcode_t xr_tx_write_data(ext2_filsys fs, blk64_t blk, int count,
			   const void *buf);

/* Who the channel works for (txn.c's state): set once, read by hooks. */
void xr_txio_set_owner(struct xr_txio *t, void *owner);
void *xr_txio_owner(struct xr_txio *t);

/* ---- transactions (txn.c) ---- */
struct xr_tx;

/* Start transactions on xfs's image if it has a journal (a no-op
 * otherwise: such images keep the ordered, flushed path).  Called by the
 * open, after the tree is loaded. */
errcode_t xr_tx_attach(extref_fs_t xfs);
/* Commit what is pending, empty the journal, take the channel away. */
errcode_t xr_tx_detach(extref_fs_t xfs);
/* Drop what is pending and take the channel away (extref_fs_abort). */
void xr_tx_discard(extref_fs_t xfs);
/*
 * One operation: xr_tx_begin, the operation, then xr_tx_end with its
 * result.  The outermost end commits (err 0) or rolls back (err set) and
 * returns the result, or the commit's error.
 */
errcode_t xr_tx_begin(extref_fs_t xfs);
errcode_t xr_tx_end(extref_fs_t xfs, errcode_t err);
/*
 * A batch (extref_tx_begin2 with EXTREF_TX_BATCH): each begin inside it
 * starts a step, whose end keeps it in the held blocks (no journal write)
 * or, on an error, rolls it back alone; the batch commits at
 * xr_tx_batch_commit, at its end, and before a step once it holds half
 * the journal.  A commit that fails drops the batch (the image as at the
 * last commit) and every later step fails with EXTREF_ERR_BATCH_LOST.
 */
errcode_t xr_tx_batch_begin(extref_fs_t xfs);
errcode_t xr_tx_batch_commit(extref_fs_t xfs);
/* The end of a begin that is not the library's own operation
 * (extref_tx_begin's, paired with extref_tx_end). */
errcode_t xr_tx_end2(extref_fs_t xfs, errcode_t err);
/*
 * Between two whole steps of a long run that leave a consistent image
 * (two dedupes of the image builder, two entries of a recursive reflink):
 * commit what is held once it fills half the journal, so that a run
 * larger than the journal goes in several transactions.  Not inside an
 * atomic begin (extref_tx_begin): that one stays whole or fails with
 * EXTREF_ERR_TXN_TOO_BIG.  In a transaction that writes its new blocks
 * early (xr_tx_spill_on: a recursive reflink) a split point commits
 * nothing: it writes those blocks in place (txn_split.c).
 */
errcode_t xr_tx_split_point(extref_fs_t xfs);
/* A split point that commits what is held whatever its size (the
 * checker's, paced by a test build's small room: fsck_txn.c); nothing in
 * an atomic begin or a transaction that spills. */
errcode_t xr_tx_split_now(extref_fs_t xfs);
/*
 * In the running transaction, write the blocks it allocates in place
 * early (txn_split.c): at its split points, which then commit nothing,
 * and at its commit, before the journal's flush; so the one commit at
 * its end journals only blocks that were in use before.  For as long as
 * the outermost transaction lasts when that is this operation or an
 * atomic begin; inside a transaction that commits in parts (EXTREF_TX_SPLIT:
 * the builder's update and dedupe), until this operation ends, when its
 * new blocks go in place and the split points after it commit again.
 */
errcode_t xr_tx_spill_on(extref_fs_t xfs);
/*
 * xr_tx_spill_on, and the inode table blocks of the new inodes that lie
 * past the part of their group's table the committed descriptors call
 * used are new blocks too (txn_split.c): written early, not journaled.
 * A rollback then leaves bytes in unused inode slots, which nothing
 * reads (the image builder's update, whose commit must stay small).
 */
errcode_t xr_tx_spill_inodes_on(extref_fs_t xfs);
/* In a transaction that spills (xr_tx_spill_on): write the blocks it
 * allocated in place now, whatever it holds (the checker's rebuild
 * paces itself so); 0 and nothing done otherwise. */
errcode_t xr_tx_spill_now(extref_fs_t xfs);
/*
 * In the running transaction, a split point ends the run with
 * EXTREF_ERR_TXN_TOO_BIG only once its in-use blocks outgrow blocks (a
 * journal as big as the free space lets it grow: journal_grow.c), not
 * the journal as it is; the commit still fails when it does not fit, and
 * says what it needed (xr_tx_need).  Until the outermost end.
 */
void xr_tx_set_ceiling(extref_fs_t xfs, blk64_t blocks);
/* What the last transaction refused EXTREF_ERR_TXN_TOO_BIG needed: the
 * journal length (s_maxlen) whose empty log holds its commit, and the
 * blocks it had allocated (0, 0: none since the last begin). */
void xr_tx_need(extref_fs_t xfs, blk64_t *len, blk64_t *alloc);
/* The journal of xfs's transactions, or NULL. */
struct xr_journal *xr_tx_journal(extref_fs_t xfs);
/* Between operations: what is committed checkpointed, the log empty. */
errcode_t xr_tx_journal_empty(extref_fs_t xfs);
/* Between operations: the journal opened again after its length
 * changed, the size limit and the system zone with it. */
errcode_t xr_tx_journal_reload(extref_fs_t xfs);
/* EXTREF_ERR_TXN_TOO_BIG if a transaction of blocks blocks cannot fit in
 * the journal (0 without one); then xr_tx_need says the journal it needs
 * and alloc, the blocks the operation would allocate. */
errcode_t xr_tx_fits(extref_fs_t xfs, blk64_t blocks, blk64_t alloc);
/* txn_split.c: the blocks allocated since the last commit. */
struct xr_fresh;
errcode_t xr_fresh_on(ext2_filsys fs, struct xr_fresh **f);
int xr_fresh_active(const struct xr_fresh *f);
void xr_fresh_note(struct xr_fresh *f, blk64_t blk, blk64_t num);
void xr_fresh_forget(struct xr_fresh *f, blk64_t blk);
/* An inode allocated: its table block is new too, after
 * xr_fresh_inodes_on, when nothing committed reads it (gd: the
 * descriptors as committed). */
void xr_fresh_inodes_on(struct xr_fresh *f);
void xr_fresh_note_inode(struct xr_fresh *f, ext2_ino_t ino,
			 const void *gd);
void xr_fresh_reset(struct xr_fresh *f, int off);
void xr_fresh_free(struct xr_fresh **f);
errcode_t xr_fresh_spill(struct xr_fresh *f, struct xr_txio *io);
errcode_t xr_fresh_split_point(struct xr_fresh *f, struct xr_txio *io,
			       blk64_t max_blocks);
/* The extref_fs of fs's transactions, NULL if it has none (the checker,
 * which works on an ext2_filsys, finds them so). */
extref_fs_t xr_tx_fs_of(ext2_filsys fs);
/* Blocks the running transaction may still gather and fit an empty
 * journal at its commit; ~0 without transactions. */
blk64_t xr_tx_room(extref_fs_t xfs);
/* xr_tx_begin, atomic: no split point commits before its end. */
errcode_t xr_tx_begin2(extref_fs_t xfs, int atomic);
/*
 * ext2fs_block_alloc_stats_range for the library's own range changes:
 * the transaction learns the range from here (libext2fs 1.47.0 gives its
 * range callback the end of the range and a count of 0), so a range
 * freed stays unusable until the commit, as a single block does.
 */
void xr_block_alloc_stats_range(ext2_filsys fs, blk64_t blk, blk_t num,
				int inuse);
/* An inode allocated or freed (its group's bitmap goes in the commit). */
void xr_tx_note_inode(ext2_filsys fs, ext2_ino_t ino);

/* journal_grow.c: the longest journal (s_maxlen) a grow could reach
 * with the free space now; 0 without transactions. */
blk64_t xr_journal_grow_limit(extref_fs_t xfs);

/* handle.c: the transaction state slot of xfs. */
struct xr_tx **xr_fs_txp(extref_fs_t xfs);

#endif /* XR_TXIO_H */
