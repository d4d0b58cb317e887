/*
 * xr_handle.h --- the image handle (extref_fs_t) as the layers see it.
 *
 * The handle is defined here, low, so that the operations, quota and the
 * checker reach it through txn/handle.c's accessors, and only the session
 * layer (image/open.c) puts one together: it opens the filesystem, takes
 * the lock, replays the journal, loads and verifies the tree, and attaches
 * quota and the transactions.  Layers above the transactions join a
 * commit through hooks (struct xr_tx_hook), not by name.
 */
#ifndef XR_HANDLE_H
#define XR_HANDLE_H

#include "extref.h"

struct xr_tx;
struct extref_cred;

/*
 * A layer's part in every commit and rollback of a transaction: flush()
 * writes what the layer kept in memory into the transaction's held
 * blocks, before the superblock and the descriptors; reset() reads its
 * state again after a rollback (the image is as at the transaction's
 * start).  Both take the handle's filesystem.
 */
struct xr_tx_hook {
	errcode_t	(*flush)(ext2_filsys fs);
	errcode_t	(*reset)(ext2_filsys fs);
};
#define XR_MAX_HOOKS	2

struct extref_fs {
	ext2_filsys	fs;
	extref_tree_t	tree;
	int		flags;		/* EXTREF_OPEN_* */
	struct struct_io_manager iom;	/* the channel's, without write_byte */
	io_manager	orig_iom;
	errcode_t	(*sync_flush)(io_channel);	/* EXTREF_OPEN_NOSYNC */
	extref_image_lock_t lock;	/* held until close (image/imglock.c) */
	struct extref_cred *ident;	/* extref_set_identity (ops/perm.c) */
	int		perm_hold;	/* xr_perm_hold: inner steps unchecked */
	struct xr_tx	*tx;		/* transactions (txn.c), journaled images */
	const struct xr_tx_hook *hooks[XR_MAX_HOOKS];
	int		nhooks;
	int		verified;	/* the open's verification passed */
	int		proof;		/* how: EXTREF_PROOF_* */
	unsigned long	verified_at;	/* raw writes (txio.c) then */
	unsigned	replayed;	/* transactions the open replayed */
	errcode_t	replay_err;	/* why a read-only open could not */
	ext2_ino_t	damage_ino;	/* where a checksum failed an */
	blk64_t		damage_blk;	/* operation (extref_damage_where) */
	/* image/seen.c: another tool wrote since our last close */
	int		seen_done;	/* looked at the open */
	int		seen_known;	/* ... and read the header's record */
	int		seen_recorded;	/* ... which held one */
	int		foreign;	/* it did (the record, or the sb) */
	int		seen_changed;	/* the sb differs from the record */
	int		seen_accept;	/* extref_fs_accept: record it clean */
	int		seen_run;	/* xr_seen_accept_run: at fs->now */
	__u64		seen_sec;	/* the record's time, kept if foreign */
	__u32		seen_nsec;
	__u32		seen_flags;	/* the record's EXTREF_SEEN_* */
	int		seen_copied;	/* xr_seen_copied: times not ours */
};

/* handle.c */
errcode_t xr_fs_add_hook(extref_fs_t xfs, const struct xr_tx_hook *h);
errcode_t xr_fs_hooks_flush(extref_fs_t xfs);
errcode_t xr_fs_hooks_reset(extref_fs_t xfs);
/* The tree as committed, read again (after a rollback). */
errcode_t xr_fs_reload_tree(extref_fs_t xfs);
/* The open's verification is done: xr_fs_verified holds until a write
 * that is not the library's own. */
void xr_fs_mark_verified(extref_fs_t xfs, int proof);

/*
 * While held (an operation's own inner steps: the files a reflink makes,
 * the entries it writes), the entry points do not check the identity
 * again (ops/perm.c).  Nested holds count.
 */
void xr_perm_hold(extref_fs_t xfs, int delta);
int xr_perm_held(extref_fs_t xfs);
/* Where a checksum failed an operation (extref_damage_where). */
void xr_fs_set_damage(extref_fs_t xfs, ext2_ino_t ino, blk64_t blk);
/*
 * Nothing changed on disk since the read-write open verified the tree
 * and every extent tree, but through this library's transactions: an
 * operation may skip reading them all again before its first write.
 */
int xr_fs_verified(extref_fs_t xfs);
/* The open proved the counts (in full or by the stamp) and only the
 * library's own transactions wrote since: a close may leave a stamp. */
int xr_fs_proven(extref_fs_t xfs);
/* The identity's slot (ops/perm.c fills it; the handle's close frees it). */
struct extref_cred **xr_fs_identp(extref_fs_t xfs);

#endif /* XR_HANDLE_H */
