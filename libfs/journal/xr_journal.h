/*
 * xr_journal.h --- the image's ext4 journal (jbd2): write transactions,
 * checkpoint, replay, and walk the log (internal to the library and its
 * tools; not installed).
 *
 * The journal is the internal one (inode s_journal_inum).  Its format is
 * the kernel's jbd2 (extref_format.h, "The ext4 journal"), so that the
 * kernel and stock e2fsck replay what this module writes, and this module
 * replays what they write.  Every read and write of the journal, of the
 * blocks replayed and of the primary superblock's needs_recovery bit goes
 * through the io_channel given to xr_journal_open / xr_journal_recover:
 * the caller passes the raw channel below any buffering of its own, with
 * the filesystem's block size.  The journal inode's block map is read
 * once, at open, through fs.
 */
#ifndef XR_JOURNAL_H
#define XR_JOURNAL_H

#include <errno.h>
#include <ext2fs/ext2fs.h>
#include "extref.h"

struct xr_journal;			/* opaque */

/*
 * Map the journal inode's blocks, read and verify its superblock.  Errors:
 * EXTREF_ERR_JNL_NONE (no journal), EXTREF_ERR_JNL_EXTERNAL,
 * EXTREF_ERR_JNL_BAD_SUPER, EXTREF_ERR_JNL_UNSUPP (unknown incompat
 * feature), EXTREF_ERR_JNL_FAST_COMMIT.  Writes nothing.
 */
errcode_t xr_journal_open(ext2_filsys fs, io_channel io,
			  struct xr_journal **ret);
void	  xr_journal_close(struct xr_journal *j);

/* Filesystem blocks one transaction with nrevoke revoke records can log
 * now (descriptor, revoke and commit blocks accounted for). */
blk64_t   xr_journal_capacity(struct xr_journal *j, size_t nrevoke);

/* The journal length (s_maxlen) whose empty log takes one transaction
 * of n blocks and nrevoke revoke records. */
blk64_t   xr_journal_len_for(struct xr_journal *j, blk64_t n,
			     size_t nrevoke);
/* The journal's length now (s_maxlen, in blocks). */
blk64_t   xr_journal_len(struct xr_journal *j);
/*
 * Write the journal superblock of an empty journal (s_start 0) with
 * s_maxlen = maxlen and flush: one block, so a crash leaves the old
 * length or the new.  The inode must map maxlen blocks already (the
 * kernel and e2fsck take an inode longer than s_maxlen at s_maxlen).
 * EXTREF_ERR_JNL_REPLAY_FIRST if the log holds data.  The handle's map
 * ends at the old length: close it and open the journal again.
 */
errcode_t xr_journal_set_maxlen(struct xr_journal *j, __u32 maxlen);

/* Does the journal hold transactions to replay (s_start != 0)? */
int	  xr_journal_dirty(struct xr_journal *j);

/* A filesystem block to log: its number and fs->blocksize bytes. */
struct xr_jblock {
	blk64_t		blk;
	const void	*data;
};

/*
 * Write one transaction at the log's head and flush it: descriptor
 * blocks and copies, revoke blocks, flush, commit block, flush.  Before
 * the first transaction of an empty journal it also writes the journal
 * superblock (s_start, s_sequence, features) and sets needs_recovery in
 * the primary superblock, both flushed before the commit block.  A block
 * may not be both logged and revoked.  EXTREF_ERR_JNL_FULL when the
 * transaction does not fit (xr_journal_capacity); nothing is written then.
 */
errcode_t xr_journal_commit(struct xr_journal *j, const struct xr_jblock *b,
			    size_t n, const blk64_t *revoke, size_t nrevoke);

/*
 * Everything committed is written in place and flushed: mark the journal
 * empty (s_start 0, s_sequence the next tid), flush, clear needs_recovery,
 * flush.
 */
errcode_t xr_journal_checkpoint_done(struct xr_journal *j);
/* The same writes without the last flush (after needs_recovery is
 * cleared), for a caller that flushes next: the last checkpoint before
 * ext2fs_close, which writes the superblock again and flushes. */
errcode_t xr_journal_checkpoint_done_noflush(struct xr_journal *j);

/*
 * Set (on) or clear needs_recovery in the primary superblock on disk
 * (read through the channel, checksum updated) and in fs->super, then
 * flush.  Nothing is written when the disk already says so.
 *
 * A caller whose transactions log the superblock's block calls it with
 * on=1 when a transaction begins, before that block is captured: then
 * the copy in the journal and the one written in place both carry the
 * bit, and needs_recovery is never clear on disk while the journal holds
 * data (the kernel discards, unreplayed, a journal whose filesystem says
 * it needs no recovery).  Commit sets it too, for callers that do not.
 */
errcode_t xr_journal_mark_recover(struct xr_journal *j, int on);

/*
 * The journal inode's blocks are its own (jown.c): none twice in its
 * map, none group metadata, none mapped by another inode.  Else
 * EXTREF_ERR_JNL_OVERLAP (extref_journal_detail says which block).
 * Every writer checks it before its first commit; the replay before its
 * first write.
 */
errcode_t xr_journal_check_blocks(struct xr_journal *j);

/*
 * Replay the journal as the kernel and e2fsck do, in three passes: the
 * scan (at open) finds the complete transactions and verifies every
 * descriptor, tag, revoke block and commit; the revoke records of those
 * transactions are gathered; the last unrevoked copy of each block is
 * written home from what the scan verified.  Then flush, mark the
 * journal empty, clear needs_recovery.  *ntrans gets the transactions
 * replayed.  Nothing is written unless the whole log verified, every
 * target lies inside the filesystem and outside the log being
 * replayed, the journal's blocks are its own, and a replayed superblock and group
 * descriptors validate (EXTREF_ERR_JNL_CORRUPT, _TARGET, _BAD_REVOKE,
 * _OVERLAP, _BAD_FS; extref_journal_detail names the transaction or
 * block).  With XR_JRECOVER_SAME_LAYOUT, a replayed superblock must also
 * keep the size, features and UUID (EXTREF_ERR_JNL_RESIZED): for a view
 * that keeps the handle fs and only reads its superblock and descriptors
 * again.  fs->super and any cached metadata are stale afterwards: reopen
 * the image (or read them again).
 */
#define XR_JRECOVER_SAME_LAYOUT	0x0001
errcode_t xr_journal_recover(ext2_filsys fs, io_channel io, int flags,
			     unsigned *ntrans);

/* ----- walking the log (logdump) ----- */

/*
 * Call fn for every record of the log from s_start, in order, ending with
 * one EXTREF_JREC_END (also for an empty journal).  The walk follows the
 * structure only (checksums and a malformed revoke block are reported,
 * not acted on: the walk goes on after them).  fn returns 0 to
 * go on, EXTREF_JWALK_STOP to stop, or an error, which the walk returns.
 */
errcode_t xr_journal_walk(struct xr_journal *j, extref_jwalk_fn fn, void *priv);

void	  xr_journal_info(struct xr_journal *j, struct extref_jinfo *info);

#endif /* XR_JOURNAL_H */
