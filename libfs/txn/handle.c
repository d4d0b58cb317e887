/*
 * handle.c --- the image handle's accessors (xr_handle.h), for every
 * layer above the transactions.  image/open.c makes and frees handles.
 */
#include "tree/extref_int.h"
#include "txn/xr_handle.h"
#include "txn/xr_txio.h"
#include "extref_err.h"

errcode_t extref_tx_begin(extref_fs_t xfs)
{
	return xr_tx_begin2(xfs, 1);
}

errcode_t extref_tx_begin2(extref_fs_t xfs, int flags)
{
	if (flags & ~(EXTREF_TX_SPLIT | EXTREF_TX_BATCH) ||
	    (flags & EXTREF_TX_SPLIT && flags & EXTREF_TX_BATCH))
		return EXT2_ET_INVALID_ARGUMENT;
	if (flags & EXTREF_TX_BATCH)
		return xr_tx_batch_begin(xfs);
	return xr_tx_begin2(xfs, !(flags & EXTREF_TX_SPLIT));
}

errcode_t extref_tx_end(extref_fs_t xfs, errcode_t err)
{
	return xr_tx_end2(xfs, err);
}

errcode_t extref_tx_commit(extref_fs_t xfs)
{
	return xr_tx_batch_commit(xfs);
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

ext2_filsys extref_fs_ext2(extref_fs_t xfs)
{
	return xfs->fs;
}

int extref_fs_proof(extref_fs_t xfs)
{
	return xfs->proof;
}

extref_tree_t extref_fs_tree(extref_fs_t xfs)
{
	return xfs->tree;
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

struct extref_cred **xr_fs_identp(extref_fs_t xfs)
{
	return &xfs->ident;
}

void xr_perm_hold(extref_fs_t xfs, int delta)
{
	xfs->perm_hold += delta;
}

int xr_perm_held(extref_fs_t xfs)
{
	return xfs->perm_hold > 0;
}

errcode_t xr_fs_add_hook(extref_fs_t xfs, const struct xr_tx_hook *h)
{
	if (xfs->nhooks == XR_MAX_HOOKS)
		return EXT2_ET_INVALID_ARGUMENT;
	xfs->hooks[xfs->nhooks++] = h;
	return 0;
}

errcode_t xr_fs_hooks_flush(extref_fs_t xfs)
{
	errcode_t err = 0;
	int i;

	for (i = 0; !err && i < xfs->nhooks; i++)
		err = xfs->hooks[i]->flush(xfs->fs);
	return err;
}

errcode_t xr_fs_hooks_reset(extref_fs_t xfs)
{
	errcode_t err = 0;
	int i;

	for (i = 0; !err && i < xfs->nhooks; i++)
		err = xfs->hooks[i]->reset(xfs->fs);
	return err;
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

errcode_t extref_fs_raw_edit(extref_fs_t xfs)
{
	extref_tree_t t = xfs->tree;

	errcode_t err;

	if (!t || !xr_tree_stamp(t) || !(xfs->flags & EXTREF_OPEN_RW))
		return 0;
	err = xr_tree_write_stamp(t, 0);
	/*
	 * Best effort: the edit goes on when the header cannot be written
	 * (the edit takes inode 5's blocks away, as drop_tree does: then no
	 * header is left to carry a stamp; or the image is damaged where
	 * the write's proofs read).  A stamp left so is the documented
	 * blind spot of outside edits: --verify (FORMAT.md section 11).
	 */
	(void)err;
	return 0;
}

void xr_fs_mark_verified(extref_fs_t xfs, int proof)
{
	struct xr_txio *t = xr_txio_of(xfs->fs);

	xfs->verified = 1;
	xfs->proof = proof;
	xfs->verified_at = t ? xr_txio_raw_writes(t) : 0;
}

/*
 * The open's proof still holds (in full, or by the stamp): it read and
 * checked every node of
 * the tree and of every extent tree, and since then only this library's
 * operations wrote to the image (the lock keeps other writers out; any
 * other write through the channel, such as an expert's raw edit, says
 * no).  An image without a journal has no such count: no.
 */
int xr_fs_proven(extref_fs_t xfs)
{
	struct xr_txio *t = xr_txio_of(xfs->fs);

	return xfs->verified && xfs->tx && t &&
	       xr_txio_raw_writes(t) == xfs->verified_at;
}

/*
 * Only a full proof read every node: one taken from the stamp did not
 * (a block damaged by dd since is met only when read), so operations
 * then read the tree and their file's extent tree whole before their
 * first write, as without a proof.
 */
int xr_fs_verified(extref_fs_t xfs)
{
	return xfs->proof == EXTREF_PROOF_FULL && xr_fs_proven(xfs);
}

/*
 * Register the library's error table and libext2fs's when the library is
 * loaded, so that error_message() names every code a call returns without
 * the program registering anything.  Registering a table twice (a program
 * that also does it) is harmless: the first match wins.  Here, in the
 * object every use of the library links (a constructor alone in an
 * object of libextref.a would be left out of static links).
 */
__attribute__((constructor))
static void xr_register_error_tables(void)
{
	initialize_xref_error_table();
	initialize_ext2_error_table();
}
