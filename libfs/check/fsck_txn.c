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
 * A rebuild estimated larger than what is left of the journal is still
 * one commit: its new blocks (the nodes, the header, inode 5's extent
 * blocks) are written in place early, unjournaled, as a recursive
 * reflink's are (txn/txn_split.c), and the commit journals only the
 * blocks that were in use before (inode 5's inode, bitmaps, descriptors,
 * the superblock).  Only a journal too small even for those leaves the
 * transactions for the ordered, flushed path (xr_fsck_tx_before_rebuild).
 *
 * Without transactions (no journal, a read-only check) every call here
 * does nothing.
 */
#include <stdlib.h>
#include "extref_fsck_int.h"
#include "txn/xr_txio.h"

#ifdef EXTREF_FAULT_INJECTION
/*
 * Tests only (configure --enable-fault-injection): EXTREF_FAULT_TX_ROOM=N
 * has the rebuild see at most N blocks of room left in the journal, so
 * that a small image takes the path of a tree larger than its journal,
 * and -E unshare split as if the journal held N blocks.
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

/* With EXTREF_FAULT_TX_ROOM=N, -E unshare commits once N/2 blocks are
 * held, as with a journal of N blocks. */
static int split_forced(const struct xr_fsck *c)
{
	const char *s = getenv("EXTREF_FAULT_TX_ROOM");
	struct xr_txio *t = xr_txio_of(c->fs);

	return s && *s && t &&
	       xr_txio_nheld(t) >= strtoull(s, NULL, 10) / 2;
}
#else
#define room_limit(room)	(room)
#define split_forced(c)		0
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

	if (!xfs)
		return 0;
	return split_forced(c) ? xr_tx_split_now(xfs) : xr_tx_split_point(xfs);
}

static errcode_t count_rec(const struct extref_rec *r, void *priv)
{
	(void)r;
	(*(blk64_t *)priv)++;
	return 0;
}

/*
 * What a rebuild of nrec records puts in its transaction, in two parts.
 * New blocks: the nodes (every level full, as the staging fills them),
 * the header and inode 5's own extent blocks, all newly allocated.  The
 * rest, blocks in use before: inode 5's inode table block, one block
 * bitmap for each group a new or old tree block may lie in, the
 * descriptor blocks of those groups, the superblock and some slack.
 */
struct rebuild_cost {
	blk64_t	fresh;		/* blocks no committed path reaches */
	blk64_t	fixed;		/* blocks in use before */
	blk64_t	revokes;	/* revoke blocks, if the fresh ones spill */
};

static void rebuild_cost(const struct xr_fsck *c, blk64_t nrec,
			 struct rebuild_cost *rc)
{
	ext2_filsys fs = c->fs;
	blk64_t cap = EXTREF_NODE_CAPACITY(fs->blocksize);
	blk64_t per_ext = (fs->blocksize - 12) / 12;
	blk64_t per_rev = (fs->blocksize - 16) / 8;
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
	rc->fresh = nodes + nodes / per_ext + 2;
	rc->fixed = 6 + groups +
		    (groups < fs->desc_blocks ? groups : fs->desc_blocks);
	/* a spilled block an earlier commit logged is revoked */
	rc->revokes = rc->fresh / per_rev + 1;
}

/*
 * Before the rebuild, which is one transaction whatever its size.  If
 * it fits what is left of the running transaction, it is journaled
 * whole.  If not, its new blocks are written in place early
 * (xr_tx_spill_on, txn/txn_split.c: no committed path reaches them
 * until the commit names the new tree, and the old tree's blocks stay
 * in use until then), and the one commit holds only the blocks that
 * were in use before.  Only if even those do not fit (a journal smaller
 * than the groups' bitmaps) does the rebuild leave the transactions:
 * what is held commits, the journal is emptied, and the rebuild takes
 * the ordered, flushed path of an image without a journal (interrupted,
 * it leaves a tree that the next run rebuilds).
 */
errcode_t xr_fsck_tx_before_rebuild(struct xr_fsck *c)
{
	extref_fs_t xfs = tx_fs(c);
	struct rebuild_cost rc;
	blk64_t nrec = 0, room;
	errcode_t err;

	if (!xfs)
		return 0;
	err = xr_fsck_sweep(c, count_rec, &nrec);
	if (err)
		return err;
	rebuild_cost(c, nrec, &rc);
	room = room_limit(xr_tx_room(xfs));
	if (rc.fresh + rc.fixed <= room)
		return 0;
	if (rc.fixed + rc.revokes > room)
		return xr_tx_detach(xfs);
	err = xr_tx_spill_on(xfs);
	if (err)
		return err;
	c->spill_half = room / 2 ? room / 2 : 1;
	c->spill_mark = xr_tx_room(xfs);
	return 0;
}

/*
 * Between two records of a rebuild that spills: once half the room is
 * held since the last spill, the new blocks go in place now, so that
 * memory holds no more than a journal's worth (with the room a test
 * build makes small, the spills come as often as a small journal's).
 */
errcode_t xr_fsck_tx_rebuild_point(struct xr_fsck *c)
{
	extref_fs_t xfs;
	errcode_t err;

	if (!c->spill_half || !(xfs = tx_fs(c)) ||
	    xr_tx_room(xfs) + c->spill_half > c->spill_mark)
		return 0;
	err = xr_tx_spill_now(xfs);
	if (!err)
		c->spill_mark = xr_tx_room(xfs);
	return err;
}
