/*
 * blockiter.c --- every walk of a file's block map through libext2fs,
 * bounded by the file.
 *
 * libext2fs's iterator follows each index entry (extents) and each
 * indirect pointer as it finds it: entries that all name one block make
 * it go down into that block once for each, level under level.  Here
 * every block it reports counts, the mapping blocks too (asked for even
 * when the caller wants data only, then not passed on): a sound file
 * reports at most as many as its i_blocks holds, so one report more
 * ends the walk.
 */
#include "extref.h"

struct bounded {
	int	(*func)(ext2_filsys, blk64_t *, e2_blkcnt_t, blk64_t, int,
			void *);
	void	*priv;
	int	data_only;
	blk64_t	left;
	int	over;
};

static int one(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
	       blk64_t ref_blk, int ref_offset, void *priv)
{
	struct bounded *b = priv;

	if (!b->left) {
		b->over = 1;
		return BLOCK_ABORT;
	}
	b->left--;
	if (b->data_only && blockcnt < 0)
		return 0;
	return b->func(fs, blocknr, blockcnt, ref_blk, ref_offset, b->priv);
}

/* Blocks a sound walk of ino reports at most (and a little room). */
static errcode_t bound(ext2_filsys fs, ext2_ino_t ino, blk64_t *ret)
{
	struct ext2_inode inode;
	errcode_t err = ext2fs_read_inode(fs, ino, &inode);
	blk64_t n;

	if (err)
		return err;
	n = ext2fs_get_stat_i_blocks(fs, &inode) / (fs->blocksize / 512);
	if (n > ext2fs_blocks_count(fs->super))
		n = ext2fs_blocks_count(fs->super);
	*ret = n + 8;
	return 0;
}

errcode_t extref_block_iterate(ext2_filsys fs, ext2_ino_t ino, int flags,
			   int (*func)(ext2_filsys fs, blk64_t *blocknr,
				       e2_blkcnt_t blockcnt, blk64_t ref_blk,
				       int ref_offset, void *priv),
			   void *priv)
{
	struct bounded b = { func, priv, flags & BLOCK_FLAG_DATA_ONLY, 0, 0 };
	errcode_t err = bound(fs, ino, &b.left);

	if (!err)
		err = ext2fs_block_iterate3(fs, ino,
					    flags & ~BLOCK_FLAG_DATA_ONLY, NULL,
					    one, &b);
	return err ? err : b.over ? EXTREF_ERR_BLOCK_MAP_LOOP : 0;
}
