/*
 * open.c --- the session: an extref image opened, locked, its journal
 * replayed, its tree loaded and verified, quota and transactions
 * attached; and closed again.  The one place that composes the layers
 * (docs/HACKING): the handle itself and its accessors are txn/handle.c.
 */
#include "tree/extref_int.h"
#include "txn/xr_handle.h"
#include "txn/xr_txio.h"
#include "txn/xr_zone.h"
#include "journal/xr_journal.h"
#include "quota/xr_quota.h"
#include "base/xr_clock.h"
#include "xr_image.h"
#include "extref_fsck.h"
#include "extref_ops.h"
#include "xr_seen.h"
#include "cache_safe.h"

/* EXTREF_OPEN_NOSYNC: flushes wait for close (extref.h). */
static errcode_t flush_later(io_channel io)
{
	(void) io;
	return 0;
}

/*
 * With an io manager that can write single bytes, libext2fs writes the
 * primary superblock as several small writes of the fields that changed;
 * a crash between two of them leaves a superblock whose checksum fails
 * (and a one-group image has no backup).  Without write_byte it writes
 * the whole superblock in one write: the channel gets a copy of its
 * manager without write_byte.  For EXTREF_OPEN_NOSYNC, the copy's flush
 * does nothing until close.
 */
static void set_io_manager(struct extref_fs *xfs)
{
	io_channel io = xfs->fs->io;

	xfs->orig_iom = io->manager;
	xfs->iom = *io->manager;
	xfs->iom.write_byte = NULL;
	if ((xfs->flags & EXTREF_OPEN_NOSYNC) && xfs->iom.flush) {
		xfs->sync_flush = xfs->iom.flush;
		xfs->iom.flush = flush_later;
	}
	xr_cache_safe(xfs);
	io->manager = &xfs->iom;
}

/*
 * No block cache in the channel of the undo manager (mkfs.extref
 * --convert -z), which passes the option down to its unix channel: its
 * writes that go past that cache cannot drop it (cache_safe.c does so
 * for the unix io manager).
 */
static errcode_t no_block_cache(ext2_filsys fs)
{
	if (!(fs->flags & EXT2_FLAG_RW) || fs->io->manager != undo_io_manager)
		return 0;
	return io_channel_set_options(fs->io, "cache=off");
}

/*
 * A proof that failed: when the journal's own blocks are what it found
 * (a journal over metadata or another file), say that, as a writer's
 * first commit would (txn.c); fsck.extref repairs it (0x0005).
 */
static errcode_t journal_reason(ext2_filsys fs, errcode_t err)
{
	errcode_t jerr = extref_journal_check_blocks(fs);

	return jerr == EXTREF_ERR_JNL_OVERLAP ? jerr : err;
}

/*
 * The tree's stamp (tree/stamp.c) says that a writer of this library
 * proved the counts against every extent mapping and closed cleanly, and
 * the image's allocation state is still the one it left.  Journaled
 * images only: only there does the holding channel count every write
 * that is not the library's own (xr_fs_verified), which a stamp needs.
 */
static int stamp_holds(extref_fs_t xfs)
{
	__u32 s = xr_tree_stamp(xfs->tree);

	return s && (xfs->flags & EXTREF_OPEN_STAMP) &&
	       !(xfs->flags & EXTREF_OPEN_VERIFY) &&
	       ext2fs_has_feature_journal(xfs->fs->super) &&
	       !(xfs->flags & EXTREF_OPEN_NO_JOURNAL) &&
	       !xr_stamp_bitmaps(xfs->fs) &&	/* bound without csums */
	       s == xr_state_stamp(xfs->tree);
}

/* Whether anything reached the image through this session's channel: a
 * session that wrote nothing (a refused operation, one rolled back) leaves
 * the image as it was, byte for byte, stamp and all. */
static int wrote(ext2_filsys fs)
{
	io_stats st = NULL;

	return !fs->io->manager->get_stats ||
	       fs->io->manager->get_stats(fs->io, &st) || !st ||
	       st->bytes_written > 0;
}

/*
 * At a clean close: the stamp of the state this session leaves, when
 * everything it wrote went through the library's own transactions after
 * a proof (xr_fs_verified); else none (an expert's raw edit cleared the
 * stamp before it was written: extref_fs_raw_edit), so that it is proven
 * again at the next open.  The bitmaps are written first: they
 * set the descriptors' checksums, which the stamp covers.
 */
static errcode_t leave_stamp(extref_fs_t xfs, int proven)
{
	extref_tree_t t = xfs->tree;
	errcode_t err;

	if (!t || !(xfs->flags & EXTREF_OPEN_RW) ||
	    !(xfs->flags & EXTREF_OPEN_STAMP) || !wrote(xfs->fs))
		return 0;
	err = extref_tree_commit(t);
	if (err || !proven)	/* a raw edit cleared the stamp (handle.c) */
		return err;
	err = ext2fs_write_bitmaps(xfs->fs);
	if (!err)
		err = xr_stamp_bitmaps(xfs->fs);
	return err ? err : xr_tree_write_stamp(t, xr_state_stamp(t));
}

/*
 * Every writer's system zone (txn/zone.c): the descriptors checked, the
 * metadata and the journal's blocks, against which every extent an
 * operation touches and every allocation is checked, whatever the stamp
 * says.  Built again once the tree is loaded: the journal must share no
 * block with the tree's records or inode 5.
 */
static errcode_t zone_attach(extref_fs_t xfs)
{
	errcode_t err;

	if (!(xfs->fs->flags & EXT2_FLAG_RW))
		return 0;
	err = xr_zone_attach(xfs->fs, xfs->tree,
			     XR_ZONE_JOURNAL | XR_ZONE_ALLOC);
	if (!err)	/* a block a record covers is never allocated */
		xr_zone_records(xfs->fs, &xfs->tree);
	return err;
}

/*
 * A writer first releases the orphans a crash left (files unlinked while
 * open, extref_orphan_release_all), through the counts, before anything
 * else can reach them: stock e2fsck would free their blocks in the
 * bitmap, shared ones too.  Only with the tree loaded; a damaged list
 * fails the open (EXTREF_ERR_ORPHAN_LIST: run fsck.extref), or is cut
 * (EXTREF_OPEN_CUT_ORPHANS: fsck.extref's repair).
 */
static errcode_t release_orphans(extref_fs_t xfs)
{
	errcode_t err;

	if (!(xfs->flags & EXTREF_OPEN_RW) || !xfs->tree ||
	    !xfs->fs->super->s_last_orphan)
		return 0;
	err = extref_orphan_release_all(xfs, NULL);
	if (err == EXTREF_ERR_ORPHAN_LIST &&
	    (xfs->flags & EXTREF_OPEN_CUT_ORPHANS))
		err = extref_orphan_cut(xfs);
	return err;
}

/*
 * A writer trusts no tree it has not checked (FORMAT.md, "What a writer
 * trusts"): counts too low would let a free hand out a block that
 * another inode still maps.  A tree that fails is not kept.
 */
static errcode_t load_tree(extref_fs_t xfs)
{
	int rw = xfs->flags & EXTREF_OPEN_RW;
	errcode_t err;

	if (xfs->tree)
		return 0;
	err = extref_tree_open(xfs->fs, rw ? EXTREF_TREE_RW : 0, &xfs->tree);
	if (err || !rw)
		return err;
	err = zone_attach(xfs);
	if (!err && (xfs->flags & EXTREF_OPEN_TRUSTED))
		return 0;
	if (err)
		goto out;
	if (!xr_seen_open(xfs) && stamp_holds(xfs)) {	/* seen.c */
		xr_tree_stamp_clear(xfs->tree);	/* the next commit clears it */
		xr_fs_mark_verified(xfs, EXTREF_PROOF_STAMP);
		return 0;
	}
	err = extref_fsck_verify_write(xfs->fs, NULL);
	if (err == EXTREF_ERR_UNTRUSTED)
		err = journal_reason(xfs->fs, err);
out:
	if (err) {
		extref_tree_free(xfs->tree);
		xfs->tree = NULL;
		return err;
	}
	xr_tree_stamp_clear(xfs->tree);
	xr_fs_mark_verified(xfs, EXTREF_PROOF_FULL);
	return 0;
}

/* Loaded after the open (debugfs.extref's lazy load): a writer releases
 * the orphan list then; a damaged one leaves no tree. */
errcode_t extref_fs_load_tree(extref_fs_t xfs)
{
	int had = xfs->tree != NULL;
	errcode_t err = load_tree(xfs);

	if (err || had)
		return err;
	err = release_orphans(xfs);
	if (err) {
		extref_tree_free(xfs->tree);
		xfs->tree = NULL;
	}
	return err;
}

/* The wrap proper; on success the extref_fs owns fs and lock. */
static errcode_t wrap_locked(ext2_filsys fs, int flags,
			     extref_image_lock_t lock, extref_fs_t *ret,
			     errcode_t *tree_err)
{
	struct extref_fs *xfs;
	errcode_t err;

	if (tree_err)
		*tree_err = 0;
	err = ext2fs_get_memzero(sizeof(*xfs), &xfs);
	if (err)
		return err;
	xfs->fs = fs;
	xfs->flags = flags;
	xr_clock_init(fs);
	err = no_block_cache(fs);
	if (err) {
		ext2fs_free_mem(&xfs);
		return err;
	}
	set_io_manager(xfs);
	if (!(flags & EXTREF_OPEN_NO_TREE)) {
		err = load_tree(xfs);
		if (err && (flags & EXTREF_OPEN_FORCE)) {
			if (tree_err)
				*tree_err = err;
			err = 0;
		}
	}
	if (!err && !xfs->tree)		/* else built as it was loaded */
		err = zone_attach(xfs);
	xr_seen_open(xfs);		/* before anything is written */
	if (!err && (fs->flags & EXT2_FLAG_RW))
		err = xr_quota_attach(fs);	/* usage kept per inode write */
	if (!err && (fs->flags & EXT2_FLAG_RW))
		err = xr_fs_add_hook(xfs, &xr_quota_tx_hook);
	if (!err && !(flags & EXTREF_OPEN_NO_JOURNAL))
		err = xr_tx_attach(xfs);
	if (err) {
		xr_zone_detach(fs);
		xr_quota_detach(fs);
		extref_tree_free(xfs->tree);
		fs->io->manager = xfs->orig_iom;	/* the copy goes away */
		ext2fs_free_mem(&xfs);
		return err;
	}
	xfs->lock = lock;
	*ret = xfs;
	return 0;
}

errcode_t extref_fs_wrap(ext2_filsys fs, int flags, extref_fs_t *ret,
			 errcode_t *tree_err)
{
	int rw = (flags & EXTREF_OPEN_RW) || (fs->flags & EXT2_FLAG_RW);
	extref_image_lock_t lock;
	errcode_t err;

	err = extref_image_lock(fs->device_name, rw ? EXTREF_LOCK_WRITE : 0,
				&lock);
	if (err)
		return err;
	err = wrap_locked(fs, flags, lock, ret, tree_err);
	if (err)
		extref_image_unlock(lock);
	return err;
}

/*
 * A read-write open replays a journal that needs recovery, as e2fsck
 * does, then opens the image again (its superblock, descriptors and
 * bitmaps are the replayed ones).  Writing without a replay would build on
 * a state the journal overrides: EXTREF_OPEN_NO_JOURNAL refuses.  A
 * read-only open shows the image as it is, unreplayed (as stock debugfs
 * does); the tools say so.
 */
static errcode_t replay(const char *name, int eflags, io_manager iom,
			int flags, ext2_filsys *fsp, unsigned *n)
{
	errcode_t err;

	if (flags & EXTREF_OPEN_NO_JOURNAL)
		return EXTREF_ERR_NEEDS_RECOVERY;
	err = xr_journal_recover(*fsp, (*fsp)->io, 0, n);
	ext2fs_free(*fsp);
	*fsp = NULL;
	if (!err)
		err = ext2fs_open2(name, NULL, eflags, 0, 0, iom, fsp);
	return err;
}

/*
 * A journal that holds a log while the superblock's needs_recovery is
 * clear: an older extref's commit wrote both before its first flush, and
 * a power cut there could keep the journal superblock's start and lose
 * the flag (jcommit.c now writes the start after that flush).  A
 * write open replays it anyway (nothing committed is in it: the commit
 * block comes after that flush), as e2fsck -y does (FORMAT.md section
 * 13), rather than refuse to take new transactions.  A journal that
 * cannot be read is left to the transaction layer to refuse.
 */
static int journal_dirty_unflagged(ext2_filsys fs)
{
	struct xr_journal *j = NULL;
	int dirty;

	if (!ext2fs_has_feature_journal(fs->super) ||
	    !fs->super->s_journal_inum ||
	    ext2fs_has_feature_journal_needs_recovery(fs->super) ||
	    xr_journal_open(fs, fs->io, &j))
		return 0;
	dirty = xr_journal_dirty(j);
	xr_journal_close(j);
	return dirty;
}

/*
 * A read-only open of an image whose journal needs recovery: the replay
 * goes into a holding channel (txio.c) that never writes, and the
 * superblock and group descriptors are read again through it, so the
 * image is shown as the replay leaves it and the file is not touched.
 */
static errcode_t replay_in_memory(ext2_filsys fs, unsigned *n)
{
	unsigned int bs = fs->blocksize;
	struct xr_txio *t;
	char *buf;
	dgrp_t i;
	errcode_t err = xr_txio_attach(fs, &t);

	if (err)
		return err;
	xr_txio_hold(t, 1);		/* for good: nothing reaches the file */
	err = xr_journal_recover(fs, fs->io, XR_JRECOVER_SAME_LAYOUT, n);
	if (err) {			/* nothing replayed: as it is on disk */
		xr_txio_detach(fs, t);
		return err;
	}
	err = ext2fs_get_mem(bs, &buf);
	if (err)
		return err;		/* the channel goes with fs */
	err = io_channel_read_blk64(fs->io, SUPERBLOCK_OFFSET / bs, 1, buf);
	if (!err)
		memcpy(fs->super, buf + SUPERBLOCK_OFFSET % bs, SUPERBLOCK_SIZE);
	for (i = 0; !err && i < fs->desc_blocks; i++)
		err = io_channel_read_blk64(fs->io,
				ext2fs_descriptor_block_loc2(fs,
					fs->super->s_first_data_block, i),
				1, (char *)fs->group_desc + (size_t)i * bs);
	ext2fs_free_mem(&buf);
	return err;
}

io_manager extref_io_manager(void)
{
#ifdef EXTREF_FAULT_INJECTION
	/*
	 * Tests only (configure --enable-fault-injection): EXTREF_FAULT
	 * selects the fault-injecting io manager.  Other builds have no such
	 * manager and ignore the variable.
	 */
	const char *fault = getenv("EXTREF_FAULT");

	if (fault && *fault)
		return extref_fault_io_manager;
#endif
	return unix_io_manager;
}

errcode_t xr_fs_wrap_held(ext2_filsys fs, int flags, extref_fs_t *ret,
			  errcode_t *tree_err)
{
	return wrap_locked(fs, flags, NULL, ret, tree_err);
}

/* extref_fs_open, the write lock taken here, or held by the caller. */
static errcode_t fs_open(const char *name, int flags, int held,
			 extref_fs_t *ret, errcode_t *tree_err)
{
	ext2_filsys fs;
	int eflags = EXT2_FLAG_64BITS;
	int rw = flags & EXTREF_OPEN_RW;
	extref_image_lock_t lock;
	unsigned replayed = 0;
	errcode_t err, replay_err = 0;
	io_manager iom = extref_io_manager();

	/* the mount check and the lock come before libext2fs opens it */
	lock = NULL;
	if ((flags & EXTREF_OPEN_NO_LOCK) && rw)
		return EXT2_ET_INVALID_ARGUMENT;
	err = (flags & EXTREF_OPEN_NO_LOCK) || held ? 0 :
	      extref_image_lock(name, rw ? EXTREF_LOCK_WRITE : 0, &lock);
	if (err)
		return err;
	if (rw)
		eflags |= EXT2_FLAG_RW;
	if (rw && extref_image_is_blockdev(name))
		eflags |= EXT2_FLAG_EXCLUSIVE;
	if (flags & EXTREF_OPEN_FORCE)
		eflags |= EXT2_FLAG_IGNORE_CSUM_ERRORS;
	err = ext2fs_open2(name, NULL, eflags, 0, 0, iom, &fs);
	if (!err && rw && (ext2fs_has_feature_journal_needs_recovery(fs->super)
			   || (!(flags & EXTREF_OPEN_NO_JOURNAL) &&
			       journal_dirty_unflagged(fs))))
		err = replay(name, eflags, iom, flags, &fs, &replayed);
	else if (!err && !(flags & EXTREF_OPEN_NO_JOURNAL) &&
		 ext2fs_has_feature_journal_needs_recovery(fs->super))
		replay_err = replay_in_memory(fs, &replayed);
	/* a journal that cannot be replayed leaves the read-only view as it
	 * is on disk (extref_fs_replay_error says why), as stock debugfs */
	if (err && fs) {
		ext2fs_free(fs);
		fs = NULL;
	}
	if (err)
		goto cleanup;
	err = wrap_locked(fs, flags, lock, ret, tree_err);
	if (err)
		ext2fs_free(fs);
	else {
		(*ret)->replayed = replayed;
		(*ret)->replay_err = replay_err;
		err = release_orphans(*ret);
		if (err) {
			extref_fs_abort(*ret);
			return err;	/* the abort let the lock go */
		}
	}
cleanup:
	if (err)
		extref_image_unlock(lock);
	return err;
}

errcode_t extref_fs_open(const char *name, int flags, extref_fs_t *ret,
			 errcode_t *tree_err)
{
	return fs_open(name, flags, 0, ret, tree_err);
}

errcode_t xr_fs_open_held(const char *name, int flags, extref_fs_t *ret,
			  errcode_t *tree_err)
{
	if (!(flags & EXTREF_OPEN_RW))
		return EXT2_ET_INVALID_ARGUMENT;
	return fs_open(name, flags, 1, ret, tree_err);
}

/*
 * ext2fs_close2 writes what is dirty, then frees fs, and with it closes
 * the channel, whose last flush (and fsync) can fail: ext2fs_free ignores
 * that.  A reference of ours keeps the channel past the free, so that its
 * flush and close are ours to check.  Journaled, the superblock is
 * written without flushes of its own and the one flush here syncs it.
 */
static errcode_t close_checked(ext2_filsys fs, int journaled)
{
	io_channel io = fs->io;
	int rw = fs->flags & EXT2_FLAG_RW, holding = xr_txio_of(fs) != NULL;
	errcode_t err, err2;

	io->refcount++;
	err = ext2fs_close2(fs, journaled ? EXT2_FLAG_FLUSH_NO_SYNC : 0);
	if (err)
		ext2fs_free(fs);
	/* ext2fs_close2 synced (not journaled), or the holding channel's
	 * close flushes the one below and says so */
	err2 = rw && journaled && !holding ? io_channel_flush(io) : 0;
	if (!err)
		err = err2;
	err2 = io_channel_close(io);
	return err ? err : err2;
}

errcode_t extref_fs_close(extref_fs_t xfs)
{
	errcode_t err, err2;
	int journaled, proven;

	if (!xfs)
		return 0;
	journaled = xfs->tx != NULL;
	proven = xr_fs_proven(xfs);	/* counted by the holding channel */
	err = xr_tx_detach(xfs);	/* commits, empties the journal */
	if (err) {
		extref_fs_abort(xfs);	/* nothing more is written */
		return err;
	}
	err = xr_quota_flush(xfs->fs);
	xr_quota_detach(xfs->fs);
	if (!err)
		err = leave_stamp(xfs, proven);
	if (!err)
		err = xr_seen_close(xfs, proven);	/* after the last header write */
	err2 = extref_tree_close(xfs->tree);
	if (!err)
		err = err2;
	if (xfs->sync_flush)
		xfs->iom.flush = xfs->sync_flush;	/* close syncs */
	xr_zone_detach(xfs->fs);
	err2 = close_checked(xfs->fs, journaled);
	if (!err)
		err = err2;
	xfs->fs = NULL;
	extref_image_unlock(xfs->lock);	/* after the last write */
	ext2fs_free_mem(&xfs->ident);
	ext2fs_free_mem(&xfs);
	return err ? err : err2;
}

void extref_fs_abort(extref_fs_t xfs)
{
	if (!xfs)
		return;
	xr_tx_discard(xfs);
	xr_quota_detach(xfs->fs);
	extref_tree_free(xfs->tree);
	xr_zone_detach(xfs->fs);
	ext2fs_free(xfs->fs);
	extref_image_unlock(xfs->lock);
	ext2fs_free_mem(&xfs->ident);
	ext2fs_free_mem(&xfs);
}
