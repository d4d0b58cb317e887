/*
 * shrink_keep.c --- what a shrink's copy keeps of the image, as the
 * stock mke2fs takes it: block and inode size, UUID, label, hash seed,
 * the journal or none, and the features below, set or cleared as in the
 * image (-O); the rest are the build's own (our mke2fs configuration).
 */
#include <stdio.h>
#include <string.h>
#include <uuid/uuid.h>

#include "shrink_int.h"

/* The features the copy takes from the image: word (compat, incompat,
 * ro_compat), mask, mke2fs's name. */
static const struct {
	int		word;
	__u32		mask;
	const char	*name;
} kept[] = {
	{ 0, EXT3_FEATURE_COMPAT_HAS_JOURNAL, "has_journal" },
	{ 0, EXT2_FEATURE_COMPAT_EXT_ATTR, "ext_attr" },
	{ 0, EXT2_FEATURE_COMPAT_DIR_INDEX, "dir_index" },
	{ 1, EXT2_FEATURE_INCOMPAT_FILETYPE, "filetype" },
	{ 1, EXT4_FEATURE_INCOMPAT_FLEX_BG, "flex_bg" },
	{ 1, EXT4_FEATURE_INCOMPAT_64BIT, "64bit" },
	{ 2, EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER, "sparse_super" },
	{ 2, EXT2_FEATURE_RO_COMPAT_LARGE_FILE, "large_file" },
	{ 2, EXT4_FEATURE_RO_COMPAT_HUGE_FILE, "huge_file" },
	{ 2, EXT4_FEATURE_RO_COMPAT_DIR_NLINK, "dir_nlink" },
	{ 2, EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE, "extra_isize" },
	{ 2, EXT4_FEATURE_RO_COMPAT_METADATA_CSUM, "metadata_csum" },
	{ 1, EXT4_FEATURE_INCOMPAT_CSUM_SEED, "metadata_csum_seed" },
	{ 2, EXT4_FEATURE_RO_COMPAT_QUOTA, "quota" },
	{ 2, EXT4_FEATURE_RO_COMPAT_PROJECT, "project" },
	{ 1, EXT4_FEATURE_INCOMPAT_INLINE_DATA, "inline_data" },
	{ 1, EXT4_FEATURE_INCOMPAT_LARGEDIR, "large_dir" },
	{ 1, EXT4_FEATURE_INCOMPAT_EA_INODE, "ea_inode" },
	{ 0, EXT4_FEATURE_COMPAT_ORPHAN_FILE, "orphan_file" },
	{ 1, EXT2_FEATURE_INCOMPAT_META_BG, "meta_bg" },
};

static int has(const __u32 w[3], int word, __u32 mask)
{
	return (w[word] & mask) != 0;
}

/* -O: each kept feature set or cleared (^), uninit_bg when the image
 * has it (instead of metadata_csum), no resize inode with meta_bg. */
static void features_of(const __u32 w[3], char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		if (at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s%s",
					       at ? "," : "",
					       has(w, kept[i].word,
						   kept[i].mask) ? "" : "^",
					       kept[i].name);
	if (has(w, 2, EXT4_FEATURE_RO_COMPAT_GDT_CSUM) && at < len)
		at += (size_t)snprintf(buf + at, len - at, ",uninit_bg");
	if (has(w, 1, EXT2_FEATURE_INCOMPAT_META_BG) && at < len)
		snprintf(buf + at, len - at, ",^resize_inode");
}

void xr_shrink_keep_of(ext2_filsys fs, struct xr_shrink_keep *k)
{
	static const unsigned char zero[16];
	struct ext2_super_block *sb = fs->super;
	__u32 w[3] = { sb->s_feature_compat, sb->s_feature_incompat,
		       sb->s_feature_ro_compat };
	char seed[40];

	memset(k, 0, sizeof(*k));
	k->blocksize = fs->blocksize;
	k->inode_size = EXT2_INODE_SIZE(sb);
	k->journal = ext2fs_has_feature_journal(sb);
	snprintf(k->isize, sizeof(k->isize), "%u", k->inode_size);
	uuid_unparse(sb->s_uuid, k->uuid);
	memcpy(k->label, sb->s_volume_name, EXT2_LABEL_LEN);
	if (memcmp(sb->s_hash_seed, zero, sizeof(zero))) {
		uuid_unparse((const unsigned char *)sb->s_hash_seed, seed);
		snprintf(k->ext, sizeof(k->ext), "hash_seed=%s", seed);
	}
	features_of(w, k->features, sizeof(k->features));
}
