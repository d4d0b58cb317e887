/*
 * setfield.c --- expert commands in stock debugfs's syntax:
 * set_inode_field (sif) INODE FIELD VALUE and set_super_value (ssv)
 * FIELD VALUE.  They write through libext2fs and nothing else: the
 * reference-count tree is NOT updated (setting block[N] or size leaves
 * the counts as they were); they exist to make hostile test images.
 *
 * The inode's checksum is recomputed on write unless the field set is
 * "checksum"; the superblock's is recomputed when it is written at
 * close, as stock debugfs does, unless the field set is "checksum"
 * (written at once, raw).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>
#include "debugfs.h"

enum sf_type { SF_UINT, SF_UUID, SF_STRING };

/* A field: its low part, and a high part (0 size: none). */
struct sfield {
	const char	*name;
	unsigned	off, size;
	unsigned	hi_off, hi_size;
	unsigned	count;		/* > 1: an array, FIELD[N] */
	enum sf_type	type;
};

#define IL	struct ext2_inode_large
#define SB	struct ext2_super_block
#define M(T, f)		offsetof(T, f), sizeof(((T *)0)->f)
#define F(n, T, f)	{ n, M(T, f), 0, 0, 1, SF_UINT }
#define F2(n, T, f, h)	{ n, M(T, f), M(T, h), 1, SF_UINT }

static const struct sfield inode_fields[] = {
	F("mode", IL, i_mode),
	F2("uid", IL, i_uid, osd2.linux2.l_i_uid_high),
	F2("size", IL, i_size, i_size_high),
	F("atime", IL, i_atime), F("ctime", IL, i_ctime),
	F("mtime", IL, i_mtime), F("dtime", IL, i_dtime),
	F2("gid", IL, i_gid, osd2.linux2.l_i_gid_high),
	F("links_count", IL, i_links_count),
	F2("blocks", IL, i_blocks, osd2.linux2.l_i_blocks_hi),
	F("flags", IL, i_flags),
	F2("version", IL, osd1.linux1.l_i_version, i_version_hi),
	{ "block", offsetof(IL, i_block), 4, 0, 0, EXT2_N_BLOCKS, SF_UINT },
	F("generation", IL, i_generation),
	F2("file_acl", IL, i_file_acl, osd2.linux2.l_i_file_acl_high),
	F2("checksum", IL, osd2.linux2.l_i_checksum_lo, i_checksum_hi),
	F("extra_isize", IL, i_extra_isize),
	F("ctime_extra", IL, i_ctime_extra), F("mtime_extra", IL, i_mtime_extra),
	F("atime_extra", IL, i_atime_extra), F("crtime", IL, i_crtime),
	F("crtime_extra", IL, i_crtime_extra),
	F("projid", IL, i_projid),
	{ NULL, 0, 0, 0, 0, 0, SF_UINT }
};

static const struct sfield super_fields[] = {
	F("inodes_count", SB, s_inodes_count),
	F2("blocks_count", SB, s_blocks_count, s_blocks_count_hi),
	F2("r_blocks_count", SB, s_r_blocks_count, s_r_blocks_count_hi),
	F2("free_blocks_count", SB, s_free_blocks_count, s_free_blocks_hi),
	F("free_inodes_count", SB, s_free_inodes_count),
	F("first_data_block", SB, s_first_data_block),
	F("log_block_size", SB, s_log_block_size),
	F("log_cluster_size", SB, s_log_cluster_size),
	F("blocks_per_group", SB, s_blocks_per_group),
	F("clusters_per_group", SB, s_clusters_per_group),
	F("inodes_per_group", SB, s_inodes_per_group),
	F("mtime", SB, s_mtime), F("wtime", SB, s_wtime),
	F("mnt_count", SB, s_mnt_count), F("max_mnt_count", SB, s_max_mnt_count),
	F("magic", SB, s_magic), F("state", SB, s_state),
	F("errors", SB, s_errors), F("minor_rev_level", SB, s_minor_rev_level),
	F("lastcheck", SB, s_lastcheck), F("checkinterval", SB, s_checkinterval),
	F("creator_os", SB, s_creator_os), F("rev_level", SB, s_rev_level),
	F("def_resuid", SB, s_def_resuid), F("def_resgid", SB, s_def_resgid),
	F("first_ino", SB, s_first_ino), F("inode_size", SB, s_inode_size),
	F("block_group_nr", SB, s_block_group_nr),
	F("feature_compat", SB, s_feature_compat),
	F("feature_incompat", SB, s_feature_incompat),
	F("feature_ro_compat", SB, s_feature_ro_compat),
	{ "uuid", M(SB, s_uuid), 0, 0, 1, SF_UUID },
	{ "volume_name", M(SB, s_volume_name), 0, 0, 1, SF_STRING },
	{ "last_mounted", M(SB, s_last_mounted), 0, 0, 1, SF_STRING },
	F("reserved_gdt_blocks", SB, s_reserved_gdt_blocks),
	{ "journal_uuid", M(SB, s_journal_uuid), 0, 0, 1, SF_UUID },
	F("journal_inum", SB, s_journal_inum), F("journal_dev", SB, s_journal_dev),
	F("last_orphan", SB, s_last_orphan),
	{ "hash_seed", M(SB, s_hash_seed), 0, 0, 1, SF_UUID },
	F("def_hash_version", SB, s_def_hash_version),
	F("jnl_backup_type", SB, s_jnl_backup_type),
	F("desc_size", SB, s_desc_size),
	F("default_mount_opts", SB, s_default_mount_opts),
	F("first_meta_bg", SB, s_first_meta_bg),
	F("mkfs_time", SB, s_mkfs_time),
	F("min_extra_isize", SB, s_min_extra_isize),
	F("want_extra_isize", SB, s_want_extra_isize),
	F("flags", SB, s_flags), F("raid_stride", SB, s_raid_stride),
	F("mmp_update_interval", SB, s_mmp_update_interval),
	F("mmp_block", SB, s_mmp_block),
	F("raid_stripe_width", SB, s_raid_stripe_width),
	F("log_groups_per_flex", SB, s_log_groups_per_flex),
	F("checksum_type", SB, s_checksum_type),
	F("kbytes_written", SB, s_kbytes_written),
	F("error_count", SB, s_error_count),
	F("first_error_time", SB, s_first_error_time),
	F("first_error_ino", SB, s_first_error_ino),
	F("first_error_block", SB, s_first_error_block),
	F("last_error_time", SB, s_last_error_time),
	F("last_error_ino", SB, s_last_error_ino),
	F("last_error_block", SB, s_last_error_block),
	F("usr_quota_inum", SB, s_usr_quota_inum),
	F("grp_quota_inum", SB, s_grp_quota_inum),
	F("prj_quota_inum", SB, s_prj_quota_inum),
	F("overhead_clusters", SB, s_overhead_clusters),
	F("lpf_ino", SB, s_lpf_ino),
	F("checksum_seed", SB, s_checksum_seed),
	F("encoding", SB, s_encoding),
	F("encoding_flags", SB, s_encoding_flags),
	F("orphan_file_inum", SB, s_orphan_file_inum),
	F("checksum", SB, s_checksum),
	{ NULL, 0, 0, 0, 0, 0, SF_UINT }
};

/* "i_mode", "mode", "block[3]" (prefix "i_" or "s_" optional). */
static const struct sfield *sf_find(const struct sfield *tab,
				    const char *prefix, const char *arg,
				    unsigned *index)
{
	size_t plen = strlen(prefix), n;
	const char *name = arg, *br;
	char *end;

	if (!strncmp(name, prefix, plen))
		name += plen;
	br = strchr(name, '[');
	n = br ? (size_t)(br - name) : strlen(name);
	*index = 0;
	for (; tab->name; tab++) {
		if (strlen(tab->name) != n || strncmp(tab->name, name, n))
			continue;
		if (!br)
			return tab->count > 1 ? NULL : tab;
		if (tab->count <= 1)
			return NULL;
		*index = strtoul(br + 1, &end, 0);
		if (end == br + 1 || strcmp(end, "]") || *index >= tab->count)
			return NULL;
		return tab;
	}
	return NULL;
}

static int sf_unknown(const struct cmd_args *a, const struct sfield *tab,
		      const char *arg)
{
	fflush(stdout);
	fprintf(stderr, "%s: invalid field specifier: %s; fields:", a->name,
		arg);
	for (; tab->name; tab++)
		fprintf(stderr, " %s%s", tab->name, tab->count > 1 ? "[N]" : "");
	fputc('\n', stderr);
	return 1;
}

static void put_le(unsigned char *p, unsigned size, __u64 v)
{
	unsigned i;

	for (i = 0; i < size; i++, v >>= 8)
		p[i] = v & 0xff;
}

/* Parse value for f and store it at base (on-disk little-endian). */
static int sf_set(const struct cmd_args *a, const struct sfield *f,
		  unsigned index, unsigned char *base, const char *value,
		  int with_hi)
{
	unsigned hi_size = with_hi ? f->hi_size : 0;
	unsigned bits = (f->size + hi_size) * 8;
	__u64 v;

	if (f->type == SF_UUID) {
		uuid_t u;

		if (!strcmp(value, "null") || !strcmp(value, "clear"))
			uuid_clear(u);
		else if (!strcmp(value, "random"))
			uuid_generate(u);
		else if (uuid_parse(value, u))
			return cmd_fail(a, "invalid UUID: %s", value);
		memcpy(base + f->off, u, 16);
		return 0;
	}
	if (f->type == SF_STRING) {
		if (strlen(value) > f->size)
			return cmd_fail(a, "%s: longer than %u bytes", value,
					f->size);
		memset(base + f->off, 0, f->size);
		memcpy(base + f->off, value, strlen(value));
		return 0;
	}
	if (parse_u64(value, &v))
		return cmd_fail(a, "invalid value: %s", value);
	if (bits < 64 && v >> bits)
		return cmd_fail(a, "value %s does not fit %s (%u bits)", value,
				f->name, bits);
	put_le(base + f->off + index * f->size, f->size, v);
	if (hi_size)
		put_le(base + f->hi_off, hi_size, v >> (f->size * 8));
	return 0;
}

/*
 * The fields are set in the in-memory (CPU order) structures; on a
 * little-endian host these are the disk bytes, which is what put_le
 * writes.  A big-endian host is refused rather than written wrongly.
 */
static int host_le(const struct cmd_args *a)
{
	const __u16 one = 1;

	if (*(const unsigned char *)&one != 1)
		return cmd_fail(a, "not supported on a big-endian host");
	return 0;
}

int impl_set_inode_field(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	const struct sfield *f;
	unsigned index;
	ext2_ino_t ino;
	errcode_t err;
	int flags = 0;
	unsigned isize = EXT2_INODE_SIZE(sh.fs->super);

	if (host_le(a) || resolve_path(a, a->argv[0], &ino))
		return 1;
	f = sf_find(inode_fields, "i_", a->argv[1], &index);
	if (!f)
		return sf_unknown(a, inode_fields, a->argv[1]);
	memset(&inode, 0, sizeof(inode));
	/* The inode may already be damaged: read it whatever its checksum. */
	err = ext2fs_read_inode2(sh.fs, ino, (struct ext2_inode *)&inode,
				 sizeof(inode), READ_INODE_NOCSUM);
	if (err)
		return cmd_err(a, err, "reading inode %u", ino);
	if (f->off + f->size > isize)
		return cmd_fail(a, "%s: past the inode size (%u bytes)",
				f->name, isize);
	/* A high half past a small inode: the low half alone is set. */
	if (sf_set(a, f, index, (unsigned char *)&inode, a->argv[2],
		   f->hi_size && f->hi_off + f->hi_size <= isize))
		return 1;
	if (!strcmp(f->name, "checksum"))
		flags = WRITE_INODE_NOCSUM;
	err = ext2fs_write_inode2(sh.fs, ino, (struct ext2_inode *)&inode,
				  sizeof(inode), flags);
	if (err)
		return cmd_err(a, err, "writing inode %u", ino);
	return 0;
}

static int write_super_raw(const struct cmd_args *a)
{
	unsigned bs = sh.fs->blocksize;
	blk64_t blk = SUPERBLOCK_OFFSET / bs;
	char *buf = malloc(bs);
	errcode_t err;

	if (!buf)
		return cmd_fail(a, "out of memory");
	err = io_channel_read_blk64(sh.fs->io, blk, 1, buf);
	if (!err) {
		memcpy(buf + SUPERBLOCK_OFFSET % bs, sh.fs->super,
		       SUPERBLOCK_SIZE);
		err = io_channel_write_blk64(sh.fs->io, blk, 1, buf);
	}
	free(buf);
	if (err)
		return cmd_err(a, err, "writing the superblock");
	return 0;
}

int impl_set_super_value(struct cmd_args *a)
{
	struct ext2_super_block *sb = sh.fs->super;
	const struct sfield *f;
	unsigned index;

	if (host_le(a))
		return 1;
	f = sf_find(super_fields, "s_", a->argv[0], &index);
	if (!f)
		return sf_unknown(a, super_fields, a->argv[0]);
	if (sh.xfs)	/* best effort, as for a raw write */
		(void)extref_fs_raw_edit(sh.xfs);
	if (sf_set(a, f, index, (unsigned char *)sb, a->argv[1], 1))
		return 1;
	if (strcmp(f->name, "checksum")) {
		ext2fs_mark_super_dirty(sh.fs);	/* checksummed at close */
		return 0;
	}
	/* The checksum as given: the primary superblock written now, in
	 * the block of the I/O channel's size that holds it. */
	return write_super_raw(a);
}
