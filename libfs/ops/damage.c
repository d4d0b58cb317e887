/*
 * damage.c --- which block of an inode fails its checksum, to name it
 * when an operation met it half-way (extref_damage_where, extref_ops.h).
 *
 * The operation stops at libext2fs's checksum error, which names neither
 * the inode nor the block.  A recursive reflink notes it where it meets
 * it (xr_note_damage); a clone, a punch and an unlink look at their
 * inodes after the rollback (xr_damage_result).  The inode is the one the operation was
 * reading; the block is its extended attribute block, or is found by
 * reading the inode's extent blocks (or, for a directory, its blocks)
 * again, each verified on its own.
 */
#include "tree/extref_int.h"
#include "extref_ops_int.h"
#include "txn/xr_handle.h"

/* Errors of a checksum that does not match, in an inode's own blocks. */
static int block_csum_error(errcode_t err)
{
	return err == EXT2_ET_EXTENT_CSUM_INVALID ||
	       err == EXT2_ET_DIR_CSUM_INVALID ||
	       err == EXT2_ET_EXT_ATTR_CSUM_INVALID ||
	       err == EXT2_ET_INODE_CSUM_INVALID;
}

struct bad_ext {
	ext2_filsys	fs;
	ext2_ino_t	ino;
	char		*buf;
	blk64_t		blk;
};

static errcode_t check_index(const struct extref_extent *e, void *priv)
{
	struct bad_ext *b = priv;

	if (!e->index)
		return 0;
	if (io_channel_read_blk64(b->fs->io, e->pblk, 1, b->buf))
		return 0;
	if (!ext2fs_extent_block_csum_verify(b->fs, b->ino,
			(struct ext3_extent_header *)b->buf)) {
		b->blk = e->pblk;
		return EXTREF_ITER_STOP;
	}
	return 0;
}

static int check_dir_block(ext2_filsys fs, blk64_t *blocknr,
			   e2_blkcnt_t bcnt, blk64_t ref, int off, void *priv)
{
	struct bad_ext *b = priv;

	(void)fs; (void)ref; (void)off;
	if (bcnt < 0)
		return 0;
	if (!io_channel_read_blk64(b->fs->io, *blocknr, 1, b->buf) &&
	    !ext2fs_dir_block_csum_verify(b->fs, b->ino,
					  (struct ext2_dir_entry *)b->buf)) {
		b->blk = *blocknr;
		return BLOCK_ABORT;
	}
	return 0;
}

/* The first block of ino whose checksum fails, 0 if none is found. */
static blk64_t find_bad_block(extref_fs_t xfs, ext2_ino_t ino, errcode_t err)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct bad_ext b = { fs, ino, NULL, 0 };
	struct ext2_inode inode;
	int saved = fs->flags & EXT2_FLAG_IGNORE_CSUM_ERRORS;

	if (ext2fs_get_mem(fs->blocksize, &b.buf))
		return 0;
	/* walk past the damage; each block is verified here */
	fs->flags |= EXT2_FLAG_IGNORE_CSUM_ERRORS;
	if (!ext2fs_read_inode(fs, ino, &inode)) {
		if (err == EXT2_ET_EXTENT_CSUM_INVALID &&
		    (inode.i_flags & EXT4_EXTENTS_FL))
			extref_iterate_extents(xfs, ino, &inode,
					       EXTREF_EXTENTS_INDEX,
					       check_index, &b);
		else if (err == EXT2_ET_EXT_ATTR_CSUM_INVALID)
			b.blk = ext2fs_file_acl_block(fs, &inode);
		else if (err == EXT2_ET_DIR_CSUM_INVALID)
			extref_block_iterate(fs, ino,
					 BLOCK_FLAG_READ_ONLY |
					 BLOCK_FLAG_DATA_ONLY,
					 check_dir_block, &b);
	}
	fs->flags = (fs->flags & ~EXT2_FLAG_IGNORE_CSUM_ERRORS) | saved;
	ext2fs_free_mem(&b.buf);
	return b.blk;
}

/*
 * An operation reading ino failed with err: if a checksum failed and no
 * deeper step has named its damage yet, name ino and the block.
 */
void xr_note_damage(extref_fs_t xfs, ext2_ino_t ino, errcode_t err)
{
	ext2_ino_t have;
	blk64_t blk;

	if (!block_csum_error(err))
		return;
	extref_damage_where(xfs, &have, &blk);
	if (!have)
		xr_fs_set_damage(xfs, ino, err == EXT2_ET_INODE_CSUM_INVALID ?
				 0 : find_bad_block(xfs, ino, err));
}

void xr_damage_clear(extref_fs_t xfs)
{
	xr_fs_set_damage(xfs, 0, 0);
}

/* Whether ino's own inode fails its checksum. */
static int inode_csum_bad(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode inode;

	return ext2fs_read_inode(fs, ino, &inode) ==
	       EXT2_ET_INODE_CSUM_INVALID;
}

errcode_t xr_damage_result(extref_fs_t xfs, const ext2_ino_t *inos,
			   size_t n, errcode_t err)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	blk64_t blk;
	size_t i;

	if (!block_csum_error(err))
		return err;
	for (i = 0; i < n; i++) {
		if (!inos[i])
			continue;
		if (err == EXT2_ET_INODE_CSUM_INVALID) {
			if (!inode_csum_bad(fs, inos[i]))
				continue;
			xr_fs_set_damage(xfs, inos[i], 0);
			break;
		}
		blk = find_bad_block(xfs, inos[i], err);
		if (blk) {
			xr_fs_set_damage(xfs, inos[i], blk);
			break;
		}
	}
	return err;
}

void extref_damage_where(extref_fs_t xfs, ext2_ino_t *ino, blk64_t *blk)
{
	*ino = xfs->damage_ino;
	*blk = xfs->damage_blk;
}
