/*
 * plan_size.c --- extref_build_plan_size: an image sized from what it
 * will hold, computed, not guessed.
 *
 * The source is measured first (extref_source_measure and its kin): its
 * entries, its data blocks (with EXTREF_DEDUPE_BLOCK the distinct ones
 * only: the build writes each once) and the blocks its directories,
 * symlinks, extended attributes and extent trees need.  To that come the
 * tree's nodes, the journal (below: journal_mib), and the group metadata of a filesystem of that many blocks and
 * inodes, which libext2fs computes itself (ext2fs_initialize on nothing,
 * with the features mkfs.extref's mke2fs configuration gives); then the
 * headroom, in blocks and inodes alike.  No blocks are reserved for root.
 */
#include <string.h>

#include "build_int.h"

#define JOURNAL_SMALL	(4ULL << 20)

/* Blocks a filesystem of blocks and inodes keeps for its own metadata
 * (superblocks, descriptors and their reserve, bitmaps, inode tables). */
static blk64_t overhead(unsigned int bs, blk64_t blocks, __u32 inodes,
			unsigned int isize)
{
	struct ext2_super_block sb;
	ext2_filsys fs = NULL;
	blk64_t over;

	memset(&sb, 0, sizeof(sb));
	ext2fs_blocks_count_set(&sb, blocks);
	sb.s_log_block_size = (bs >> 11) ? (bs == 2048 ? 1 : 2) : 0;
	sb.s_inodes_count = inodes;
	sb.s_inode_size = (__u16)isize;
	sb.s_rev_level = EXT2_DYNAMIC_REV;
	sb.s_log_groups_per_flex = 4;
	sb.s_feature_compat = EXT2_FEATURE_COMPAT_EXT_ATTR |
		EXT2_FEATURE_COMPAT_RESIZE_INODE |
		EXT2_FEATURE_COMPAT_DIR_INDEX;
	sb.s_feature_incompat = EXT2_FEATURE_INCOMPAT_FILETYPE |
		EXT3_FEATURE_INCOMPAT_EXTENTS | EXT4_FEATURE_INCOMPAT_FLEX_BG |
		EXT4_FEATURE_INCOMPAT_64BIT;
	sb.s_feature_ro_compat = EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER |
		EXT2_FEATURE_RO_COMPAT_LARGE_FILE |
		EXT4_FEATURE_RO_COMPAT_HUGE_FILE |
		EXT4_FEATURE_RO_COMPAT_DIR_NLINK |
		EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE |
		EXT4_FEATURE_RO_COMPAT_METADATA_CSUM;
	if (ext2fs_initialize("/dev/null", EXT2_FLAG_64BITS, &sb,
			      unix_io_manager, &fs))
		return blocks / 20 + inodes / (bs / isize) + 64; /* a guess */
	over = blocks - ext2fs_free_blocks_count(fs->super);
	/* the inode tables too, if the free count left them in */
	if (over < fs->inode_blocks_per_group * fs->group_desc_count)
		over += fs->inode_blocks_per_group * fs->group_desc_count;
	ext2fs_free(fs);
	return over;
}

/*
 * The journal's size in MiB: 4 MiB, or 1/1024 of the content above
 * 4 GiB, and at least what one transaction rewriting the metadata an
 * update journals takes (the inode table blocks of the source's
 * entries, its directories' blocks, the tree's nodes, the groups'
 * bitmaps and descriptors; an eighth more for the log's descriptor
 * blocks and slack), so that an update of a tree of the same shape,
 * even one that changes every entry, commits once without growing the
 * journal (TRANSACTIONS.md).  At most 1 GiB; -J size= wins.
 */
static unsigned int journal_mib(const struct extref_source_size *s,
				__u64 content, unsigned int bs,
				unsigned int isize)
{
	__u64 j = content * bs > (4ULL << 30) ? content * bs / 1024
					       : JOURNAL_SMALL;
	__u64 groups = content / (8ULL * bs) + 1, meta;

	if (j > (128ULL << 20))
		j = 128ULL << 20;
	meta = s->entries / (isize < bs ? bs / isize : 1) + groups +
	       s->dir_blocks +
	       (s->data_blocks - s->distinct_blocks) / (bs / 16 - 2) +
	       2 * groups + groups * 64 / bs + 4;
	meta = (meta + meta / 8) * bs;
	if (meta > (1ULL << 30))
		meta = 1ULL << 30;
	if (meta > j)
		j = meta;
	return (unsigned int)((j + (1ULL << 20) - 1) >> 20);
}

/*
 * n inodes as mke2fs keeps them: it rounds each group's share up to
 * whole inode-table blocks, then down to a multiple of 8 (-N 25 in two
 * groups of 2 inodes a block gave 16).  Asked for a multiple of both,
 * it keeps them all.
 */
static __u64 whole_groups(__u64 n, blk64_t blocks, unsigned int bs,
			     unsigned int isize)
{
	__u64 groups = (blocks + 8ULL * bs - 1) / (8ULL * bs), ipg;
	unsigned int step = isize && bs / isize ? bs / isize : 1;

	while (step % 8)
		step *= 2;
	if (!groups)
		groups = 1;
	ipg = (n + groups - 1) / groups;
	ipg = (ipg + step - 1) / step * step;
	n = ipg * groups;
	return n > 0xffffffffULL ? 0xffffffffULL : n;
}

errcode_t extref_build_plan_size(const struct extref_source_size *s,
				 struct extref_build_plan *p)
{
	unsigned int bs = p->blocksize, isize = p->inode_size ? p->inode_size
							      : 256;
	__u64 n_inodes, content, total, jblocks, floor;
	int i;

	if (bs != 1024 && bs != 2048 && bs != 4096)
		return EXT2_ET_INVALID_ARGUMENT;
	n_inodes = s->entries + s->entries * p->headroom / 100 + 16;
	if (n_inodes > 0xffffffffULL)
		n_inodes = 0xffffffffULL;
	/* data, metadata, lost+found (16 KiB), the root, the tree: at
	 * most one record per shared block, 254 a node (4 KiB) */
	content = s->distinct_blocks + s->meta_blocks + 16384 / bs + 1 +
		  (s->data_blocks - s->distinct_blocks) / (bs / 16 - 2) + 2;
	if (!p->journal_mib)	/* -J size= wins */
		p->journal_mib = journal_mib(s, content, bs, isize);
	jblocks = p->no_journal ? 0 : ((__u64)p->journal_mib << 20) / bs;
	total = content + jblocks;
	for (i = 0; i < 4; i++)		/* more groups, more metadata */
		total = content + jblocks +
			overhead(bs, total, (__u32)n_inodes, isize);
	total += total * p->headroom / 100;
	/* mke2fs wants a journal under half the free blocks: a small
	 * image is that large (the unused part a hole in the file) */
	floor = 2 * jblocks + 64 + overhead(bs, 2 * jblocks + 64,
					    (__u32)n_inodes, isize);
	if (total < floor)
		total = floor;
	p->inodes = whole_groups(n_inodes, total, bs, isize);
	p->bytes = total * bs;
	return 0;
}
