/*
 * inode.c --- one inode as the operations read and fill it: an in-use
 * inode read, its owner set, its directory-entry file type, a size in
 * blocks.
 */
#include "extref_ops_int.h"

/* Read an in-use inode (one kept on the orphan list, open but without a
 * name, too); a free inode number is an error. */
errcode_t xr_read_inode(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode)
{
	errcode_t err;

	if (ino < EXT2_FIRST_INO(fs->super) && ino != EXT2_ROOT_INO)
		return EXT2_ET_BAD_INODE_NUM;
	err = ext2fs_read_inode(fs, ino, inode);
	if (!err && (inode->i_links_count == 0 || inode->i_dtime) &&
	    !(inode->i_links_count == 0 && inode->i_mode &&
	      xr_orphan_on_list(fs, ino)))
		err = EXT2_ET_FILE_NOT_FOUND;
	return err;
}

blk64_t xr_size_blocks(ext2_filsys fs, __u64 size)
{
	return (size + fs->blocksize - 1) / fs->blocksize;
}

void xr_set_owner(struct ext2_inode *inode, __u32 uid, __u32 gid)
{
	inode->i_uid = uid & 0xffff;
	ext2fs_set_i_uid_high(*inode, uid >> 16);
	inode->i_gid = gid & 0xffff;
	ext2fs_set_i_gid_high(*inode, gid >> 16);
}

/* The directory-entry file type of an inode mode. */
int xr_file_type(__u16 mode)
{
	if (LINUX_S_ISREG(mode))
		return EXT2_FT_REG_FILE;
	if (LINUX_S_ISDIR(mode))
		return EXT2_FT_DIR;
	if (LINUX_S_ISCHR(mode))
		return EXT2_FT_CHRDEV;
	if (LINUX_S_ISBLK(mode))
		return EXT2_FT_BLKDEV;
	if (LINUX_S_ISLNK(mode))
		return EXT2_FT_SYMLINK;
	if (LINUX_S_ISFIFO(mode))
		return EXT2_FT_FIFO;
	if (LINUX_S_ISSOCK(mode))
		return EXT2_FT_SOCK;
	return EXT2_FT_UNKNOWN;
}
