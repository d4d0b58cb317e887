/*
 * extref_format.h --- the on-disk format of the extref reference-count tree.
 *
 * This is the only header that describes bytes on disk.  Every structure
 * but the jbd2 ones (big-endian, as the kernel writes them; see below)
 * is little-endian, packed by construction (no implicit padding), and has
 * its size and field offsets checked at compile time (tree/ondisk_checks.h,
 * compiled with the library).  Code never byte-swaps these structures in place: it decodes into
 * the in-memory forms and encodes back.  The tree header and the node
 * header have one decoder (public: extref_tree_hdr_decode, in extref.h)
 * and one encoder each (tree/xr_hdr.h, hdr.c);
 * records and keys are converted in tree/node.c and tree/ondisk.c.
 *
 * docs/FORMAT.md is the prose version of this file; keep them in step.
 *
 * Where the tree lives
 * --------------------
 * The tree is the data of reserved inode 5 (EXT2_BOOT_LOADER_INO), a
 * regular-mode inode with the extents flag.  The filesystem has the
 * RO_COMPAT_SHARED_BLOCKS feature.  The file is an array of blocks of the
 * filesystem's block size; a block is named by its logical block number in
 * that file (an "lblk").  Logical block 0 holds the header; every other
 * block below header.h_nblocks is either a tree node or a free node.
 */
#ifndef EXTREF_FORMAT_H
#define EXTREF_FORMAT_H

#include <stddef.h>
#include <ext2fs/ext2_types.h>

#define EXTREF_INO		5	/* EXT2_BOOT_LOADER_INO */

/*
 * The header block (logical block 0).
 *
 * h_magic	EXTREF_HDR_MAGIC.
 * h_version	EXTREF_VERSION.  A reader that does not know the version
 *		refuses to load the tree (the ext4 part stays readable).
 * h_incompat	Features a reader must understand to read the tree at all.
 * h_ro_compat	Features a reader may ignore when only reading; a writer
 *		that does not know one of them must not write.
 * h_compat	Features every reader and writer may ignore.
 * h_blocksize	Node size in bytes; always the filesystem's block size.
 * h_uuid	The filesystem's s_uuid when the tree was made.
 * h_root	lblk of the root node, 0 when the tree is empty.
 * h_depth	Number of levels: 0 for an empty tree, 1 when the root is a
 *		leaf.  At most EXTREF_MAX_DEPTH.
 * h_nrecords	Number of leaf records in the tree.
 * h_nblocks	Number of blocks of the file in use by the format (header,
 *		nodes and free nodes): lblks 0 .. h_nblocks-1.
 * h_free_head	lblk of the first free node, 0 when the free list is empty.
 * h_free_count	Number of free nodes reachable from h_free_head.
 * h_generation	Incremented by every commit.
 * h_stamp	0, or the stamp a writer of this library left at a clean
 *		close after it had proven the counts against every extent
 *		mapping: a checksum of the filesystem's allocation state
 *		(group descriptors, free counts) and h_generation.  A
 *		read-write open that finds it equal to the image's state
 *		skips the proof (FORMAT.md, "What a writer trusts"); every
 *		commit of a writer clears it.  Writers that do not know it
 *		write 0 there.
 * h_checksum	crc32c (seeded as described in FORMAT.md) of the first
 *		EXTREF_HDR_CSUM_OFFSET bytes of the block.
 *
 * The rest of the block is zero.
 */
#define EXTREF_HDR_MAGIC	0x48465258	/* "XRFH" */
#define EXTREF_VERSION		1

#define EXTREF_FEATURE_COMPAT_SUPP	0
#define EXTREF_FEATURE_RO_COMPAT_SUPP	0
#define EXTREF_FEATURE_INCOMPAT_SUPP	0

#define EXTREF_MAX_DEPTH	8

struct extref_disk_header {
/*00*/	__le32	h_magic;
/*04*/	__le16	h_version;
/*06*/	__le16	h_depth;
/*08*/	__le32	h_compat;
/*0c*/	__le32	h_ro_compat;
/*10*/	__le32	h_incompat;
/*14*/	__le32	h_blocksize;
/*18*/	__u8	h_uuid[16];
/*28*/	__le32	h_root;
/*2c*/	__le32	h_nblocks;
/*30*/	__le64	h_nrecords;
/*38*/	__le32	h_free_head;
/*3c*/	__le32	h_free_count;
/*40*/	__le64	h_generation;
/*48*/	__le32	h_stamp;
/*4c*/	__le32	h_reserved[12];
/*7c*/	__le32	h_checksum;
/*80*/
};
#define EXTREF_HDR_CSUM_OFFSET	0x7c

/*
 * Every node, tree or free, starts with this header.
 *
 * n_magic	EXTREF_NODE_MAGIC for a tree node, EXTREF_FREE_MAGIC for a
 *		free node.
 * n_level	0 for a leaf, parent level = child level + 1.  The root's
 *		level is h_depth - 1.  Unused (0) in a free node.
 * n_nr		Number of entries after the header, 1 .. capacity (the root
 *		may hold 0 entries only while the tree is empty, which is
 *		written as h_root = 0 instead).  0 in a free node.
 * n_blkno	The node's own lblk: catches misdirected reads and writes.
 * n_next	Free nodes: lblk of the next free node, 0 at the end.
 *		Tree nodes: 0.
 * n_generation	h_generation of the commit that wrote the node.
 * n_checksum	crc32c over the whole block, with this field taken as zero.
 */
#define EXTREF_NODE_MAGIC	0x4e465258	/* "XRFN" */
#define EXTREF_FREE_MAGIC	0x46465258	/* "XRFF" */

struct extref_disk_node {
/*00*/	__le32	n_magic;
/*04*/	__le16	n_level;
/*06*/	__le16	n_nr;
/*08*/	__le32	n_blkno;
/*0c*/	__le32	n_next;
/*10*/	__le64	n_generation;
/*18*/	__le32	n_reserved;
/*1c*/	__le32	n_checksum;
/*20*/
};
#define EXTREF_NODE_CSUM_OFFSET	0x1c

/*
 * A leaf record: physical blocks [r_start, r_start + r_len) of the
 * filesystem are each mapped r_count times by extent mappings of inodes.
 * Legal values: r_len >= 1, r_count >= 2, r_start + r_len <= the block
 * count of the filesystem, r_start >= s_first_data_block.
 * Records in a leaf are sorted by r_start and never overlap; across the
 * whole tree, two records that touch (a.r_start + a.r_len == b.r_start)
 * have different counts unless a.r_len + b.r_len > EXTREF_MAX_REC_LEN.
 */
struct extref_disk_rec {
/*00*/	__le64	r_start;
/*08*/	__le32	r_len;
/*0c*/	__le32	r_count;
/*10*/
};
#define EXTREF_MAX_REC_LEN	0xffffffffU
#define EXTREF_MAX_COUNT	0xffffffffU

/*
 * An index entry of an interior node: every record in the subtree at
 * lblk k_child has r_start >= k_key, and below the next entry's k_key.
 * Keys are strictly increasing within a node.  k_reserved is zero.
 */
struct extref_disk_key {
/*00*/	__le64	k_key;
/*08*/	__le32	k_child;
/*0c*/	__le32	k_reserved;
/*10*/
};

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

/* The compile-time size and offset checks are in tree/ondisk_checks.h. */

/* Entries that fit in a node of the given block size. */
#define EXTREF_NODE_CAPACITY(bs) \
	(((bs) - sizeof(struct extref_disk_node)) / sizeof(struct extref_disk_rec))

#endif /* EXTREF_FORMAT_H */
