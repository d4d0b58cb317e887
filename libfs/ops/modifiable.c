/*
 * modifiable.c --- what every modifying operation checks first.
 */
#include "extref_ops_int.h"
#include "tree/extref_int.h"
#include "quota/xr_quota.h"

#ifndef EXT4_VERITY_FL
#define EXT4_VERITY_FL		0x00100000
#endif
#ifndef EXT4_CASEFOLD_FL
#define EXT4_CASEFOLD_FL	0x40000000
#endif

/*
 * The image can be changed: writable, tree loaded (quota files are kept
 * by quota/charge.c).  Every
 * node of the tree is read and checked now, before the operation's
 * first write: a count change that met a corrupt node half-way would
 * stop after the files were already changed.  Not when the open's
 * verification still holds (xr_fs_verified): it read every node.
 */
errcode_t xr_op_begin(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	if (!extref_fs_tree(xfs))
		return EXTREF_ERR_NO_TREE;
	err = xr_fs_verified(xfs) ? extref_fs_tree(xfs)->broken :
				    xr_tree_read_all(extref_fs_tree(xfs));
	if (!err && !fs->block_map)
		err = ext2fs_read_bitmaps(fs);
	if (!err)
		err = xr_quota_verify(xfs);
	return err;
}

errcode_t extref_check_modifiable(extref_fs_t xfs, ext2_ino_t ino)
{
	struct ext2_inode inode;
	errcode_t err;

	err = xr_op_begin(xfs);
	if (err || ino == 0)
		return err;
	/* the project quota file is written in place: never shared */
	if (ino == extref_fs_ext2(xfs)->super->s_prj_quota_inum)
		return EXT2_ET_BAD_INODE_NUM;
	err = xr_read_inode(extref_fs_ext2(xfs), ino, &inode);
	if (err)
		return err;
	if (inode.i_flags & (EXT4_ENCRYPT_FL | EXT4_VERITY_FL |
			     EXT4_CASEFOLD_FL))
		return EXTREF_ERR_INODE_UNSUPPORTED;
	return 0;
}

/*
 * A regular file that may be changed, read into inode; nothing written
 * (the checks an operation makes before its refusals).
 */
errcode_t xr_check_reg(extref_fs_t xfs, ext2_ino_t ino,
		       struct ext2_inode *inode)
{
	errcode_t err = extref_check_modifiable(xfs, ino);

	if (!err)
		err = xr_read_inode(extref_fs_ext2(xfs), ino, inode);
	if (err)
		return err;
	if (!LINUX_S_ISREG(inode->i_mode))
		return LINUX_S_ISDIR(inode->i_mode) ? EXTREF_ERR_IS_DIR :
			EXTREF_ERR_NOT_REG;
	return 0;
}

/*
 * A regular, extent-mapped file that may be changed, its extent tree
 * checked whole (extent_node.c) before the caller writes anything, unless
 * the open's check of every extent tree still holds (xr_fs_verified).  An
 * inline-data file becomes extent-mapped here (a write): callers make
 * their refusals first, after xr_check_reg.
 */
errcode_t xr_open_reg(extref_fs_t xfs, ext2_ino_t ino,
		      struct ext2_inode *inode)
{
	errcode_t err = xr_check_reg(xfs, ino, inode);

	if (err)
		return err;
	if (inode->i_flags & EXT4_INLINE_DATA_FL)
		err = xr_inline_to_extents(xfs, ino, inode);
	if (err)
		return err;
	if (!(inode->i_flags & EXT4_EXTENTS_FL))
		return EXT2_ET_INODE_NOT_EXTENT;
	if (xr_fs_verified(xfs))
		return 0;
	return xr_extent_tree_verify(extref_fs_ext2(xfs), ino, inode, NULL);
}
