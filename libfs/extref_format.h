/*
 * extref_format.h --- the on-disk format of the extref reference-count tree.
 *
 * This header and journal/jbd2_format.h (the ext4 journal's blocks, as
 * the kernel writes them: big-endian, not installed) describe the bytes
 * on disk.  Every structure here is little-endian, packed by construction (no implicit padding), and has
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
 * h_seen_*	What the superblock said when a writer of this library last
 *		closed the image (FORMAT.md section 11, "Foreign writers"):
 *		h_seen_flags EXTREF_SEEN_RECORDED says the record is there
 *		(writers that do not know it write zeros: no record, nothing
 *		is concluded); h_seen_csum is the crc32c (seeded as the tree's
 *		checksums) of the superblock's fields every writer changes
 *		(write, mount and check times, mount count, kilobytes written,
 *		feature flags); h_seen_time/h_seen_nsec the library's clock at
 *		that close; h_seen_mtime and h_seen_mnt_count the superblock's
 *		s_mtime and s_mnt_count.  EXTREF_SEEN_FOREIGN: a write by
 *		another tool was met since h_seen_time and fsck.extref has not
 *		yet examined it (h_seen_time then stays where it was).
 *		EXTREF_SEEN_WRITING: a writer of ours has committed since
 *		and not closed (crashed): its writes are not told from
 *		others' by the write record, only a mount is.
 *		EXTREF_SEEN_NSEC: every ctime the library left in
 *		h_seen_time's second has nanoseconds, so a ctime of whole
 *		seconds there (libext2fs writers stamp those) is another
 *		tool's; without it, nothing is concluded from one.
 *		Readers that do not know these fields ignore them.
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

/* h_seen_flags */
#define EXTREF_SEEN_RECORDED	0x0001	/* the h_seen_* fields hold a record */
#define EXTREF_SEEN_FOREIGN	0x0002	/* another tool wrote; not examined */
#define EXTREF_SEEN_WRITING	0x0004	/* a writer of ours committed since */
#define EXTREF_SEEN_NSEC	0x0008	/* no file has a ctime of whole
					 * seconds in h_seen_time's second
					 * but another tool's */

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
/*4c*/	__le32	h_seen_flags;
/*50*/	__le32	h_seen_csum;
/*54*/	__le32	h_seen_nsec;
/*58*/	__le64	h_seen_time;
/*60*/	__le64	h_seen_mtime;
/*68*/	__le16	h_seen_mnt_count;
/*6a*/	__le16	h_reserved0;
/*6c*/	__le32	h_reserved[4];
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

/* The compile-time size and offset checks are in tree/ondisk_checks.h. */

/* Entries that fit in a node of the given block size. */
#define EXTREF_NODE_CAPACITY(bs) \
	(((bs) - sizeof(struct extref_disk_node)) / sizeof(struct extref_disk_rec))

#endif /* EXTREF_FORMAT_H */
