/*
 * populate_replace.c --- an archive names a non-directory again (tar -r
 * appends, tar -u updates): the later entry replaces it, as unpacking
 * the archive would.  The name is unlinked; its inode loses a link and,
 * with its last one, its blocks (with dedupe, those no other file
 * maps), its attribute block and itself.  Other names of the inode, hard
 * links made earlier, keep it.  A later layer removes directories too
 * (xr_pop_remove_dir, once emptied).
 */
#include "populate_int.h"

static errcode_t free_inode(struct xr_pop *p, ext2_ino_t ino,
			    struct ext2_inode *in)
{
	ext2_filsys fs = p->fs;
	errcode_t err = 0;

	in->i_links_count = 0;
	in->i_dtime = xr_now(fs);
	/* with block dedupe, a block another file maps stays */
	if (p->dd && LINUX_S_ISREG(in->i_mode) &&
	    !(in->i_flags & EXT4_INLINE_DATA_FL))
		err = xr_pop_dd_punch(p, ino, in);
	else if (p->fdd && LINUX_S_ISREG(in->i_mode) &&
		 !(in->i_flags & EXT4_INLINE_DATA_FL))
		err = xr_pop_fdd_punch(p, ino, in);
	else if (!ext2fs_is_fast_symlink(in) &&
	    !(in->i_flags & EXT4_INLINE_DATA_FL) &&
	    ext2fs_inode_has_valid_blocks2(fs, in))
		err = ext2fs_punch(fs, ino, in, NULL, 0, ~0ULL);
	if (!err)
		err = xr_drop_xattr_block(fs, ino, in);
	if (!err)
		err = ext2fs_write_inode(fs, ino, in);
	if (!err)
		ext2fs_inode_alloc_stats2(fs, ino, -1,
					  LINUX_S_ISDIR(in->i_mode));
	return err;
}

errcode_t xr_pop_remove(struct xr_pop *p, ext2_ino_t dir, const char *name,
			ext2_ino_t ino)
{
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(p->fs, ino, &in);

	if (!err && LINUX_S_ISDIR(in.i_mode))
		err = EXTREF_ERR_SOURCE_DUP;
	if (!err)
		err = xr_unlink_name(p->fs, dir, name, ino);
	if (err)
		return err;
	if (in.i_links_count > 1) {
		in.i_links_count--;
		return ext2fs_write_inode(p->fs, ino, &in);
	}
	p->req->inodes--;
	return free_inode(p, ino, &in);
}

errcode_t xr_pop_remove_dir(struct xr_pop *p, ext2_ino_t dir,
			    const char *name, ext2_ino_t ino)
{
	struct ext2_inode in, parent;
	errcode_t err = ext2fs_read_inode(p->fs, ino, &in);

	if (!err && !LINUX_S_ISDIR(in.i_mode))
		err = EXT2_ET_NO_DIRECTORY;
	if (!err)
		err = xr_unlink_name(p->fs, dir, name, ino);
	if (!err)
		err = ext2fs_read_inode(p->fs, dir, &parent);
	if (err)
		return err;
	if (parent.i_links_count > 2)	/* 1 means "many" with dir_nlink */
		parent.i_links_count--;
	err = ext2fs_write_inode(p->fs, dir, &parent);
	if (err)
		return err;
	p->req->inodes--;
	return free_inode(p, ino, &in);
}
