/*
 * fsck_txn.c --- the repairs as transactions of the image's journal.
 *
 * When the transaction layer holds the checker's filesystem (an image
 * with a journal opened read-write by extref_fs_open or extref_fs_wrap,
 * as fsck.extref opens it to repair), one run of the checker is one
 * transaction: what the passes fix as they go (a mapped block marked in
 * use, the shared_blocks feature), the copies of -E unshare and the
 * rebuilt tree commit together at the end, or roll back together on an
 * error.  It splits only where the image is consistent: after a range
 * -E unshare copied (a range is then copied for every mapping but the
 * first, or not at all), once the held blocks fill half the journal.  The
 * rebuild is atomic: the old tree's blocks stay in use until the commit
 * that names the new tree, so a crash anywhere leaves the old tree or
 * the new one, and counts are never lower on disk than before.
 *
 * A rebuild estimated larger than the journal holds leaves the
 * transactions: what is held commits, the journal is emptied, and the
 * rebuild takes the ordered, flushed path of an image without a journal
 * (interrupted, it leaves a tree that the next run rebuilds).
 *
 * Without transactions (no journal, a read-only check) every call here
 * does nothing.
 */
#include <stdlib.h>
#include "extref_fsck_int.h"
#include "tree/xr_txio.h"

#ifdef EXTREF_FAULT_INJECTION
/*
 * Tests only (configure --enable-fault-injection): EXTREF_FAULT_TX_ROOM=N
 * has the rebuild see at most N blocks of room left in the journal, so
 * that a small image takes the path of a tree larger than its journal.
 */
static blk64_t room_limit(blk64_t room)
{
	const char *s = getenv("EXTREF_FAULT_TX_ROOM");
	blk64_t n;

	if (!s || !*s)
		return room;
	n = strtoull(s, NULL, 10);
	return n < room ? n : room;
}
#else
#define room_limit(room)	(room)
#endif

static extref_fs_t tx_fs(const struct xr_fsck *c)
{
	if (c->opts->mode == EXTREF_FSCK_NO)
		return NULL;
	return xr_tx_fs_of(c->fs);
}

errcode_t xr_fsck_tx_begin(struct xr_fsck *c, int atomic)
{
	extref_fs_t xfs = tx_fs(c);

	return xfs ? xr_tx_begin2(xfs, atomic) : 0;
}

errcode_t xr_fsck_tx_end(struct xr_fsck *c, errcode_t err)
{
	extref_fs_t xfs = tx_fs(c);

	return xfs ? xr_tx_end2(xfs, err) : err;
}

errcode_t xr_fsck_tx_split(struct xr_fsck *c)
{
	extref_fs_t xfs = tx_fs(c);

	return xfs ? xr_tx_split_point(xfs) : 0;
}

static errcode_t count_rec(const struct extref_rec *r, void *priv)
{
	(void)r;
	(*(blk64_t *)priv)++;
	return 0;
}

/*
 * The most blocks a rebuild of nrec records can put in a transaction:
 * the nodes (every level full, as the staging fills them), the header and
 * inode 5's own blocks, one block bitmap for each group a new or old tree
 * block may lie in, the descriptor blocks and the superblock.
 */
static blk64_t rebuild_cost(const struct xr_fsck *c, blk64_t nrec)
{
	ext2_filsys fs = c->fs;
	blk64_t cap = EXTREF_NODE_CAPACITY(fs->blocksize);
	blk64_t per_ext = (fs->blocksize - 12) / 12;
	blk64_t nodes = 0, lvl = nrec, old = 0, groups;
	size_t i;

	do {
		lvl = (lvl + cap - 1) / cap;
		nodes += lvl ? lvl : 1;
	} while (lvl > 1);
	for (i = 0; i < c->nmeta; i++)
		if (c->meta[i].ino == EXTREF_INO)
			old++;		/* a range: one group at least */
	groups = nodes + old + 4;
	if (groups > fs->group_desc_count)
		groups = fs->group_desc_count;
	return nodes + nodes / per_ext + 8 + groups +
	       (groups < fs->desc_blocks ? groups : fs->desc_blocks);
}

/*
 * Before the rebuild: if it would not fit what is left of the running
 * transaction, commit what is held and leave the transactions (the
 * ordered path for the rest of this run).
 */
errcode_t xr_fsck_tx_before_rebuild(struct xr_fsck *c)
{
	extref_fs_t xfs = tx_fs(c);
	blk64_t nrec = 0;
	errcode_t err;

	if (!xfs)
		return 0;
	err = xr_fsck_sweep(c, count_rec, &nrec);
	if (err || rebuild_cost(c, nrec) <= room_limit(xr_tx_room(xfs)))
		return err;
	return xr_tx_detach(xfs);
}
