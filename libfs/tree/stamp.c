/*
 * stamp.c --- the header's h_stamp (extref_format.h): what a writer
 * proved, bound to the filesystem's state.  The session (image/open.c)
 * computes the state's stamp and decides; the tree only keeps the field.
 */
#include <string.h>
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
 * The bitmaps' contents, group by group, into c: without metadata_csum
 * no descriptor holds their checksums, and a dd over one (another file's
 * blocks or inodes made free) would leave the stamp matching.  Bitmaps
 * not loaded (the session reads them first: xr_stamp_bitmaps) make a
 * stamp no open matches.
 */
static __u32 bitmaps_crc(ext2_filsys fs, __u32 c)
{
	__u32 per = EXT2_BLOCKS_PER_GROUP(fs->super);
	__u32 ipg = EXT2_INODES_PER_GROUP(fs->super);
	blk64_t first, n, total = ext2fs_blocks_count(fs->super);
	char *buf = NULL;
	dgrp_t g;

	if (!fs->block_map || !fs->inode_map ||
	    ext2fs_get_mem(fs->blocksize, &buf))
		return c ^ 0x5a5a5a5a;
	for (g = 0; g < fs->group_desc_count; g++) {
		first = ext2fs_group_first_block2(fs, g);
		n = total - first < per ? total - first : per;
		memset(buf, 0, fs->blocksize);
		if (!ext2fs_get_block_bitmap_range2(fs->block_map, first, n,
						    buf))
			c = xr_crc32c(c, buf, (n + 7) / 8);
		memset(buf, 0, fs->blocksize);
		if (!ext2fs_get_inode_bitmap_range2(fs->inode_map,
						    (__u64)g * ipg + 1, ipg,
						    buf))
			c = xr_crc32c(c, buf, (ipg + 7) / 8);
	}
	ext2fs_free_mem(&buf);
	return c;
}

/* Read the bitmaps the stamp binds, if it binds them and they are not
 * in memory yet. */
errcode_t xr_stamp_bitmaps(ext2_filsys fs)
{
	if (ext2fs_has_feature_metadata_csum(fs->super) ||
	    (fs->block_map && fs->inode_map))
		return 0;
	return ext2fs_read_bitmaps(fs);
}

/*
 * The stamp of fs's allocation state and the tree's generation: crc32c
 * (seeded with the tree's seed) of every group descriptor (with
 * metadata_csum, the bitmaps' checksums; without it, the bitmaps
 * themselves follow: bitmaps_crc), the free and total block and inode
 * counts and the generation; never 0.  A stock tool that allocates or
 * frees (debugfs write, rm, freeb, setb; e2fsck repairs) changes a
 * descriptor and a free count.
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
	if (!ext2fs_has_feature_metadata_csum(sb))
		c = bitmaps_crc(fs, c);
	v[0] = ext2fs_cpu_to_le64(ext2fs_free_blocks_count(sb));
	v[1] = ext2fs_cpu_to_le64(ext2fs_blocks_count(sb));
	v[2] = ext2fs_cpu_to_le64(sb->s_free_inodes_count);
	v[3] = ext2fs_cpu_to_le64(sb->s_inodes_count);
	v[4] = ext2fs_cpu_to_le64(t->generation);
	v[5] = ext2fs_cpu_to_le64(fs->group_desc_count);
	c = xr_crc32c(c, v, sizeof(v));
	return c ? c : 1;
}

/*
 * The superblock's write record (FORMAT.md section 11, "Foreign
 * writers"): the fields every writer changes when it closes the image
 * (libext2fs: s_wtime, s_kbytes_written), mounts it (the kernel and
 * fuse2fs: s_mtime, s_mnt_count) or checks it (e2fsck: s_lastcheck), and
 * the feature flags but needs_recovery.  crc32c seeded with the tree's
 * seed; never 0.
 */
__u32 xr_seen_csum(extref_tree_t t, const struct ext2_super_block *sb)
{
	__u64 v[9];
	__u32 c;

	v[0] = ext2fs_cpu_to_le64(sb->s_wtime | (__u64)sb->s_wtime_hi << 32);
	v[1] = ext2fs_cpu_to_le64(sb->s_mtime | (__u64)sb->s_mtime_hi << 32);
	v[2] = ext2fs_cpu_to_le64(sb->s_lastcheck |
				  (__u64)sb->s_lastcheck_hi << 32);
	v[3] = ext2fs_cpu_to_le64(sb->s_mnt_count);
	v[4] = ext2fs_cpu_to_le64(sb->s_kbytes_written);
	v[5] = ext2fs_cpu_to_le64(sb->s_feature_compat);
	v[6] = ext2fs_cpu_to_le64(sb->s_feature_incompat &
				  ~EXT3_FEATURE_INCOMPAT_RECOVER);
	v[7] = ext2fs_cpu_to_le64(sb->s_feature_ro_compat);
	v[8] = ext2fs_cpu_to_le64(sb->s_state & EXT2_ERROR_FS);
	c = xr_crc32c(t->seed, v, sizeof(v));
	return c ? c : 1;
}

/* The record as the header holds it (the next header write's). */
void xr_tree_seen(extref_tree_t t, struct xr_seen *s)
{
	s->flags = t->hdr.h_seen_flags;
	s->csum = t->hdr.h_seen_csum;
	s->sec = t->hdr.h_seen_time;
	s->nsec = t->hdr.h_seen_nsec;
	s->mtime = t->hdr.h_seen_mtime;
	s->mnt_count = t->hdr.h_seen_mnt_count;
}

/* The record every later header write carries (commits included). */
void xr_tree_set_seen(extref_tree_t t, const struct xr_seen *s)
{
	t->hdr.h_seen_flags = s->flags;
	t->hdr.h_seen_csum = s->csum;
	t->hdr.h_seen_time = s->sec;
	t->hdr.h_seen_nsec = s->nsec;
	t->hdr.h_seen_mtime = s->mtime;
	t->hdr.h_seen_mnt_count = s->mnt_count;
}

/* The superblock's part of a record: what sb says now. */
void xr_seen_take(extref_tree_t t, const struct ext2_super_block *sb,
		  struct xr_seen *s)
{
	s->csum = xr_seen_csum(t, sb);
	s->mtime = sb->s_mtime | (__u64)sb->s_mtime_hi << 32;
	s->mnt_count = sb->s_mnt_count;
}

/*
 * Whether another tool wrote the image since the record was made: the
 * record says so (EXTREF_SEEN_FOREIGN), or sb differs from it.  A writer
 * of ours changes none of these fields before its close; one that
 * committed and never closed (EXTREF_SEEN_WRITING, carried by its
 * commits' headers) leaves a replay that moves them, so then only the
 * mount fields count.  No record (an image of an older version, or one written by a
 * writer that does not know the fields): nothing is concluded.
 */
int xr_seen_foreign(extref_tree_t t, const struct ext2_super_block *sb)
{
	struct xr_seen s, now;

	xr_tree_seen(t, &s);
	if (!(s.flags & EXTREF_SEEN_RECORDED))
		return 0;
	if (s.flags & EXTREF_SEEN_FOREIGN)
		return 1;
	xr_seen_take(t, sb, &now);
	if (now.mtime != s.mtime || now.mnt_count != s.mnt_count)
		return 1;
	/* a writer of ours died after a commit: the replay (e2fsck's, or
	 * ours) moved the write record; only a mount still tells */
	return !(s.flags & EXTREF_SEEN_WRITING) && now.csum != s.csum;
}

/*
 * Write the record into the header now (a committed tree), without
 * flushes: a record that reaches the disk without the superblock it
 * describes only makes the next open look harder (a foreign write seen,
 * nothing later named), never less.
 */
errcode_t xr_tree_write_seen(extref_tree_t t, const struct xr_seen *s)
{
	if (!(t->flags & EXTREF_TREE_RW))
		return EXTREF_ERR_READ_ONLY;
	if (t->dirty || t->broken)
		return t->broken ? t->broken : EXT2_ET_INVALID_ARGUMENT;
	xr_tree_set_seen(t, s);
	return xr_write_header(t, -1);
}
