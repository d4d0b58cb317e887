/*
 * need_dir.c --- the directory blocks of the dry run (need_walk.c,
 * need_layer.c): the entries a directory of the image gains take room
 * in it, its blocks filled (the checksum tail left) before new ones
 * come, a hashed directory's to three quarters (its leaves split in
 * halves); a new directory holds ".", ".." and its entries.
 */
#include "need_int.h"

__u64 xr_need_dirent_len(size_t len)
{
	return 8 + ((len + 3) & ~(size_t)3);
}

static int used_cb(struct ext2_dir_entry *d, int offset, int blocksize,
		   char *buf, void *priv)
{
	(void)offset; (void)blocksize; (void)buf;
	*(__u64 *)priv += xr_need_dirent_len(ext2fs_dirent_name_len(d));
	return 0;
}

/* New blocks the image's directory dir needs for add more bytes. */
static __u64 grow_dir(ext2_filsys fs, ext2_ino_t dir, __u64 add)
{
	unsigned int room = fs->blocksize - 12;
	struct ext2_inode inode;
	__u64 used = 0, have, want;

	if (!add || ext2fs_read_inode(fs, dir, &inode) ||
	    ext2fs_dir_iterate(fs, dir, 0, NULL, used_cb, &used))
		return 0;
	have = EXT2_I_SIZE(&inode) / fs->blocksize;
	if (inode.i_flags & EXT2_INDEX_FL)
		return (add * 4 / 3 + room - 1) / room;
	want = (used + add + room - 1) / room;
	return want > have ? want - have : 0;
}

__u64 xr_need_dir_blocks(const struct xr_need *nd, ext2_ino_t dir,
			 __u64 added)
{
	ext2_filsys fs = nd->up.fs;
	unsigned int room = fs->blocksize - 12;

	if (dir && dir <= fs->super->s_inodes_count)
		return grow_dir(fs, dir, added);
	return (24 + added + room - 1) / room;	/* ".", ".." and them */
}
