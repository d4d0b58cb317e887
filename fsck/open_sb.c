/*
 * open_sb.c --- open the image as e2fsck does: through the primary
 * superblock, or when that does not open, through the first backup
 * (group 1's) of the first block size whose backup opens, as e2fsck's
 * get_backup_sb() looks for it.
 */
#include "fsck.h"

/* Where a block size's first backup superblock lies. */
static blk64_t backup_at(unsigned int bs)
{
	return (blk64_t)bs * 8 + (bs == 1024);
}

errcode_t open_sb(struct fsck_opts *o, ext2_filsys *fs)
{
	int flags = EXT2_FLAG_64BITS;
	errcode_t err, err2;
	unsigned int bs;

	o->backup_sb = o->backup_bs = 0;
	err = ext2fs_open2(o->image, NULL, flags, 0, 0, unix_io_manager, fs);
	if (!err)
		return 0;
	for (bs = EXT2_MIN_BLOCK_SIZE; bs <= EXT2_MAX_BLOCK_SIZE; bs *= 2) {
		err2 = ext2fs_open2(o->image, NULL, flags, backup_at(bs), bs,
				    unix_io_manager, fs);
		if (!err2) {
			o->backup_sb = backup_at(bs);
			o->backup_bs = bs;
			return 0;
		}
	}
	return err;	/* the primary's error: the one e2fsck names first */
}
