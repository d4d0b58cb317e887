/*
 * jsb.c --- the journal superblock: decode, check, encode, write.
 */
#include <string.h>
#include <stddef.h>
#include "journal_int.h"

#define F(field)	((const __u8 *)raw + offsetof(struct jbd2_disk_super, field))
#define W(field)	((__u8 *)raw + offsetof(struct jbd2_disk_super, field))

void xr_jsb_decode(const void *raw, struct xr_jsb *sb)
{
	sb->blocktype = xr_be32(F(s_header.h_blocktype));
	sb->blocksize = xr_be32(F(s_blocksize));
	sb->maxlen = xr_be32(F(s_maxlen));
	sb->first = xr_be32(F(s_first));
	sb->sequence = xr_be32(F(s_sequence));
	sb->start = xr_be32(F(s_start));
	sb->errnum = xr_be32(F(s_errno));
	sb->compat = xr_be32(F(s_feature_compat));
	sb->incompat = xr_be32(F(s_feature_incompat));
	sb->ro_compat = xr_be32(F(s_feature_ro_compat));
	sb->nr_users = xr_be32(F(s_nr_users));
	sb->num_fc = xr_be32(F(s_num_fc_blks));
	memcpy(sb->uuid, F(s_uuid), JBD2_UUID_BYTES);
	sb->csum_type = *F(s_checksum_type);
}

/* The fields this module changes; the others stay as read.  The checksum
 * is recomputed when the journal has checksum v2/v3. */
void xr_jsb_encode(const struct xr_jsb *sb, void *raw)
{
	xr_put_be32(W(s_maxlen), sb->maxlen);
	xr_put_be32(W(s_sequence), sb->sequence);
	xr_put_be32(W(s_start), sb->start);
	xr_put_be32(W(s_feature_compat), sb->compat);
	xr_put_be32(W(s_feature_incompat), sb->incompat);
	*W(s_checksum_type) = sb->csum_type;
	xr_put_be32(W(s_checksum), 0);
	if (sb->incompat & XR_JNL_CSUM)
		xr_put_be32(W(s_checksum), xr_jsb_csum(raw));
}

/* Which check failed decides nothing for the caller: every failure is
 * EXTREF_ERR_JNL_BAD_SUPER, except unknown or unsupported features. */
errcode_t xr_jsb_check(const struct xr_jsb *sb, const void *raw,
		       unsigned bs, blk64_t nblocks)
{
	if (xr_be32(F(s_header.h_magic)) != JBD2_MAGIC ||
	    sb->blocktype != JBD2_SUPERBLOCK_V2 || sb->blocksize != bs ||
	    sb->maxlen > nblocks || sb->first == 0 ||
	    sb->first >= sb->maxlen || sb->maxlen - sb->first < 4)
		return EXTREF_ERR_JNL_BAD_SUPER;
	if (sb->start && (sb->start < sb->first || sb->start >= sb->maxlen))
		return EXTREF_ERR_JNL_BAD_SUPER;
	/* one checksum scheme at most, as e2fsck requires */
	if ((sb->incompat & XR_JNL_CSUM) == XR_JNL_CSUM ||
	    ((sb->incompat & XR_JNL_CSUM) &&
	     (sb->compat & JBD2_FEATURE_COMPAT_CHECKSUM)))
		return EXTREF_ERR_JNL_BAD_SUPER;
	if ((sb->incompat & XR_JNL_CSUM) &&
	    (sb->csum_type != JBD2_CRC32C_CHKSUM ||
	     xr_be32(F(s_checksum)) != xr_jsb_csum(raw)))
		return EXTREF_ERR_JNL_BAD_SUPER;
	if (sb->incompat & JBD2_FEATURE_INCOMPAT_FAST_COMMIT)
		return EXTREF_ERR_JNL_FAST_COMMIT;
	if (sb->incompat & ~XR_JNL_INCOMPAT_SUPP)
		return EXTREF_ERR_JNL_UNSUPP;
	return 0;
}

/* Encode j->sb into journal block 0 and write it (no flush). */
errcode_t xr_jsb_write(struct xr_journal *j)
{
	xr_jsb_encode(&j->sb, j->raw);
	return xr_jwrite(j, 0, j->raw);
}

/*
 * A new length for an empty journal whose inode holds at least maxlen
 * blocks (jgrow's step 3): one block written, then flushed.  The map
 * read at the open stops at the old length: close and open again.
 */
errcode_t xr_journal_set_maxlen(struct xr_journal *j, __u32 maxlen)
{
	errcode_t err;

	if (j->sb.start)
		return EXTREF_ERR_JNL_REPLAY_FIRST;
	if (maxlen <= j->sb.first || maxlen - j->sb.first < 4)
		return EXT2_ET_INVALID_ARGUMENT;
	j->sb.maxlen = maxlen;
	err = xr_jsb_write(j);
	return err ? err : io_channel_flush(j->io);
}
