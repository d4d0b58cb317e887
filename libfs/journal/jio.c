/*
 * jio.c --- journal blocks through the channel, the log ring, and the
 * primary superblock's needs_recovery bit.
 */
#include <string.h>
#include "journal_int.h"

errcode_t xr_jread(struct xr_journal *j, __u32 jblk, void *buf)
{
	if (jblk >= j->sb.maxlen)
		return EXTREF_ERR_JNL_CORRUPT;
	return io_channel_read_blk64(j->io, j->map[jblk], 1, buf);
}

errcode_t xr_jwrite(struct xr_journal *j, __u32 jblk, const void *buf)
{
	if (jblk >= j->sb.maxlen)
		return EXT2_ET_INVALID_ARGUMENT;
	return io_channel_write_blk64(j->io, j->map[jblk], 1, buf);
}

/* The log is the ring s_first .. s_maxlen-1. */
__u32 xr_jnext(const struct xr_journal *j, __u32 jblk)
{
	return jblk + 1 >= j->sb.maxlen ? j->sb.first : jblk + 1;
}

__u32 xr_jlog_len(const struct xr_journal *j)
{
	return j->sb.maxlen - j->sb.first;
}

/* Blocks from `from` forward to `to` around the ring. */
__u32 xr_jdist(const struct xr_journal *j, __u32 from, __u32 to)
{
	return to >= from ? to - from : to + xr_jlog_len(j) - from;
}

/*
 * Set or clear EXT3_FEATURE_INCOMPAT_RECOVER in the primary superblock as
 * it is on disk (byte 1024, read through the channel in its block size)
 * and in fs->super.  *wrote: whether the disk was written (not flushed).
 */
errcode_t xr_jset_recover(struct xr_journal *j, int on, int *wrote)
{
	blk64_t blk = SUPERBLOCK_OFFSET / j->bs;
	unsigned off = SUPERBLOCK_OFFSET % j->bs;
	struct ext2_super_block *sb;
	unsigned char *buf;
	errcode_t err;

	*wrote = 0;
	if (on)
		ext2fs_set_feature_journal_needs_recovery(j->fs->super);
	else
		ext2fs_clear_feature_journal_needs_recovery(j->fs->super);
	err = ext2fs_get_mem(j->bs, &buf);
	if (err)
		return err;
	err = io_channel_read_blk64(j->io, blk, 1, buf);
	if (err)
		goto out;
	sb = (struct ext2_super_block *)(buf + off);
	if (sb->s_magic != EXT2_SUPER_MAGIC) {
		err = EXT2_ET_BAD_MAGIC;
		goto out;
	}
	if (!ext2fs_has_feature_journal_needs_recovery(sb) == !on)
		goto out;
	if (on)
		ext2fs_set_feature_journal_needs_recovery(sb);
	else
		ext2fs_clear_feature_journal_needs_recovery(sb);
	ext2fs_superblock_csum_set(j->fs, sb);
	err = io_channel_write_blk64(j->io, blk, 1, buf);
	*wrote = !err;
out:
	ext2fs_free_mem(&buf);
	return err;
}

errcode_t xr_journal_mark_recover(struct xr_journal *j, int on)
{
	int wrote;
	errcode_t err = xr_jset_recover(j, on, &wrote);

	if (!err && wrote)
		err = io_channel_flush(j->io);
	return err;
}
