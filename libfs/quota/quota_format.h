/*
 * quota_format.h --- the v2 quota file (QFMT_VFS_V1, "vfsv1"), as the
 * kernel (fs/quota/quota_v2.c, quota_tree.c) and e2fsprogs write it in the
 * hidden quota inodes 3 and 4 and in the project quota inode.
 *
 * The file is a sequence of 1 KiB blocks, little-endian:
 *   block 0: the header (magic of the quota type, version 1) and, at byte
 *            8, the info (grace times, the number of blocks of the file,
 *            the heads of the free-block and free-entry lists);
 *   block 1: the root of a radix tree of four levels; a tree block holds
 *            256 block numbers, indexed by one byte of the id, most
 *            significant first; 0 is "no subtree";
 *   the fourth level points at data blocks: a 16-byte header (the
 *            doubly linked list of data blocks with a free entry, the
 *            number of entries in use) and 14 entries of 72 bytes.
 * A free block (given back by the kernel) is chained through
 * dqdh_next_free of its header from dqi_free_blk.  An entry that is all
 * zeros is unused; an entry in use that would be all zeros has itime 1.
 * Block limits are in 1 KiB units, the space used in bytes.
 */
#ifndef XR_QUOTA_FORMAT_H
#define XR_QUOTA_FORMAT_H

#include <stddef.h>
#include <ext2fs/ext2fs.h>

#define XR_QT_BLKSIZE		1024
#define XR_QT_TREEOFF		1	/* the root of the tree */
#define XR_QT_DEPTH		4
#define XR_QT_VERSION		1	/* v2r1: 64-bit limits */
#define XR_QT_REFS		(XR_QT_BLKSIZE / 4)
#define XR_QT_USR_MAGIC		0xd9c01f11
#define XR_QT_GRP_MAGIC		0xd9c01927
#define XR_QT_PRJ_MAGIC		0xd9c03f14
#define XR_QT_LIMIT_UNIT	1024	/* block limits: 1 KiB units */

struct xr_qt_disk_header {
/*00*/	__u32	dqh_magic;
/*04*/	__u32	dqh_version;
/*08*/	__u32	dqi_bgrace;		/* seconds past a block soft limit */
/*0c*/	__u32	dqi_igrace;		/* and past an inode soft limit */
/*10*/	__u32	dqi_flags;
/*14*/	__u32	dqi_blocks;		/* blocks in the file */
/*18*/	__u32	dqi_free_blk;		/* first free block, 0: none */
/*1c*/	__u32	dqi_free_entry;		/* first data block with room */
};

struct xr_qt_disk_dbheader {
/*00*/	__u32	dqdh_next_free;
/*04*/	__u32	dqdh_prev_free;
/*08*/	__u16	dqdh_entries;		/* entries in use */
/*0a*/	__u16	dqdh_pad1;
/*0c*/	__u32	dqdh_pad2;
};

struct xr_qt_disk_dqblk {
/*00*/	__u32	dqb_id;
/*04*/	__u32	dqb_pad;
/*08*/	__u64	dqb_ihardlimit;
/*10*/	__u64	dqb_isoftlimit;
/*18*/	__u64	dqb_curinodes;
/*20*/	__u64	dqb_bhardlimit;		/* 1 KiB units */
/*28*/	__u64	dqb_bsoftlimit;
/*30*/	__u64	dqb_curspace;		/* bytes */
/*38*/	__u64	dqb_btime;		/* when the block grace ends, 0 */
/*40*/	__u64	dqb_itime;
};

#define XR_QT_PER_BLOCK	((XR_QT_BLKSIZE - sizeof(struct xr_qt_disk_dbheader)) \
			 / sizeof(struct xr_qt_disk_dqblk))

_Static_assert(sizeof(struct xr_qt_disk_header) == 32, "quota header");
_Static_assert(sizeof(struct xr_qt_disk_dbheader) == 16, "data header");
_Static_assert(sizeof(struct xr_qt_disk_dqblk) == 72, "dquot entry");
_Static_assert(offsetof(struct xr_qt_disk_dqblk, dqb_curspace) == 0x30,
	       "dquot entry");
_Static_assert(XR_QT_PER_BLOCK == 14, "entries per block");

#endif /* XR_QUOTA_FORMAT_H */
