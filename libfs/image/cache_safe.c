/*
 * cache_safe.c --- libext2fs's unix io block cache, kept true.
 *
 * The unix io manager keeps the last few blocks read or written.  A write
 * of more than four blocks (or of bytes), a zeroout and a discard go past
 * it, straight to the file, and e2fsprogs 1.47's flush_cached_blocks then
 * drops only the dirty entries: a clean cached copy of a block the write
 * changed stays, and a later read of a block or two returns its old bytes
 * (fsx lost data so through extref-fuse: a block a commit wrote home was
 * then given to file data; tests/test_txn_batch.py).  The image's channel
 * has the open's own copy of its manager (open.c): there every such write
 * drops the whole cache after it, by setting the channel's block size to
 * another and back (unix_set_blksize writes back what is dirty, frees the
 * cache and makes a new one).  A write of a few blocks goes through the
 * cache and keeps it true.
 */
#include <stddef.h>
#include "txn/xr_handle.h"
#include "cache_safe.h"

#define WRITE_DIRECT	4	/* unix_io.c's WRITE_DIRECT_SIZE */

/* The manager the channel's copy was made of. */
static io_manager orig(io_channel io)
{
	return ((const struct extref_fs *)((const char *)io->manager -
		offsetof(struct extref_fs, iom)))->orig_iom;
}

static errcode_t drop_cache(io_channel io, errcode_t err)
{
	int bs = io->block_size;
	errcode_t e = orig(io)->set_blksize(io, bs == 1024 ? 2048 : 1024);

	if (!e)
		e = orig(io)->set_blksize(io, bs);
	return err ? err : e;
}

static errcode_t write_blk(io_channel io, unsigned long blk, int count,
			   const void *buf)
{
	errcode_t err = orig(io)->write_blk(io, blk, count, buf);

	return count < 0 || count > WRITE_DIRECT ? drop_cache(io, err) : err;
}

static errcode_t write_blk64(io_channel io, unsigned long long blk,
			     int count, const void *buf)
{
	errcode_t err = orig(io)->write_blk64(io, blk, count, buf);

	return count < 0 || count > WRITE_DIRECT ? drop_cache(io, err) : err;
}

static errcode_t zeroout(io_channel io, unsigned long long blk,
			 unsigned long long count)
{
	return drop_cache(io, orig(io)->zeroout(io, blk, count));
}

static errcode_t discard(io_channel io, unsigned long long blk,
			 unsigned long long count)
{
	return drop_cache(io, orig(io)->discard(io, blk, count));
}

void xr_cache_safe(struct extref_fs *xfs)
{
	if (xfs->orig_iom != unix_io_manager)
		return;
	xfs->iom.write_blk = write_blk;
	xfs->iom.write_blk64 = write_blk64;
	if (xfs->iom.zeroout)
		xfs->iom.zeroout = zeroout;
	if (xfs->iom.discard)
		xfs->iom.discard = discard;
}
