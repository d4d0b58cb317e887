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

/* An inode's project id, 0 when it holds none. */
static errcode_t projid_of(ext2_filsys fs, ext2_ino_t ino,
			   struct ext2_inode_large *in, __u32 *projid)
{
	errcode_t err = read_large(fs, ino, in);

	*projid = !err && holds_projid(fs, in) ? in->i_projid : 0;
	return err;
}

/*
 * ino may take a name in DIR: not when DIR passes its project on
 * (PROJINHERIT) and ino's is another (EXTREF_ERR_XDEV, as ext4_link and
 * ext4_rename refuse it: a tree quota would be evaded).
 */
errcode_t xr_project_check(ext2_filsys fs, ext2_ino_t dir, ext2_ino_t ino)
{
	struct ext2_inode_large d, in;
	__u32 dp, ip;
	errcode_t err;

	if (!ext2fs_has_feature_project(fs->super))
		return 0;
	err = projid_of(fs, dir, &d, &dp);
	if (!err && (d.i_flags & EXT4_PROJINHERIT_FL))
		err = projid_of(fs, ino, &in, &ip);
	else
		return err;
	return err ? err : dp != ip ? EXTREF_ERR_XDEV : 0;
}
