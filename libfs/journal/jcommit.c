/*
 * jcommit.c --- write transactions at the log's head, and mark the
 * journal empty once they are checkpointed.
 *
 * As the kernel's jbd2 writes them: descriptor blocks each followed by
 * the copies their tags name, revoke blocks, a flush, the commit block, a
 * flush.  needs_recovery is set after the body, before its flush (so
 * a crash while the body is written leaves no flag: the image is as it
 * was for the kernel and stock e2fsck, with nothing to replay); an empty
 * journal's first transaction also rewrites the journal superblock
 * (s_start, s_sequence, and the features the filesystem calls for: 64BIT
 * with 64bit, CSUM_V3 with metadata_csum, REVOKE) after that flush, with
 * the commit block, so that no power cut keeps s_start without the flag
 * (stock e2fsck -p stops on that state).
 */
#include <string.h>
#include <stdlib.h>
#include <time.h>
#include "journal_int.h"

/* The features the next transaction is written with. */
static __u32 write_features(struct xr_journal *j)
{
	__u32 f = j->sb.incompat;

	if (j->sb.start)
		return f;		/* the log in place keeps its format */
	f |= JBD2_FEATURE_INCOMPAT_REVOKE;
	if (ext2fs_has_feature_64bit(j->fs->super))
		f |= JBD2_FEATURE_INCOMPAT_64BIT;
	if (ext2fs_has_feature_metadata_csum(j->fs->super))
		f = (f & ~JBD2_FEATURE_INCOMPAT_CSUM_V2) |
		    JBD2_FEATURE_INCOMPAT_CSUM_V3;
	return f;
}

static blk64_t div_up(blk64_t a, blk64_t b)
{
	return (a + b - 1) / b;
}

/* Log blocks a transaction of n copies and r revokes takes. */
static blk64_t blocks_needed(unsigned bs, __u32 f, blk64_t n, blk64_t r)
{
	return n + div_up(n, xr_jtags_per_desc(bs, f)) +
	       div_up(r, xr_jrevokes_per_block(bs, f)) + 1;
}

/* Log blocks free: one stays unused so that head never meets tail (a
 * log that another writer filled all the way round has none). */
static blk64_t log_free(struct xr_journal *j)
{
	__u32 used = j->sb.start ? xr_jdist(j, j->sb.start, j->head) : 0;

	if (j->sb.start && !used && j->ntrans)
		return 0;
	return used + 1 >= xr_jlog_len(j) ? 0 : xr_jlog_len(j) - 1 - used;
}

blk64_t xr_journal_capacity(struct xr_journal *j, size_t nrevoke)
{
	__u32 f = write_features(j);
	blk64_t avail = log_free(j), n, fixed;
	unsigned tpd = xr_jtags_per_desc(j->bs, f);

	fixed = blocks_needed(j->bs, f, 0, nrevoke);
	if (j->scan_err || avail <= fixed + 1)
		return 0;
	n = (avail - fixed) * tpd / (tpd + 1);
	while (blocks_needed(j->bs, f, n + 1, nrevoke) <= avail)
		n++;
	while (n && blocks_needed(j->bs, f, n, nrevoke) > avail)
		n--;
	return n;
}

blk64_t xr_journal_len_for(struct xr_journal *j, blk64_t n, size_t nrevoke)
{
	/* an empty log: s_first, the transaction, one block left free */
	return j->sb.first + blocks_needed(j->bs, write_features(j), n,
					   nrevoke) + 1;
}

static int cmp_blk(const void *a, const void *b)
{
	blk64_t x = *(const blk64_t *)a, y = *(const blk64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every block in range (and within 32 bits without 64-bit tags), none
 * both logged and revoked. */
static errcode_t check_args(struct xr_journal *j, const struct xr_jblock *b,
			    size_t n, const blk64_t *revoke, size_t nrevoke)
{
	blk64_t nblocks = ext2fs_blocks_count(j->fs->super), *sorted;
	errcode_t err;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i].blk >= nblocks || !b[i].data || (b[i].blk >> 32 &&
		    !(write_features(j) & JBD2_FEATURE_INCOMPAT_64BIT)))
			return EXT2_ET_INVALID_ARGUMENT;
	for (i = 0; i < nrevoke; i++)
		if (revoke[i] >= nblocks || (revoke[i] >> 32 &&
		    !(write_features(j) & JBD2_FEATURE_INCOMPAT_64BIT)))
			return EXT2_ET_INVALID_ARGUMENT;
	if (!nrevoke || !n)
		return 0;
	err = ext2fs_get_array(nrevoke, sizeof(blk64_t), &sorted);
	if (err)
		return err;
	memcpy(sorted, revoke, nrevoke * sizeof(blk64_t));
	qsort(sorted, nrevoke, sizeof(blk64_t), cmp_blk);
	for (i = 0; i < n && !err; i++)
		if (bsearch(&b[i].blk, sorted, nrevoke, sizeof(blk64_t),
			    cmp_blk))
			err = EXT2_ET_INVALID_ARGUMENT;
	ext2fs_free_mem(&sorted);
	return err;
}

static void put_header(void *blk, unsigned type, __u32 tid)
{
	xr_put_be32(blk, JBD2_MAGIC);
	xr_put_be32((__u8 *)blk + 4, type);
	xr_put_be32((__u8 *)blk + 8, tid);
}

static void put_tag(struct xr_journal *j, __u8 *p, blk64_t blk,
		    unsigned flags, __u32 csum)
{
	__u32 f = j->sb.incompat;

	xr_put_be32(p, (__u32)blk);
	if (f & JBD2_FEATURE_INCOMPAT_CSUM_V3) {
		xr_put_be32(p + 4, flags);
		xr_put_be32(p + 8, (__u32)(blk >> 32));
		xr_put_be32(p + 12, csum);
		return;
	}
	xr_put_be16(p + 4, (f & JBD2_FEATURE_INCOMPAT_CSUM_V2) ? csum : 0);
	xr_put_be16(p + 6, flags);
	if (f & JBD2_FEATURE_INCOMPAT_64BIT)
		xr_put_be32(p + 8, (__u32)(blk >> 32));
}

/* Write one copy at *pos (escaped when it begins with the magic); its
 * tag goes at p. */
static errcode_t put_copy(struct xr_journal *j, const struct xr_jblock *b,
			  __u8 *p, unsigned flags, __u8 *esc, __u32 *pos)
{
	const void *src = b->data;
	errcode_t err;

	if (xr_be32(b->data) == JBD2_MAGIC) {
		memcpy(esc, b->data, j->bs);
		xr_put_be32(esc, 0);
		src = esc;
		flags |= JBD2_FLAG_ESCAPE;
	}
	err = xr_jwrite(j, *pos, src);
	if (err)
		return err;
	put_tag(j, p, b->blk, flags,
		xr_jtag_csum(j->seed, j->tid, src, j->bs));
	*pos = xr_jnext(j, *pos);
	return 0;
}

/* One descriptor block for b[0..cnt-1] at *pos, then the copies. */
static errcode_t put_desc(struct xr_journal *j, const struct xr_jblock *b,
			  size_t cnt, __u8 *desc, __u8 *esc, __u32 *pos)
{
	unsigned tb = xr_jtag_bytes(j->sb.incompat);
	unsigned off = sizeof(struct jbd2_disk_header), flags;
	__u32 dpos = *pos;
	errcode_t err = 0;
	size_t i;

	memset(desc, 0, j->bs);
	put_header(desc, JBD2_DESCRIPTOR_BLOCK, j->tid);
	*pos = xr_jnext(j, *pos);
	for (i = 0; i < cnt && !err; i++) {
		flags = (i ? JBD2_FLAG_SAME_UUID : 0) |
			(i + 1 == cnt ? JBD2_FLAG_LAST_TAG : 0);
		err = put_copy(j, &b[i], desc + off, flags, esc, pos);
		off += tb;
		if (!i) {
			memcpy(desc + off, j->sb.uuid, JBD2_UUID_BYTES);
			off += JBD2_UUID_BYTES;
		}
	}
	if (err)
		return err;
	xr_jtail_set(j, desc);
	return xr_jwrite(j, dpos, desc);
}

static errcode_t put_revokes(struct xr_journal *j, const blk64_t *r,
			     size_t nr, __u8 *blk, __u32 *pos)
{
	unsigned rs = xr_jrevoke_rec_bytes(j->sb.incompat);
	unsigned per = xr_jrevokes_per_block(j->bs, j->sb.incompat);
	unsigned hdr = sizeof(struct jbd2_disk_revoke), off;
	errcode_t err = 0;
	size_t i = 0;

	while (i < nr && !err) {
		memset(blk, 0, j->bs);
		put_header(blk, JBD2_REVOKE_BLOCK, j->tid);
		for (off = hdr; i < nr && off < hdr + per * rs; i++, off += rs)
			if (rs == 8) {
				xr_put_be32(blk + off, (__u32)(r[i] >> 32));
				xr_put_be32(blk + off + 4, (__u32)r[i]);
			} else {
				xr_put_be32(blk + off, (__u32)r[i]);
			}
		xr_put_be32(blk + 12, off);
		xr_jtail_set(j, blk);
		err = xr_jwrite(j, *pos, blk);
		*pos = xr_jnext(j, *pos);
	}
	return err;
}

static errcode_t put_commit(struct xr_journal *j, __u8 *blk, __u32 pos)
{
	unsigned off = offsetof(struct jbd2_disk_commit, h_chksum);
	__u64 now = j->fs->now ? (__u64)j->fs->now : (__u64)time(NULL);

	memset(blk, 0, j->bs);
	put_header(blk, JBD2_COMMIT_BLOCK, j->tid);
	xr_put_be32(blk + offsetof(struct jbd2_disk_commit, h_commit_sec),
		    (__u32)(now >> 32));
	xr_put_be32(blk + offsetof(struct jbd2_disk_commit, h_commit_sec) + 4,
		    (__u32)now);
	if (j->sb.incompat & XR_JNL_CSUM)
		xr_put_be32(blk + off, xr_jblock_csum(j->seed, blk, j->bs, off));
	return xr_jwrite(j, pos, blk);
}

/* An empty journal's first transaction starts the log at the head.
 * Checksum v3 replaces the old COMPAT_CHECKSUM, as the kernel does (e2fsck
 * refuses a journal with both). */
static void start_log(struct xr_journal *j)
{
	j->sb.incompat = write_features(j);
	if (j->sb.incompat & XR_JNL_CSUM) {
		j->sb.csum_type = JBD2_CRC32C_CHKSUM;
		j->sb.compat &= ~JBD2_FEATURE_COMPAT_CHECKSUM;
	}
	j->sb.start = j->head;
	j->sb.sequence = j->tid;
}

/* Everything but the commit block, then the flush. */
static errcode_t put_body(struct xr_journal *j, const struct xr_jblock *b,
			  size_t n, const blk64_t *revoke, size_t nrevoke,
			  __u8 *buf, __u32 *pos)
{
	size_t tpd, i, cnt;
	errcode_t err = 0;
	int wrote;

	if (!j->sb.start)
		start_log(j);	/* may change the tag format; written later */
	tpd = xr_jtags_per_desc(j->bs, j->sb.incompat);
	for (i = 0; i < n && !err; i += cnt) {
		cnt = n - i < tpd ? n - i : tpd;
		err = put_desc(j, b + i, cnt, buf, buf + j->bs, pos);
	}
	if (!err)
		err = put_revokes(j, revoke, nrevoke, buf, pos);
	if (!err)	/* with the body's flush: flagged only once it is in */
		err = xr_jset_recover(j, 1, &wrote);
	if (!err)
		err = io_channel_flush(j->io);
	return err;
}

errcode_t xr_journal_commit(struct xr_journal *j, const struct xr_jblock *b,
			    size_t n, const blk64_t *revoke, size_t nrevoke)
{
	__u32 pos = j->head;
	__u8 *buf;
	errcode_t err;
	int started;

	if (j->scan_err)
		return EXTREF_ERR_JNL_REPLAY_FIRST;
	err = check_args(j, b, n, revoke, nrevoke);
	if (err)
		return err;
	if (blocks_needed(j->bs, write_features(j), n, nrevoke) > log_free(j))
		return EXTREF_ERR_JNL_FULL;
	err = ext2fs_get_array(2, j->bs, &buf);
	if (err)
		return err;
	started = !j->sb.start;
	err = put_body(j, b, n, revoke, nrevoke, buf, &pos);
	if (!err && started)
		err = xr_jsb_write(j);	/* after needs_recovery's flush */
	if (!err)
		err = put_commit(j, buf, pos);
	if (!err)
		err = io_channel_flush(j->io);
	if (!err) {
		j->head = xr_jnext(j, pos);
		j->tid++;
		j->ntrans++;
	} else if (started) {
		j->sb.start = 0;	/* the next commit writes it again */
	}
	ext2fs_free_mem(&buf);
	return err;
}

/* The log marked empty (flushed), then needs_recovery cleared, unflushed;
 * *wrote says whether the superblock was written. */
static errcode_t mark_empty(struct xr_journal *j, int *wrote)
{
	errcode_t err = 0;

	*wrote = 0;
	j->ntrans = 0;
	if (j->sb.start) {
		j->sb.start = 0;
		j->sb.sequence = j->tid;
		err = xr_jsb_write(j);
		if (!err)
			err = io_channel_flush(j->io);
	}
	return err ? err : xr_jset_recover(j, 0, wrote);
}

errcode_t xr_journal_checkpoint_done(struct xr_journal *j)
{
	int wrote;
	errcode_t err = mark_empty(j, &wrote);

	return !err && wrote ? io_channel_flush(j->io) : err;
}

errcode_t xr_journal_checkpoint_done_noflush(struct xr_journal *j)
{
	int wrote;

	return mark_empty(j, &wrote);
}
