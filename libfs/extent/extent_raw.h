/*
 * extent_raw.h --- the decoders of raw extent-node entries, shared by
 * the code that parses nodes itself (extent_node.c, extent_splice.c and
 * the checker's batched walk, check/fsck_extents.c).  Inline: the
 * checker decodes every extent of the filesystem through them.
 * Include after <ext2fs/ext3_extents.h>.
 */
#ifndef EXTREF_EXTENT_RAW_H
#define EXTREF_EXTENT_RAW_H

/* The extent block an index entry points to. */
static inline blk64_t xr_extent_idx_child(const struct ext3_extent_idx *ix)
{
	return ext2fs_le32_to_cpu(ix->ei_leaf) +
	       ((blk64_t)ext2fs_le16_to_cpu(ix->ei_leaf_hi) << 32);
}

/* A leaf extent's first physical block. */
static inline blk64_t xr_extent_start(const struct ext3_extent *ex)
{
	return ext2fs_le32_to_cpu(ex->ee_start) +
	       ((blk64_t)ext2fs_le16_to_cpu(ex->ee_start_hi) << 32);
}

/*
 * A leaf extent's length in blocks; *unwritten (if not NULL) is set for
 * an unwritten extent, whose ee_len carries EXT_INIT_MAX_LEN on top.
 */
static inline unsigned int xr_extent_len(const struct ext3_extent *ex,
					 int *unwritten)
{
	unsigned int raw = ext2fs_le16_to_cpu(ex->ee_len);
	int un = raw > EXT_INIT_MAX_LEN;

	if (unwritten)
		*unwritten = un;
	return un ? raw - EXT_INIT_MAX_LEN : raw;
}

#endif /* EXTREF_EXTENT_RAW_H */
