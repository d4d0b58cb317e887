/*
 * jvalid.c --- a superblock and group descriptors that a replay would
 * write, validated before anything is written or uses them: as
 * libext2fs's open validates a superblock (lib/ext2fs/openfs.c: magic,
 * revision, features, block and descriptor sizes, counts against the
 * groups), against the device's size (as e2fsck does), and the
 * descriptors as ext2fs_check_desc does, with their checksums.  What a
 * journal cannot change under itself (the block size, the group
 * geometry, the descriptor size) must stay as the image has it.
 */
#include <string.h>
#include "journal_int.h"

#define BAD(...)	(xr_jdetail(__VA_ARGS__), EXTREF_ERR_JNL_BAD_FS)

/* Fields a journal of this filesystem cannot change. */
static int fixed_changed(struct ext2_super_block *o,
			 struct ext2_super_block *n)
{
	return o->s_log_block_size != n->s_log_block_size ||
	       o->s_log_cluster_size != n->s_log_cluster_size ||
	       o->s_first_data_block != n->s_first_data_block ||
	       o->s_blocks_per_group != n->s_blocks_per_group ||
	       o->s_clusters_per_group != n->s_clusters_per_group ||
	       o->s_inodes_per_group != n->s_inodes_per_group ||
	       o->s_rev_level != n->s_rev_level ||
	       o->s_inode_size != n->s_inode_size ||
	       o->s_desc_size != n->s_desc_size ||
	       ext2fs_has_feature_64bit(o) != ext2fs_has_feature_64bit(n);
}

/* Feature bits that say what state the filesystem is in, not how it is
 * laid out: needs_recovery (the replay clears it), orphan_present. */
#define STATE_INCOMPAT	EXT3_FEATURE_INCOMPAT_RECOVER
#define STATE_RO_COMPAT	EXT4_FEATURE_RO_COMPAT_ORPHAN_PRESENT

/* Fields an open handle derives its layout and checksums from. */
static int layout_changed(struct ext2_super_block *o,
			  struct ext2_super_block *n)
{
	return ext2fs_blocks_count(o) != ext2fs_blocks_count(n) ||
	       o->s_inodes_count != n->s_inodes_count ||
	       o->s_reserved_gdt_blocks != n->s_reserved_gdt_blocks ||
	       o->s_first_meta_bg != n->s_first_meta_bg ||
	       o->s_feature_compat != n->s_feature_compat ||
	       ((o->s_feature_incompat ^ n->s_feature_incompat) &
		~STATE_INCOMPAT) ||
	       ((o->s_feature_ro_compat ^ n->s_feature_ro_compat) &
		~STATE_RO_COMPAT) ||
	       o->s_checksum_seed != n->s_checksum_seed ||
	       memcmp(o->s_uuid, n->s_uuid, sizeof(o->s_uuid));
}

static blk64_t device_blocks(ext2_filsys fs)
{
	blk64_t n;

	if (ext2fs_get_device_size2(fs->device_name, fs->blocksize, &n) || !n)
		return ext2fs_blocks_count(fs->super);
	return n;
}

/* The superblock alone; sh is a copy of fs with sh->super = n. */
static errcode_t check_super(ext2_filsys fs, ext2_filsys sh)
{
	struct ext2_super_block *n = sh->super;
	blk64_t dev = device_blocks(fs), groups;

	if (n->s_magic != EXT2_SUPER_MAGIC)
		return BAD("the replayed superblock has no ext4 magic");
	if (n->s_rev_level > EXT2_LIB_CURRENT_REV ||
	    (n->s_feature_incompat & ~EXT2_LIB_FEATURE_INCOMPAT_SUPP) ||
	    (n->s_feature_ro_compat & ~EXT2_LIB_FEATURE_RO_COMPAT_SUPP))
		return BAD("the replayed superblock has a revision or "
			   "features libext2fs does not know");
	if (fixed_changed(fs->super, n))
		return BAD("the replayed superblock changes the block size, "
			   "the group geometry or the descriptor size");
	if (ext2fs_has_feature_metadata_csum(n) &&
	    (!ext2fs_verify_csum_type(sh, n) ||
	     !ext2fs_superblock_csum_verify(sh, n)))
		return BAD("the replayed superblock fails its checksum");
	if (n->s_first_data_block >= ext2fs_blocks_count(n) ||
	    ext2fs_blocks_count(n) > dev)
		return BAD("the replayed superblock gives %llu blocks, the "
			   "device holds %llu",
			   (unsigned long long)ext2fs_blocks_count(n),
			   (unsigned long long)dev);
	groups = ext2fs_div64_ceil(ext2fs_blocks_count(n) -
				   n->s_first_data_block,
				   n->s_blocks_per_group);
	if (groups >> 32 ||
	    groups * n->s_inodes_per_group != n->s_inodes_count)
		return BAD("the replayed superblock's inode count does not "
			   "match its groups");
	sh->group_desc_count = groups;
	sh->desc_blocks = ext2fs_div_ceil(groups, EXT2_DESC_PER_BLOCK(n));
	if (ext2fs_has_feature_meta_bg(n) &&
	    n->s_first_meta_bg > sh->desc_blocks)
		return BAD("the replayed superblock's first_meta_bg is past "
			   "its descriptors");
	return 0;
}

/* The descriptors the replayed superblock points to, as replayed. */
static errcode_t check_descs(ext2_filsys sh, xr_jread_fn rd, void *priv)
{
	unsigned bs = sh->blocksize;
	char *buf;
	errcode_t err;
	blk64_t i;
	dgrp_t g;

	err = ext2fs_get_array(sh->desc_blocks, bs, &buf);
	if (err)
		return err;
	for (i = 0; !err && i < sh->desc_blocks; i++)
		err = rd(priv, ext2fs_descriptor_block_loc2(sh,
				sh->super->s_first_data_block, i),
			 buf + i * bs);
	sh->group_desc = (void *)buf;
	for (g = 0; !err && g < sh->group_desc_count; g++)
		if (!ext2fs_group_desc_csum_verify(sh, g))
			err = BAD("the replayed descriptor of group %u fails "
				  "its checksum", g);
	if (!err && (err = ext2fs_check_desc(sh)))
		err = BAD("the replayed group descriptors: %s",
			  error_message(err));
	sh->group_desc = NULL;
	ext2fs_free_mem(&buf);
	return err;
}

/* Does the replay write the superblock or a group descriptor? */
static int touches_super(ext2_filsys fs, xr_jhas_fn has, void *priv)
{
	blk64_t i;

	if (has(priv, SUPERBLOCK_OFFSET / fs->blocksize))
		return 1;
	for (i = 0; i < fs->desc_blocks; i++)
		if (has(priv, ext2fs_descriptor_block_loc2(fs,
				fs->super->s_first_data_block, i)))
			return 1;
	return 0;
}

errcode_t xr_jvalid_fs(ext2_filsys fs, int flags, xr_jread_fn rd,
		       xr_jhas_fn has, void *priv)
{
	struct ext2_super_block *n;
	struct struct_ext2_filsys sh;
	unsigned char *buf;
	errcode_t err;

	if (!touches_super(fs, has, priv))
		return 0;
	err = ext2fs_get_mem(fs->blocksize, &buf);
	if (err)
		return err;
	err = rd(priv, SUPERBLOCK_OFFSET / fs->blocksize, buf);
	n = (struct ext2_super_block *)(buf + SUPERBLOCK_OFFSET %
					fs->blocksize);
	sh = *fs;			/* a shadow handle, never opened */
	sh.super = n;
	sh.group_desc = NULL;
	if (!err)
		err = check_super(fs, &sh);
	if (!err) {
		ext2fs_init_csum_seed(&sh);
		err = check_descs(&sh, rd, priv);
	}
	if (!err && (flags & XR_JRECOVER_SAME_LAYOUT) &&
	    layout_changed(fs->super, n)) {
		xr_jdetail("the replayed superblock changes the filesystem's "
			   "size, features or UUID");
		err = EXTREF_ERR_JNL_RESIZED;
	}
	ext2fs_free_mem(&buf);
	return err;
}
