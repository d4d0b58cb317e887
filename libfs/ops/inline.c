/*
 * inline.c --- turn an inline-data file into an extent-mapped one, so
 * that writes, clones and truncates treat every regular file alike.
 */
#include <string.h>
#include "extref_ops_int.h"

static errcode_t drop_system_data(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_xattr_handle *h;
	errcode_t err = ext2fs_xattrs_open(fs, ino, &h);

	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_remove(h, "system.data");
	if (!err)
		err = ext2fs_xattrs_write(h);
	ext2fs_xattrs_close(&h);
	return err;
}

errcode_t xr_inline_to_extents(extref_fs_t xfs, ext2_ino_t ino,
			       struct ext2_inode *inode)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	ext2_extent_handle_t h;
	size_t size = 0;
	char *data = NULL;
	errcode_t err;

	err = ext2fs_inline_data_size(fs, ino, &size);
	if (!err)
		err = ext2fs_get_memzero(size + 1, &data);
	if (!err)
		err = ext2fs_inline_data_get(fs, ino, inode, data, &size);
	if (!err)
		err = drop_system_data(fs, ino);
	if (!err)
		err = ext2fs_read_inode(fs, ino, inode);
	if (err)
		goto out;
	inode->i_flags &= ~EXT4_INLINE_DATA_FL;
	memset(inode->i_block, 0, sizeof(inode->i_block));
	err = ext2fs_extent_open2(fs, ino, inode, &h);
	if (err)
		goto out;
	ext2fs_extent_free(h);
	err = ext2fs_write_inode(fs, ino, inode);
	/* The inline area may be larger than the file. */
	if (size > EXT2_I_SIZE(inode))
		size = EXT2_I_SIZE(inode);
	if (!err)
		err = xr_cow_range(xfs, ino, inode, 0, data, size,
				   XR_COW_WRITE);
out:
	ext2fs_free_mem(&data);
	return err;
}
