/*
 * project.c --- project ids of new inodes.
 *
 * As the kernel's __ext4_new_inode: a new inode in a directory that has
 * the PROJINHERIT flag takes the directory's project id, and a new
 * directory there takes the flag too; elsewhere a new inode's project
 * id is 0.  Only with the project feature and inodes large enough to
 * hold i_projid.  A preserve-mode reflink then copies its source's id
 * over it (reflink_meta.c): a snapshot keeps its project.
 */
#include <stddef.h>
#include "extref_ops_int.h"

static int holds_projid(ext2_filsys fs, const struct ext2_inode_large *in)
{
	return EXT2_INODE_SIZE(fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	       (size_t)EXT2_GOOD_OLD_INODE_SIZE + in->i_extra_isize >=
	       offsetof(struct ext2_inode_large, i_projid) +
	       sizeof(in->i_projid);
}

static errcode_t read_large(ext2_filsys fs, ext2_ino_t ino,
			    struct ext2_inode_large *in)
{
	memset(in, 0, sizeof(*in));
	return ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)in,
				      sizeof(*in));
}

/* The project id a new inode in DIR gets (0 unless DIR passes its own). */
errcode_t xr_inherited_projid(ext2_filsys fs, ext2_ino_t dir, __u32 *projid)
{
	struct ext2_inode_large d;
	errcode_t err;

	*projid = 0;
	if (!ext2fs_has_feature_project(fs->super))
		return 0;
	err = read_large(fs, dir, &d);
	if (!err && (d.i_flags & EXT4_PROJINHERIT_FL) && holds_projid(fs, &d))
		*projid = d.i_projid;
	return err;
}

/* Give the new inode INO in DIR its inherited project id (and flag). */
errcode_t xr_inherit_project(ext2_filsys fs, ext2_ino_t dir, ext2_ino_t ino)
{
	struct ext2_inode_large in;
	__u32 projid;
	errcode_t err = xr_inherited_projid(fs, dir, &projid);

	if (err || !projid)
		return err;
	err = read_large(fs, ino, &in);
	if (err || !holds_projid(fs, &in))
		return err;
	in.i_projid = projid;
	if (LINUX_S_ISDIR(in.i_mode))
		in.i_flags |= EXT4_PROJINHERIT_FL;
	return ext2fs_write_inode_full(fs, ino, (struct ext2_inode *)&in,
				       sizeof(in));
}
