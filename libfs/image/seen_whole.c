/*
 * seen_whole.c --- whether a file holds a change time of whole seconds
 * in a given second (FORMAT.md section 11, "Foreign writers"): what a
 * close that vouches for files it did not stamp itself (an image it
 * made or adopted, one it accepted after a foreign write, a first
 * record, a build's copied times) looks at before it records that a
 * whole-second ctime in its second is another tool's.
 */
#include <stddef.h>
#include "xr_seen.h"

/* An in-use regular file whose large inode says ctime is sec.0. */
static int whole_in(const struct ext2_inode_large *in, int isz, __u64 sec)
{
	__s64 s = (__s32)in->i_ctime;

	if (!in->i_links_count || in->i_dtime || !LINUX_S_ISREG(in->i_mode))
		return 0;
	if (isz <= EXT2_GOOD_OLD_INODE_SIZE ||
	    in->i_extra_isize < offsetof(struct ext2_inode_large,
					 i_ctime_extra) + 4 -
				EXT2_GOOD_OLD_INODE_SIZE)
		return 0;	/* no nanoseconds: the check never asks */
	s += (__s64)(in->i_ctime_extra & EXT4_EPOCH_MASK) << 32;
	return (__u64)s == sec && !(in->i_ctime_extra >> EXT4_EPOCH_BITS);
}

/*
 * Whether an in-use regular file's ctime is the whole second sec; also
 * when the inodes cannot all be read (a file of unknown time).
 */
int xr_seen_whole(ext2_filsys fs, __u64 sec)
{
	struct ext2_inode_large in;
	int isz = EXT2_INODE_SIZE(fs->super), found = 0;
	ext2_inode_scan sc;
	ext2_ino_t ino;
	errcode_t err;

	if (isz > (int)sizeof(in))
		isz = sizeof(in);
	if (ext2fs_open_inode_scan(fs, 0, &sc))
		return 1;
	while (!(err = ext2fs_get_next_inode_full(sc, &ino,
				(struct ext2_inode *)&in, isz)) && ino)
		if (ino >= EXT2_FIRST_INO(fs->super) &&
		    (found = whole_in(&in, isz, sec)))
			break;
	ext2fs_close_inode_scan(sc);
	return found || err;
}
