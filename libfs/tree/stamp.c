/*
 * stamp.c --- the header's h_stamp (extref_format.h): what a writer
 * proved, bound to the filesystem's state.  The session (image/open.c)
 * computes the state's stamp and decides; the tree only keeps the field.
 */
#include "extref_int.h"
#include "base/xr_crc32c.h"

__u32 xr_tree_stamp(extref_tree_t t)
{
	return t->hdr.h_stamp;
}

__u64 xr_tree_generation(extref_tree_t t)
{
	return t->generation;
}

/* The next commit writes the header without a stamp. */
void xr_tree_stamp_clear(extref_tree_t t)
{
	t->stamp = 0;
}

/*
 * Write stamp into the header now (a committed tree: nothing dirty),
 * unless the header already holds it.  No flush around it: the header
 * names nothing new, and a stamp that reaches the disk before or without
 * the state it binds only fails to match (the next open proves in full);
 * the close's flush makes it durable with the rest.
 */
errcode_t xr_tree_write_stamp(extref_tree_t t, __u32 stamp)
{
	if (!(t->flags & EXTREF_TREE_RW))
		return EXTREF_ERR_READ_ONLY;
	if (t->dirty || t->broken)
		return t->broken ? t->broken : EXT2_ET_INVALID_ARGUMENT;
	t->stamp = stamp;
	if (t->hdr.h_stamp == stamp)
		return 0;
	return xr_write_header(t, -1);
}

/*
 * The stamp of fs's allocation state and the tree's generation: crc32c
 * (seeded with the tree's seed) of every group descriptor, the free and
 * total block and inode counts and the generation; never 0.  A stock
 * tool that allocates or frees (debugfs write, rm, freeb, setb; e2fsck
 * repairs) changes a descriptor and a free count.
 */
__u32 xr_state_stamp(extref_tree_t t)
{
	ext2_filsys fs = t->fs;
	struct ext2_super_block *sb = fs->super;
	__u64 v[6];
	__u32 c = t->seed;
	dgrp_t g;

	for (g = 0; g < fs->group_desc_count; g++)
		c = xr_crc32c(c, ext2fs_group_desc(fs, fs->group_desc, g),
			      EXT2_DESC_SIZE(sb));
	v[0] = ext2fs_cpu_to_le64(ext2fs_free_blocks_count(sb));
	v[1] = ext2fs_cpu_to_le64(ext2fs_blocks_count(sb));
	v[2] = ext2fs_cpu_to_le64(sb->s_free_inodes_count);
	v[3] = ext2fs_cpu_to_le64(sb->s_inodes_count);
	v[4] = ext2fs_cpu_to_le64(t->generation);
	v[5] = ext2fs_cpu_to_le64(fs->group_desc_count);
	c = xr_crc32c(c, v, sizeof(v));
	return c ? c : 1;
}
