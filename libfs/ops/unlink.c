/*
 * unlink.c --- remove a name; when the last link goes, every mapping
 * leaves through the counts before the inode is freed.
 */
#include <string.h>
#include "extref_ops_int.h"
#include "txn/xr_zone.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

static int count_entry(struct ext2_dir_entry *d, int offset, int bs,
		       char *buf, void *priv)
{
	int *n = priv;
	int len = ext2fs_dirent_name_len(d);

	(void) offset; (void) bs; (void) buf;
	if (d->inode && !(len == 1 && d->name[0] == '.') &&
	    !(len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		(*n)++;
	return 0;
}

static errcode_t dir_is_empty(ext2_filsys fs, ext2_ino_t dir)
{
	int n = 0;
	errcode_t err = ext2fs_dir_iterate(fs, dir, 0, NULL, count_entry, &n);

	return err ? err : (n ? EXTREF_ERR_DIR_NOT_EMPTY : 0);
}

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

/* The inode has no name left: release its blocks, then free it. */
static errcode_t free_inode(extref_fs_t xfs, ext2_ino_t ino,
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

/* A directory loses its ".." link to the parent. */
static errcode_t parent_unlinked(ext2_filsys fs, ext2_ino_t dir)
{
	struct ext2_inode p;
	errcode_t err = ext2fs_read_inode(fs, dir, &p);

	if (err)
		return err;
	if (p.i_links_count > 2)	/* 1 means "many" with dir_nlink */
		p.i_links_count--;
	return xr_write_inode_times(fs, dir, &p, XR_TIME_MTIME);
}

static errcode_t unlink_op(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			int flags)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode inode;
	ext2_ino_t ino;
	int isdir;
	errcode_t err;

	err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = xr_perm_parent(xfs, dir);
	if (!err)
		err = xr_lookup(fs, dir, name, &ino);
	if (!err)
		err = xr_may_delete(xfs, dir, ino);
	if (!err)
		err = extref_check_modifiable(xfs, ino);
	if (!err)
		err = xr_read_inode(fs, ino, &inode);
	if (err)
		return err;
	isdir = LINUX_S_ISDIR(inode.i_mode);
	if (isdir && !(flags & EXTREF_UNLINK_DIR))
		return EXTREF_ERR_IS_DIR;
	if (!isdir && (flags & EXTREF_UNLINK_DIR))
		return EXTREF_ERR_NOT_DIR;
	if (isdir && (err = dir_is_empty(fs, ino)))
		return err;
	/* The mappings to remove must be readable before the name goes. */
	if ((isdir || inode.i_links_count <= 1) &&
	    !ext2fs_is_fast_symlink(&inode) &&
	    !(inode.i_flags & EXT4_INLINE_DATA_FL) &&
	    (err = xr_extent_tree_verify(fs, ino, &inode, NULL)))
		return err;
	err = xr_unlink_name(fs, dir, name, ino);
	if (!err && isdir)
		err = parent_unlinked(fs, dir);
	if (err)
		return xr_quota_end(xfs, err);
	if (!isdir && inode.i_links_count > 1) {
		inode.i_links_count--;
		return xr_quota_end(xfs, xr_write_inode_times(fs, ino, &inode,
							      XR_TIME_CTIME));
	}
	return xr_quota_end(xfs, free_inode(xfs, ino, &inode));
}

/* One transaction (txn.c). */
errcode_t extref_unlink(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			int flags)
{
	ext2_ino_t inos[2] = { 0, dir };	/* the file, then its directory */
	errcode_t err;

	xr_damage_clear(xfs);
	/* looked up first: inside a caller's batch the name stays gone
	 * until the batch rolls back */
	(void)xr_lookup(extref_fs_ext2(xfs), dir, name, &inos[0]);
	err = xr_tx_begin(xfs);
	if (err)
		return err;
	err = xr_tx_end(xfs, unlink_op(xfs, dir, name, flags));
	return xr_damage_result(xfs, inos, 2, err);
}
