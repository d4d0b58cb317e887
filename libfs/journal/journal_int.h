/*
 * journal_int.h --- the journal module's private state and helpers.
 */
#ifndef XR_JOURNAL_INT_H
#define XR_JOURNAL_INT_H

#include <ext2fs/ext2fs.h>
#include "extref.h"
#include "extref_err.h"
#include "xr_journal.h"
#include "jbd2_format.h"

/* The journal superblock in CPU form (jsb.c converts). */
struct xr_jsb {
	__u32	blocktype, blocksize, maxlen, first, sequence, start, errnum;
	__u32	compat, incompat, ro_compat, nr_users, num_fc;
	__u8	uuid[JBD2_UUID_BYTES];
	__u8	csum_type;
};

/* Incompat features this module reads. */
#define XR_JNL_INCOMPAT_SUPP	(JBD2_FEATURE_INCOMPAT_REVOKE | \
	JBD2_FEATURE_INCOMPAT_64BIT | JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT | \
	JBD2_FEATURE_INCOMPAT_CSUM_V2 | JBD2_FEATURE_INCOMPAT_CSUM_V3)
#define XR_JNL_CSUM	(JBD2_FEATURE_INCOMPAT_CSUM_V2 | \
			 JBD2_FEATURE_INCOMPAT_CSUM_V3)

/*
 * What the scan of a dirty log verified (jscan.c), all the replay uses:
 * the tags and revoke records of the complete transactions, in log order.
 */
struct xr_jtagrec {
	blk64_t		fsblk;		/* where the copy goes */
	__u32		jblk;		/* journal block of the copy */
	__u32		tid;
	__u32		crc;		/* crc32c of the copy, unescaped */
	unsigned	flags;		/* JBD2_FLAG_* */
};
struct xr_jrevrec {
	blk64_t		fsblk;
	__u32		tid;
};
struct xr_jscan {
	__u32		end;		/* journal block after the last commit */
	__u32		end_tid;	/* tid of the first incomplete one */
	unsigned	ntrans;		/* complete transactions */
	struct xr_jtagrec *tag;
	size_t		ntag, cap_tag;
	struct xr_jrevrec *rev;
	size_t		nrev, cap_rev;
};

struct xr_journal {
	ext2_filsys	fs;
	io_channel	io;
	unsigned	bs;
	blk64_t		*map;		/* journal block -> fs block */
	unsigned char	*raw;		/* journal block 0 as last read/written */
	struct xr_jsb	sb;
	__u32		seed;		/* crc32c(~0, s_uuid) */
	__u32		head;		/* next journal block to write */
	__u32		tid;		/* tid of the next transaction */
	unsigned	ntrans;		/* complete transactions in the log */
	struct xr_jscan	*scan;		/* what the scan of a dirty log found */
	errcode_t	scan_err;	/* a dirty log whose end was not found */
};

/* ----- byte order of the jbd2 fields ----- */
static inline __u32 xr_be32(const void *p)
{
	const __u8 *b = p;
	return (__u32)b[0] << 24 | (__u32)b[1] << 16 | (__u32)b[2] << 8 | b[3];
}
static inline void xr_put_be32(void *p, __u32 v)
{
	__u8 *b = p;
	b[0] = v >> 24; b[1] = v >> 16; b[2] = v >> 8; b[3] = v;
}
static inline __u16 xr_be16(const void *p)
{
	const __u8 *b = p;
	return (__u16)(b[0] << 8 | b[1]);
}
static inline void xr_put_be16(void *p, __u16 v)
{
	__u8 *b = p;
	b[0] = v >> 8; b[1] = v;
}

/* tid a comes after tid b (sequence numbers wrap) */
static inline int xr_tid_gt(__u32 a, __u32 b)
{
	return (__s32)(a - b) > 0;
}

/* ----- jsb.c: the journal superblock ----- */
void	  xr_jsb_decode(const void *raw, struct xr_jsb *sb);
void	  xr_jsb_encode(const struct xr_jsb *sb, void *raw);
errcode_t xr_jsb_check(const struct xr_jsb *sb, const void *raw,
		       unsigned bs, blk64_t nblocks);
errcode_t xr_jsb_write(struct xr_journal *j);

/* ----- jcsum.c: sizes and checksums of records ----- */
unsigned  xr_jtag_bytes(__u32 incompat);
unsigned  xr_jtail_bytes(__u32 incompat);
unsigned  xr_jrevoke_rec_bytes(__u32 incompat);
unsigned  xr_jtags_per_desc(unsigned bs, __u32 incompat);
unsigned  xr_jrevokes_per_block(unsigned bs, __u32 incompat);
__u32	  xr_jsb_csum(const void *raw);
__u32	  xr_jblock_csum(__u32 seed, const void *blk, unsigned bs,
			 unsigned csum_off);
__u32	  xr_jtag_csum(__u32 seed, __u32 tid, const void *copy, unsigned bs);
void	  xr_jtail_set(struct xr_journal *j, void *blk);
int	  xr_jtail_ok(struct xr_journal *j, const void *blk);
int	  xr_jcommit_ok(struct xr_journal *j, const void *blk);

/* ----- jio.c: journal blocks, the log ring, the needs_recovery bit ----- */
errcode_t xr_jread(struct xr_journal *j, __u32 jblk, void *buf);
errcode_t xr_jwrite(struct xr_journal *j, __u32 jblk, const void *buf);
__u32	  xr_jnext(const struct xr_journal *j, __u32 jblk);
__u32	  xr_jlog_len(const struct xr_journal *j);
__u32	  xr_jdist(const struct xr_journal *j, __u32 from, __u32 to);
errcode_t xr_jset_recover(struct xr_journal *j, int on, int *wrote);

/* ----- jscan.c: the complete transactions of a dirty log ----- */
errcode_t xr_jscan(struct xr_journal *j, struct xr_jscan **ret);
void	  xr_jscan_free(struct xr_jscan *s);

/* ----- jdetail.c: what the last journal error was about, in words ----- */
void	  xr_jdetail_clear(void);
void	  xr_jdetail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* ----- jvalid.c: a replayed superblock and descriptors, validated ----- */
/* Reads filesystem block blk as the replay would leave it. */
typedef errcode_t (*xr_jread_fn)(void *priv, blk64_t blk, void *buf);
/* Does the replay write blk? */
typedef int (*xr_jhas_fn)(void *priv, blk64_t blk);
errcode_t xr_jvalid_fs(ext2_filsys fs, int flags, xr_jread_fn rd,
		       xr_jhas_fn has, void *priv);

#endif /* XR_JOURNAL_INT_H */
