/*
 * jbd2_format.h --- the ext4 journal's blocks on disk (jbd2), as the
 * kernel writes them.  The journal layer's own: not installed (the tools
 * see the journal through extref_journal_walk, extref.h).
 */
#ifndef JBD2_FORMAT_H
#define JBD2_FORMAT_H

#include <stddef.h>
#include <ext2fs/ext2fs.h>

/*
 * The ext4 journal (jbd2)
 * -----------------------
 * The image's journal is the data of the inode s_journal_inum (inode 8)
 * and follows the kernel's jbd2 format, so that the kernel and stock
 * e2fsck replay what libfs/journal/ writes.  Unlike the rest of this
 * header, every jbd2 field is BIG-endian.  The journal is an array of
 * blocks of the filesystem's block size, named by their index in the
 * inode ("journal blocks"); block 0 is the journal superblock, blocks
 * s_first .. s_maxlen-1 are the log, a ring.
 *
 * Every block of the log that is a record starts with a block header:
 * h_magic JBD2_MAGIC, h_blocktype one of JBD2_*_BLOCK below, h_sequence
 * the transaction id (tid) the block belongs to.  A transaction is one or
 * more descriptor blocks, each followed by the copies of the filesystem
 * blocks its tags name, revoke blocks, then one commit block.  A copy
 * whose first four bytes equal JBD2_MAGIC is written with them zeroed and
 * its tag flagged JBD2_FLAG_ESCAPE.
 */
#define JBD2_MAGIC		0xc03b3998U

#define JBD2_DESCRIPTOR_BLOCK	1
#define JBD2_COMMIT_BLOCK	2
#define JBD2_SUPERBLOCK_V1	3
#define JBD2_SUPERBLOCK_V2	4
#define JBD2_REVOKE_BLOCK	5

struct jbd2_disk_header {
/*00*/	__be32	h_magic;
/*04*/	__be32	h_blocktype;
/*08*/	__be32	h_sequence;
/*0c*/
};

/*
 * The journal superblock (journal block 0; 1024 bytes, the rest of the
 * block unused).
 *
 * s_blocksize	Must equal the filesystem's block size.
 * s_maxlen	Journal blocks in all; at most the inode's blocks.
 * s_first	First block of the log (1 for an internal journal).
 * s_sequence	The tid expected at s_start; when the journal is empty, the
 *		tid the next transaction will use.
 * s_start	Journal block of the first record to replay; 0 when the
 *		journal is empty (everything checkpointed).
 * s_errno	An error the kernel recorded (negative errno), or 0.
 * s_feature_*	JBD2_FEATURE_*: an incompat feature not understood means
 *		the journal cannot be replayed.
 * s_uuid	The journal's UUID (the filesystem's for an internal
 *		journal); descriptor blocks repeat it after their first tag.
 * s_nr_users	Filesystems sharing the journal (1 when internal).
 * s_checksum_type  JBD2_CRC32C_CHKSUM with checksum v2/v3.
 * s_num_fc_blks	Fast-commit blocks at the end (FAST_COMMIT only).
 * s_checksum	With checksum v2/v3: crc32c (seed ~0, no final inversion)
 *		of the 1024 bytes with this field zero.
 */
#define JBD2_FEATURE_COMPAT_CHECKSUM		0x00000001
#define JBD2_FEATURE_INCOMPAT_REVOKE		0x00000001
#define JBD2_FEATURE_INCOMPAT_64BIT		0x00000002
#define JBD2_FEATURE_INCOMPAT_ASYNC_COMMIT	0x00000004
#define JBD2_FEATURE_INCOMPAT_CSUM_V2		0x00000008
#define JBD2_FEATURE_INCOMPAT_CSUM_V3		0x00000010
#define JBD2_FEATURE_INCOMPAT_FAST_COMMIT	0x00000020
#define JBD2_CRC32C_CHKSUM	4

struct jbd2_disk_super {
/*000*/	struct jbd2_disk_header s_header;
/*00c*/	__be32	s_blocksize;
/*010*/	__be32	s_maxlen;
/*014*/	__be32	s_first;
/*018*/	__be32	s_sequence;
/*01c*/	__be32	s_start;
/*020*/	__be32	s_errno;
/*024*/	__be32	s_feature_compat;
/*028*/	__be32	s_feature_incompat;
/*02c*/	__be32	s_feature_ro_compat;
/*030*/	__u8	s_uuid[16];
/*040*/	__be32	s_nr_users;
/*044*/	__be32	s_dynsuper;
/*048*/	__be32	s_max_transaction;
/*04c*/	__be32	s_max_trans_data;
/*050*/	__u8	s_checksum_type;
/*051*/	__u8	s_padding2[3];
/*054*/	__be32	s_num_fc_blks;
/*058*/	__be32	s_head;
/*05c*/	__be32	s_padding[40];
/*0fc*/	__be32	s_checksum;
/*100*/	__u8	s_users[16 * 48];
/*400*/
};

/*
 * A descriptor block: the header, then one tag per logged block, in the
 * order the copies follow the descriptor.  The first tag (and any tag
 * without JBD2_FLAG_SAME_UUID) is followed by the 16-byte journal UUID.
 * The tag flagged JBD2_FLAG_LAST_TAG is the last; with checksum v2/v3
 * the block's last four bytes are a jbd2_disk_tail, never used by tags.
 *
 * The tag's size depends on the journal's features: with CSUM_V3 it is
 * jbd2_disk_tag3 (16 bytes); otherwise jbd2_disk_tag, whose last field
 * exists only with 64BIT (12 bytes, else 8; CSUM_V2 adds 2 bytes).
 * t_blocknr(_high)	The filesystem block the copy belongs to.
 * t_checksum	CSUM_V3: crc32c(seed, be32 tid, then the copy as written);
 *		CSUM_V2: its low 16 bits; seed = crc32c(~0, s_uuid).
 */
#define JBD2_FLAG_ESCAPE	1	/* copy's magic zeroed */
#define JBD2_FLAG_SAME_UUID	2	/* no UUID after this tag */
#define JBD2_FLAG_DELETED	4	/* unused */
#define JBD2_FLAG_LAST_TAG	8	/* last tag of this descriptor */
#define JBD2_UUID_BYTES		16

struct jbd2_disk_tag3 {
/*00*/	__be32	t_blocknr;
/*04*/	__be32	t_flags;
/*08*/	__be32	t_blocknr_high;
/*0c*/	__be32	t_checksum;
/*10*/
};

struct jbd2_disk_tag {
/*00*/	__be32	t_blocknr;
/*04*/	__be16	t_checksum;
/*06*/	__be16	t_flags;
/*08*/	__be32	t_blocknr_high;
/*0c*/
};

/*
 * The last four bytes of a descriptor or revoke block with checksum
 * v2/v3: crc32c(seed, the whole block with this field zero).
 */
struct jbd2_disk_tail {
/*00*/	__be32	t_checksum;
/*04*/
};

/*
 * The commit block ends a transaction: it is written, and flushed, after
 * every other block of the transaction is on disk, so a transaction is
 * complete exactly when its commit block is there and verifies.
 * h_chksum_type, h_chksum_size: JBD2_CRC32_CHKSUM/4 for the old
 *		COMPAT_CHECKSUM (crc32 over the copies); 0 with v2/v3.
 * h_chksum[0]	With v2/v3: crc32c(seed, the whole block with it zero).
 * h_commit_sec, h_commit_nsec	When the transaction committed.
 */
#define JBD2_CRC32_CHKSUM	1
#define JBD2_CRC32_CHKSUM_SIZE	4

struct jbd2_disk_commit {
/*00*/	struct jbd2_disk_header h_header;
/*0c*/	__u8	h_chksum_type;
/*0d*/	__u8	h_chksum_size;
/*0e*/	__u8	h_padding[2];
/*10*/	__be32	h_chksum[8];
/*30*/	__be64	h_commit_sec;
/*38*/	__be32	h_commit_nsec;
/*3c*/	__u8	h_reserved[4];	/* the kernel's struct pads to 0x40 */
/*40*/
};

/*
 * A revoke block: filesystem blocks that earlier transactions (tids up
 * to this block's h_sequence) logged and that replay must not write.
 * r_count is the bytes in use, header included; the records follow the
 * header, __be64 each with 64BIT, else __be32.  With checksum v2/v3 the
 * last four bytes are a jbd2_disk_tail.
 */
struct jbd2_disk_revoke {
/*00*/	struct jbd2_disk_header r_header;
/*0c*/	__be32	r_count;
/*10*/
};

/* Sizes and offsets, checked at compile time in every user. */
#define JBD2_CHECK_SIZE(type, size) \
	_Static_assert(sizeof(struct type) == (size), #type " size")
#define JBD2_CHECK_OFF(type, field, off) \
	_Static_assert(offsetof(struct type, field) == (off), \
		       #type "." #field " offset")
JBD2_CHECK_SIZE(jbd2_disk_header, 0x0c);
JBD2_CHECK_OFF(jbd2_disk_header, h_blocktype, 0x04);
JBD2_CHECK_OFF(jbd2_disk_header, h_sequence, 0x08);

JBD2_CHECK_SIZE(jbd2_disk_super, 0x400);
JBD2_CHECK_OFF(jbd2_disk_super, s_blocksize, 0x0c);
JBD2_CHECK_OFF(jbd2_disk_super, s_sequence, 0x18);
JBD2_CHECK_OFF(jbd2_disk_super, s_start, 0x1c);
JBD2_CHECK_OFF(jbd2_disk_super, s_feature_incompat, 0x28);
JBD2_CHECK_OFF(jbd2_disk_super, s_uuid, 0x30);
JBD2_CHECK_OFF(jbd2_disk_super, s_checksum_type, 0x50);
JBD2_CHECK_OFF(jbd2_disk_super, s_num_fc_blks, 0x54);
JBD2_CHECK_OFF(jbd2_disk_super, s_checksum, 0xfc);
JBD2_CHECK_OFF(jbd2_disk_super, s_users, 0x100);

JBD2_CHECK_SIZE(jbd2_disk_tag3, 0x10);
JBD2_CHECK_OFF(jbd2_disk_tag3, t_flags, 0x04);
JBD2_CHECK_OFF(jbd2_disk_tag3, t_checksum, 0x0c);
JBD2_CHECK_SIZE(jbd2_disk_tag, 0x0c);
JBD2_CHECK_OFF(jbd2_disk_tag, t_flags, 0x06);
JBD2_CHECK_OFF(jbd2_disk_tag, t_blocknr_high, 0x08);
JBD2_CHECK_SIZE(jbd2_disk_tail, 0x04);

JBD2_CHECK_SIZE(jbd2_disk_commit, 0x40);
JBD2_CHECK_OFF(jbd2_disk_commit, h_chksum, 0x10);
JBD2_CHECK_OFF(jbd2_disk_commit, h_commit_sec, 0x30);
JBD2_CHECK_OFF(jbd2_disk_commit, h_commit_nsec, 0x38);

JBD2_CHECK_SIZE(jbd2_disk_revoke, 0x10);
JBD2_CHECK_OFF(jbd2_disk_revoke, r_count, 0x0c);

#endif /* JBD2_FORMAT_H */
