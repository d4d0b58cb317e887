/*
 * shrink_renum.c --- what names an inode by its number, followed when
 * --shrink's new inode-table layout (shrink_itable.c) renumbers inodes.
 *
 * An ext4 filesystem names inodes by number in directory entries ("."
 * and ".." included, inline directories too), in the superblock (lost+
 * found, the quota inodes, the inodes of the first and last errors; the
 * journal's is reserved, and reserved numbers never move), and in
 * checksums: an inode's, its extent blocks' and its directory blocks'
 * are seeded with its number.
 * The reference-count tree names blocks only.  So, once every inode is
 * in its new slot:
 *
 *   - the extent blocks of every moved inode get checksums for its new
 *     number (libext2fs's ext2fs_fix_extents_checksums);
 *   - every directory's entries are mapped to the new numbers, and a
 *     block is written again when an entry changed or, with
 *     metadata_csum, when the directory itself moved (its checksum);
 *   - the superblock's fields follow.
 *
 * What this cannot follow fails the step before anything is written
 * (shrink_renum_check), and the image is cut with its own inodes per
 * group: extended attributes stored in inodes (ea_inode: entries name
 * them), an orphan list (a chain of numbers through the inodes), a
 * snapshot, and an orphan file that would move (its blocks' checksums
 * are seeded with its number).  stable_inodes (encryption keys tied to
 * inode numbers) is refused before the conversion: resize2fs will not
 * shrink such a filesystem either.
 */
#include <stdlib.h>

#include "extref.h"
#include "mkfs.h"
#include "shrink_int.h"

static int by_old(const void *a, const void *b)
{
	ext2_ino_t x = *(const ext2_ino_t *)a, y = *(const ext2_ino_t *)b;

	return x < y ? -1 : x > y;
}

/* The new number of old (old itself when it is not in use). */
static ext2_ino_t map_ino(const struct relayout *r, ext2_ino_t old)
{
	const ext2_ino_t *p = bsearch(&old, r->old, r->n, sizeof(*r->old),
				      by_old);

	return p ? r->new[p - r->old] : old;
}

errcode_t shrink_renum_check(ext2_filsys fs, const struct relayout *r)
{
	struct ext2_super_block *sb = fs->super;

	if (ext2fs_has_feature_ea_inode(sb) ||
	    ext2fs_has_feature_stable_inodes(sb) || sb->s_last_orphan ||
	    sb->s_snapshot_inum ||
	    (sb->s_orphan_file_inum &&
	     map_ino(r, sb->s_orphan_file_inum) != sb->s_orphan_file_inum))
		return EXTREF_ERR_INODE_NUMBERS;
	return 0;
}

struct dir_ctx {
	const struct relayout	*r;
	int			rewrite;	/* every block (checksums) */
};

static int map_entry(ext2_ino_t dir EXT2FS_ATTR((unused)),
		     int entry EXT2FS_ATTR((unused)),
		     struct ext2_dir_entry *de, int offset EXT2FS_ATTR((unused)),
		     int blocksize EXT2FS_ATTR((unused)),
		     char *buf EXT2FS_ATTR((unused)), void *priv)
{
	struct dir_ctx *c = priv;
	ext2_ino_t to;

	if (!de->inode)
		return c->rewrite ? DIRENT_CHANGED : 0;
	to = map_ino(c->r, de->inode);
	if (to == de->inode)
		return c->rewrite ? DIRENT_CHANGED : 0;
	de->inode = to;
	return DIRENT_CHANGED;
}

static errcode_t map_dir(const struct relayout *r, size_t i)
{
	struct dir_ctx c = { r, 0 };
	errcode_t err;

	c.rewrite = r->new[i] != r->old[i] &&
		    ext2fs_has_feature_metadata_csum(r->fs->super);
	/* (an inline directory is walked too: libext2fs does it when
	 * the blocks cannot be) */
	err = ext2fs_dir_iterate2(r->fs, r->new[i], DIRENT_FLAG_INCLUDE_EMPTY,
				  NULL, map_entry, &c);
	return err ? err : shrink_tick();
}

static void map_super(const struct relayout *r)
{
	struct ext2_super_block *sb = r->fs->super;

	if (sb->s_lpf_ino)
		sb->s_lpf_ino = map_ino(r, sb->s_lpf_ino);
	if (sb->s_prj_quota_inum)
		sb->s_prj_quota_inum = map_ino(r, sb->s_prj_quota_inum);
	if (sb->s_usr_quota_inum)
		sb->s_usr_quota_inum = map_ino(r, sb->s_usr_quota_inum);
	if (sb->s_grp_quota_inum)
		sb->s_grp_quota_inum = map_ino(r, sb->s_grp_quota_inum);
	if (sb->s_first_error_ino)
		sb->s_first_error_ino = map_ino(r, sb->s_first_error_ino);
	if (sb->s_last_error_ino)
		sb->s_last_error_ino = map_ino(r, sb->s_last_error_ino);
}

errcode_t shrink_renum(struct relayout *r)
{
	ext2_filsys fs = r->fs;
	__u32 isz = EXT2_INODE_SIZE(fs->super);
	int flags = fs->flags;
	errcode_t err = 0;
	size_t i;

	if (!r->moved)
		return 0;
	/* the blocks still carry checksums for the old numbers */
	fs->flags |= EXT2_FLAG_IGNORE_CSUM_ERRORS;
	for (i = 0; i < r->n && !err; i++) {
		struct ext2_inode *in = (struct ext2_inode *)(r->bytes + i * isz);

		if (r->new[i] != r->old[i] && in->i_links_count)
			err = ext2fs_fix_extents_checksums(fs, r->new[i], in);
	}
	for (i = 0; i < r->n && !err; i++) {
		struct ext2_inode *in = (struct ext2_inode *)(r->bytes + i * isz);

		if (LINUX_S_ISDIR(in->i_mode) && in->i_links_count)
			err = map_dir(r, i);
	}
	fs->flags = flags;
	if (!err)
		map_super(r);
	return err;
}
