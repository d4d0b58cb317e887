/*
 * fs.c --- an extref image: the ext4 filesystem and its tree together.
 */
#include <stdlib.h>
#include <errno.h>
#include "extref_int.h"
/*
 * The tree layer reaches up to the checker here, through its public
 * header only: a read-write open verifies the tree with the fsck core's
 * read-only passes (extref_fsck_verify_write, check/fsck_trust.c).  The
 * checker's internals stay private to check/; the call is the one place
 * the tree layer depends on it, and the open is where it belongs: every
 * tool and library user that writes goes through here.
 */
#include "extref_fsck.h"
#include "extref_ops.h"
#include "quota/xr_quota.h"
#include "xr_txio.h"
#include "../journal/xr_journal.h"

struct extref_fs {
	ext2_filsys	fs;
	extref_tree_t	tree;
	int		flags;
	struct struct_io_manager iom;	/* the channel's, without write_byte */
	io_manager	orig_iom;
	errcode_t	(*sync_flush)(io_channel);	/* EXTREF_OPEN_NOSYNC */
	extref_image_lock_t lock;	/* held until close (imglock.c) */
	struct extref_cred ident;	/* extref_set_identity */
	int		have_ident;
	int		perm_hold;	/* xr_perm_hold: inner steps unchecked */
	struct xr_tx	*tx;		/* transactions (txn.c), journaled images */
	int		verified;	/* the open's verification passed */
	unsigned long	verified_at;	/* raw writes (txio.c) then */
	unsigned	replayed;	/* transactions the open replayed */
	errcode_t	replay_err;	/* why a read-only open could not */
	ext2_ino_t	damage_ino;	/* where a checksum failed an */
	blk64_t		damage_blk;	/* operation (extref_damage_where) */
};

errcode_t extref_tx_begin(extref_fs_t xfs)
{
	return xr_tx_begin2(xfs, 1);
}

errcode_t extref_tx_begin2(extref_fs_t xfs, int flags)
{
	if (flags & ~EXTREF_TX_SPLIT)
		return EXT2_ET_INVALID_ARGUMENT;
	return xr_tx_begin2(xfs, !(flags & EXTREF_TX_SPLIT));
}

errcode_t extref_tx_end(extref_fs_t xfs, errcode_t err)
{
	return xr_tx_end2(xfs, err);
}

int extref_fs_journaled(extref_fs_t xfs)
{
	return xfs->tx != NULL;
}

unsigned extref_fs_replayed(extref_fs_t xfs)
{
	return xfs->replayed;
}

errcode_t extref_fs_replay_error(extref_fs_t xfs)
{
	return xfs->replay_err;
}

void extref_damage_where(extref_fs_t xfs, ext2_ino_t *ino, blk64_t *blk)
{
	*ino = xfs->damage_ino;
	*blk = xfs->damage_blk;
}

void xr_fs_set_damage(extref_fs_t xfs, ext2_ino_t ino, blk64_t blk)
{
	xfs->damage_ino = ino;
	xfs->damage_blk = blk;
}

struct xr_tx **xr_fs_txp(extref_fs_t xfs)
{
	return &xfs->tx;
}

/* After a rollback: the tree as committed (it was verified at open and
 * every commit since is ours). */
errcode_t xr_fs_reload_tree(extref_fs_t xfs)
{
	if (!xfs->tree)
		return 0;
	extref_tree_free(xfs->tree);
	xfs->tree = NULL;
	/* a conversion rolled back: the image has no tree (again) */
	if (!ext2fs_has_feature_shared_blocks(xfs->fs->super))
		return 0;
	return extref_tree_open(xfs->fs, (xfs->flags & EXTREF_OPEN_RW) ?
				EXTREF_TREE_RW : 0, &xfs->tree);
}

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
	io->manager = &xfs->iom;
}

ext2_filsys extref_fs_ext2(extref_fs_t xfs)
{
	return xfs->fs;
}

extref_tree_t extref_fs_tree(extref_fs_t xfs)
{
	return xfs->tree;
}

errcode_t extref_set_identity(extref_fs_t xfs, const struct extref_cred *cred)
{
	if (!cred) {
		xfs->have_ident = 0;
		return 0;
	}
	if (cred->ngroups > EXTREF_NGROUPS_MAX)
		return EXT2_ET_INVALID_ARGUMENT;
	xfs->ident = *cred;
	xfs->have_ident = 1;
	return 0;
}

const struct extref_cred *extref_identity(extref_fs_t xfs)
{
	return xfs->have_ident ? &xfs->ident : NULL;
}

void xr_perm_hold(extref_fs_t xfs, int delta)
{
	xfs->perm_hold += delta;
}

int xr_perm_held(extref_fs_t xfs)
{
	return xfs->perm_hold > 0;
}

/* fs->now from SOURCE_DATE_EPOCH, when it holds a plain number. */
static void set_clock(ext2_filsys fs)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == 0 && *end == 0)
		fs->now = (time_t)v;
}

/*
 * A writer trusts no tree it has not checked (FORMAT.md, "What a writer
 * trusts"): counts too low would let a free hand out a block that
 * another inode still maps.  A tree that fails is not kept.
 */
errcode_t extref_fs_load_tree(extref_fs_t xfs)
{
	int rw = xfs->flags & EXTREF_OPEN_RW;
	errcode_t err;

	if (xfs->tree)
		return 0;
	err = extref_tree_open(xfs->fs, rw ? EXTREF_TREE_RW : 0, &xfs->tree);
	if (err || !rw || (xfs->flags & EXTREF_OPEN_TRUSTED))
		return err;
	err = extref_fsck_verify_write(xfs->fs, NULL);
	if (err) {
		extref_tree_free(xfs->tree);
		xfs->tree = NULL;
		return err;
	}
	xfs->verified = 1;
	xfs->verified_at = xr_txio_of(xfs->fs) ?
			   xr_txio_raw_writes(xr_txio_of(xfs->fs)) : 0;
	return 0;
}

/*
 * The open's verification still holds: it read and checked every node of
 * the tree and of every extent tree, and since then only this library's
 * operations wrote to the image (the lock keeps other writers out; any
 * other write through the channel, such as an expert's raw edit, says
 * no).  An image without a journal has no such count: no.
 */
int xr_fs_verified(extref_fs_t xfs)
{
	struct xr_txio *t = xr_txio_of(xfs->fs);

	return xfs->verified && xfs->tx && t &&
	       xr_txio_raw_writes(t) == xfs->verified_at;
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
	set_clock(fs);
	set_io_manager(xfs);
	if (!(flags & EXTREF_OPEN_NO_TREE)) {
		err = extref_fs_load_tree(xfs);
		if (err && (flags & EXTREF_OPEN_FORCE)) {
			if (tree_err)
				*tree_err = err;
			err = 0;
		}
	}
	if (!err && (fs->flags & EXT2_FLAG_RW))
		err = xr_quota_attach(fs);	/* usage kept per inode write */
	if (!err && !(flags & EXTREF_OPEN_NO_JOURNAL))
		err = xr_tx_attach(xfs);
	if (err) {
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
 * clear: the commit writes both before its first flush, and a power cut
 * there can keep the journal superblock's start and lose the flag.  A
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

errcode_t extref_fs_open(const char *name, int flags, extref_fs_t *ret,
			 errcode_t *tree_err)
{
	ext2_filsys fs;
	int eflags = EXT2_FLAG_64BITS;
	int rw = flags & EXTREF_OPEN_RW;
	extref_image_lock_t lock;
	unsigned replayed = 0;
	errcode_t err, replay_err = 0;
#ifdef EXTREF_FAULT_INJECTION
	/*
	 * Tests only (configure --enable-fault-injection): EXTREF_FAULT
	 * selects the fault-injecting io manager.  Other builds have no such
	 * manager and ignore the variable.
	 */
	const char *fault = getenv("EXTREF_FAULT");
	io_manager iom = fault && *fault ? extref_fault_io_manager
					 : unix_io_manager;
#else
	io_manager iom = unix_io_manager;
#endif

	/* the mount check and the lock come before libext2fs opens it */
	err = extref_image_lock(name, rw ? EXTREF_LOCK_WRITE : 0, &lock);
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
	}
cleanup:
	if (err)
		extref_image_unlock(lock);
	return err;
}

errcode_t extref_fs_close(extref_fs_t xfs)
{
	errcode_t err, err2;
	int journaled;

	if (!xfs)
		return 0;
	journaled = xfs->tx != NULL;
	err = xr_tx_detach(xfs);	/* commits, empties the journal */
	if (err) {
		extref_fs_abort(xfs);	/* nothing more is written */
		return err;
	}
	err = xr_quota_flush(xfs->fs);
	xr_quota_detach(xfs->fs);
	err2 = extref_tree_close(xfs->tree);
	if (!err)
		err = err2;
	if (xfs->sync_flush)
		xfs->iom.flush = xfs->sync_flush;	/* close syncs */
	/* journaled: the holding channel flushes once, as it closes */
	err2 = ext2fs_close2(xfs->fs, journaled ? EXT2_FLAG_FLUSH_NO_SYNC : 0);
	if (err2)
		ext2fs_free(xfs->fs);
	xfs->fs = NULL;
	extref_image_unlock(xfs->lock);	/* after the last write */
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
	ext2fs_free(xfs->fs);
	extref_image_unlock(xfs->lock);
	ext2fs_free_mem(&xfs);
}

/*
 * Register the library's error table and libext2fs's when the library is
 * loaded, so that error_message() names every code a call returns without
 * the program registering anything.  Registering a table twice (a program
 * that also does it) is harmless: the first match wins.
 */
__attribute__((constructor))
static void xr_register_error_tables(void)
{
	initialize_xref_error_table();
	initialize_ext2_error_table();
}
