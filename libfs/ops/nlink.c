/*
 * nlink.c --- link counts: a name's link dropped (the inode freed with
 * its last one, every mapping leaving through the counts first), a
 * directory's count raised or lowered as ext4 counts subdirectories,
 * and the external attribute block an inode lets go of.  unlink.c and
 * rename.c drop a name; rename.c and link.c raise counts.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "txn/xr_zone.h"
#include "txn/xr_txio.h"

/* ext4's largest link count (EXT4_LINK_MAX). */
#define XR_LINK_MAX	65000

/*
 * Drop an inode's reference on its external xattr block (shared or its
 * own) and free the block with the last one: unlink, and the undo of a
 * failed reflink.
 */
errcode_t xr_drop_xattr_block(ext2_filsys fs, ext2_ino_t ino,
			      struct ext2_inode *inode)
{
	blk64_t blk = ext2fs_file_acl_block(fs, inode);
	__u32 count;
	errcode_t err;

	if (!blk)
		return 0;
	err = ext2fs_adjust_ea_refcount3(fs, blk, NULL, -1, &count, ino);
	if (err)
		return err;
	if (count == 0 && (err = xr_zone_check_free(fs, blk, 1)))
		return err;
	if (count == 0)
		ext2fs_block_alloc_stats2(fs, blk, -1);
	ext2fs_file_acl_block_set(fs, inode, 0);
	return ext2fs_iblk_sub_blocks(fs, inode, 1);
}

/* The inode has no name left: release its blocks, then free it (and
 * orphan.c's release of an inode kept). */
errcode_t xr_free_inode(extref_fs_t xfs, ext2_ino_t ino,
			    struct ext2_inode *inode)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_prange_vec removed = { 0 };
	errcode_t err = 0;

	inode->i_links_count = 0;
	inode->i_dtime = xr_now(fs);
	if (ext2fs_is_fast_symlink(inode) ||
	    (inode->i_flags & EXT4_INLINE_DATA_FL))
		;	/* no blocks: data lives in the inode */
	else if (inode->i_flags & EXT4_EXTENTS_FL)
		err = xr_unmap(fs, ino, inode, 0, 1ULL << 32, &removed);
	else if (ext2fs_inode_has_valid_blocks2(fs, inode))
		err = ext2fs_punch(fs, ino, inode, NULL, 0, ~0ULL);
	if (!err)
		err = xr_drop_xattr_block(fs, ino, inode);
	if (!err)
		err = ext2fs_write_inode(fs, ino, inode);
	if (!err)
		err = xr_release_ranges(xfs, &removed);
	if (!err) {
		ext2fs_inode_alloc_stats2(fs, ino, -1,
					  LINUX_S_ISDIR(inode->i_mode));
		xr_tx_note_inode(fs, ino);
	}
	xr_prange_vec_free(&removed);
	return err;
}

/*
 * Before a name of inode goes (nothing written yet): when it is the
 * last (or a directory's), the mappings to release must be readable.
 */
errcode_t xr_drop_check(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode)
{
	if (!LINUX_S_ISDIR(inode->i_mode) && inode->i_links_count > 1)
		return 0;
	if (ext2fs_is_fast_symlink(inode) ||
	    (inode->i_flags & EXT4_INLINE_DATA_FL))
		return 0;
	return xr_extent_tree_verify(fs, ino, inode, NULL);
}

/*
 * A name of inode is gone: a directory (empty, its one name) or the last
 * link of a file is freed, or with keep (a file still open) put on the
 * orphan list (orphan_list.c) to be released at its last close; another
 * link just lowers the count, the change time set.
 */
errcode_t xr_drop_link(extref_fs_t xfs, ext2_ino_t ino,
		       struct ext2_inode *inode, int keep)
{
	if (!LINUX_S_ISDIR(inode->i_mode) && inode->i_links_count > 1) {
		inode->i_links_count--;
		return xr_write_inode_times(extref_fs_ext2(xfs), ino, inode,
					    XR_TIME_CTIME);
	}
	if (keep && !LINUX_S_ISDIR(inode->i_mode))
		return xr_orphan_add(extref_fs_ext2(xfs), ino, inode);
	return xr_free_inode(xfs, ino, inode);
}

static int is_indexed(ext2_filsys fs, const struct ext2_inode *d)
{
	return ext2fs_has_feature_dir_index(fs->super) &&
	       (d->i_flags & EXT2_INDEX_FL);
}

/*
 * DIR may take one more subdirectory (ext4's EXT4_DIR_LINK_MAX: a
 * directory without an index stops at 65000 links; an indexed one
 * counts as "many", 1, from there with dir_nlink).
 */
errcode_t xr_dir_may_grow(ext2_filsys fs, ext2_ino_t dir)
{
	struct ext2_inode d;
	errcode_t err = ext2fs_read_inode(fs, dir, &d);

	if (err)
		return err;
	if (d.i_links_count >= XR_LINK_MAX &&
	    (!is_indexed(fs, &d) || !ext2fs_has_feature_dir_nlink(fs->super)))
		return EXTREF_ERR_MLINK;
	return 0;
}

/* d's link count moved by delta subdirectories (-1, 0, +1) as ext4's
 * ext4_inc_count / ext4_dec_count do (a count of 1 means "many" and
 * stays; a count never drops below 2). */
static void count_subdirs(struct ext2_inode *d, int delta)
{
	if (delta < 0 && d->i_links_count > 2)
		d->i_links_count--;
	if (delta > 0 && d->i_links_count != 1) {
		if (d->i_links_count + 1U > XR_LINK_MAX)
			d->i_links_count = 1;
		else
			d->i_links_count++;
	}
}

/*
 * DIR's entries changed: its change and modification times set to now,
 * its link count moved by delta subdirectories (count_subdirs).
 */
errcode_t xr_dir_changed(ext2_filsys fs, ext2_ino_t dir, int delta)
{
	struct ext2_inode d;
	errcode_t err = ext2fs_read_inode(fs, dir, &d);

	if (err)
		return err;
	count_subdirs(&d, delta);
	return xr_write_inode_times(fs, dir, &d, XR_TIME_MTIME);
}

/* The same with DIR's times as they were (EXTREF_UNLINK_KEEP_TIMES). */
errcode_t xr_dir_count(ext2_filsys fs, ext2_ino_t dir, int delta)
{
	struct ext2_inode d;
	errcode_t err;

	if (!delta)
		return 0;
	err = ext2fs_read_inode(fs, dir, &d);
	if (err)
		return err;
	count_subdirs(&d, delta);
	return ext2fs_write_inode(fs, dir, &d);
}

/* The inode may take one more name (ext4_link's EMLINK). */
errcode_t xr_may_link(const struct ext2_inode *inode)
{
	return inode->i_links_count >= XR_LINK_MAX ? EXTREF_ERR_MLINK : 0;
}
