/*
 * format.c --- make an empty tree in inode 5 of an ext4 filesystem.
 */
#include <string.h>
#include <time.h>
#include "extref_int.h"

/* Inode 5 may be taken only if nothing lives there. */
errcode_t xr_ino5_is_empty(ext2_filsys fs)
{
	struct ext2_inode inode;
	errcode_t err;

	err = ext2fs_read_inode(fs, EXTREF_INO, &inode);
	if (err)
		return err;
	if (ext2fs_get_stat_i_blocks(fs, &inode) != 0 ||
	    EXT2_I_SIZE(&inode) != 0)
		return EXTREF_ERR_INO5_BUSY;
	return 0;
}

/* A regular file with an empty extent tree, owned by root, mode 0600. */
static errcode_t make_ino5(ext2_filsys fs)
{
	struct ext2_inode inode;
	ext2_extent_handle_t handle;
	time_t now = fs->now ? fs->now : time(NULL);
	errcode_t err;

	memset(&inode, 0, sizeof(inode));
	inode.i_mode = LINUX_S_IFREG | 0600;
	inode.i_links_count = 1;
	inode.i_atime = inode.i_ctime = inode.i_mtime = now;
	err = ext2fs_extent_open2(fs, EXTREF_INO, &inode, &handle);
	if (err)
		return err;
	ext2fs_extent_free(handle);
	return ext2fs_write_new_inode(fs, EXTREF_INO, &inode);
}

static errcode_t write_empty_tree(ext2_filsys fs)
{
	struct extref_tree *t;
	errcode_t err;
	__u32 lblk;

	err = xr_tree_init(fs, EXTREF_TREE_RW, &t);
	if (err)
		return err;
	memset(&t->hdr, 0, sizeof(t->hdr));
	t->hdr.h_magic = EXTREF_HDR_MAGIC;
	t->hdr.h_version = EXTREF_VERSION;
	t->hdr.h_blocksize = fs->blocksize;
	memcpy(t->hdr.h_uuid, fs->super->s_uuid, sizeof(t->hdr.h_uuid));
	t->generation = 1;
	err = xr_lblk_alloc(t, &lblk);		/* lblk 0: the header */
	if (!err)
		err = xr_write_header(t, 1);
	extref_tree_free(t);
	return err;
}

/*
 * Give the filesystem an empty tree.  The feature goes on first: a crash
 * then leaves "feature set, tree missing", which fsck.extref repairs.
 */
errcode_t extref_format(ext2_filsys fs)
{
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = xr_ino5_is_empty(fs);
	if (!err && !fs->block_map)
		err = ext2fs_read_bitmaps(fs);
	if (err)
		return err;
	ext2fs_set_feature_shared_blocks(fs->super);
	ext2fs_mark_super_dirty(fs);
	/* The backup superblocks must carry the feature too (e2fsck falls
	 * back on them); libext2fs writes only the primary by default. */
	fs->flags &= ~EXT2_FLAG_MASTER_SB_ONLY;
	err = make_ino5(fs);
	if (!err)
		err = write_empty_tree(fs);
	return err;
}
