/*
 * jopen.c --- open the image's internal journal: map the inode's blocks
 * once, read and verify the journal superblock, find the log's head.
 */
#include <string.h>
#include "journal_int.h"

struct map_ctx {
	blk64_t		*map;
	blk64_t		n;
	errcode_t	err;
};

static int map_one(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t lblk,
		   blk64_t ref_blk, int ref_offset, void *priv)
{
	struct map_ctx *c = priv;

	(void)ref_blk;
	(void)ref_offset;
	if (lblk < 0 || (blk64_t)lblk >= c->n)
		return 0;
	if (*blocknr < fs->super->s_first_data_block ||
	    *blocknr >= ext2fs_blocks_count(fs->super)) {
		c->err = EXTREF_ERR_JNL_BAD_SUPER;
		return BLOCK_ABORT;
	}
	c->map[lblk] = *blocknr;
	return 0;
}

/* map[0 .. n-1] from the inode's blocks; every one must be mapped. */
static errcode_t map_journal(ext2_filsys fs, ext2_ino_t ino, blk64_t n,
			     blk64_t **ret)
{
	struct map_ctx c = { NULL, n, 0 };
	errcode_t err;
	blk64_t i;

	err = ext2fs_get_arrayzero(n, sizeof(blk64_t), &c.map);
	if (err)
		return err;
	err = extref_block_iterate(fs, ino,
			       BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_DATA_ONLY,
			       map_one, &c);
	if (!err)
		err = c.err;
	for (i = 0; !err && i < n; i++)
		if (!c.map[i])
			err = EXTREF_ERR_JNL_BAD_SUPER;
	if (err) {
		ext2fs_free_mem(&c.map);
		return err;
	}
	*ret = c.map;
	return 0;
}

/* The journal inode's size in blocks (the most s_maxlen may be). */
static errcode_t journal_inode(ext2_filsys fs, ext2_ino_t *ino,
			       blk64_t *nblocks)
{
	struct ext2_inode inode;
	errcode_t err;

	if (!ext2fs_has_feature_journal(fs->super))
		return EXTREF_ERR_JNL_NONE;
	if (!fs->super->s_journal_inum ||
	    ext2fs_has_feature_journal_dev(fs->super))
		return EXTREF_ERR_JNL_EXTERNAL;
	*ino = fs->super->s_journal_inum;
	err = ext2fs_read_inode(fs, *ino, &inode);
	if (err)
		return err;
	/* as e2fsck's check of the journal inode: a regular file in use */
	if (!LINUX_S_ISREG(inode.i_mode) || !inode.i_links_count)
		return EXTREF_ERR_JNL_BAD_INODE;
	*nblocks = EXT2_I_SIZE(&inode) / fs->blocksize;
	if (*nblocks > ext2fs_blocks_count(fs->super))
		*nblocks = ext2fs_blocks_count(fs->super);
	if (*nblocks < 2 || *nblocks > 0xffffffffULL)
		return EXTREF_ERR_JNL_BAD_SUPER;
	return 0;
}

/* Read journal block 0 (mapped alone first) and verify it. */
static errcode_t read_super(struct xr_journal *j, ext2_ino_t ino,
			    blk64_t nblocks)
{
	blk64_t pblk;
	errcode_t err;

	err = ext2fs_bmap2(j->fs, ino, NULL, NULL, 0, 0, NULL, &pblk);
	if (!err && !pblk)
		err = EXTREF_ERR_JNL_BAD_SUPER;
	if (!err)
		err = io_channel_read_blk64(j->io, pblk, 1, j->raw);
	if (err)
		return err;
	xr_jsb_decode(j->raw, &j->sb);
	err = xr_jsb_check(&j->sb, j->raw, j->bs, nblocks);
	if (err)
		return err;
	j->seed = ext2fs_crc32c_le(~0U, j->sb.uuid, JBD2_UUID_BYTES);
	return map_journal(j->fs, ino, j->sb.maxlen, &j->map);
}

/* Where the next transaction goes: after the last complete one of a
 * dirty log; at s_first with s_sequence in an empty journal. */
static void find_head(struct xr_journal *j)
{
	j->head = j->sb.first;
	j->tid = j->sb.sequence;
	if (!j->sb.start)
		return;
	j->scan_err = xr_jscan(j, &j->scan);
	if (!j->scan_err) {
		j->head = j->scan->end;
		j->tid = j->scan->end_tid;
		j->ntrans = j->scan->ntrans;
	}
}

errcode_t xr_journal_open(ext2_filsys fs, io_channel io,
			  struct xr_journal **ret)
{
	struct xr_journal *j;
	blk64_t nblocks;
	ext2_ino_t ino;
	errcode_t err;

	xr_jdetail_clear();
	err = journal_inode(fs, &ino, &nblocks);
	if (err)
		return err;
	err = ext2fs_get_memzero(sizeof(*j), &j);
	if (err)
		return err;
	j->fs = fs;
	j->io = io;
	j->bs = fs->blocksize;
	err = ext2fs_get_mem(j->bs, &j->raw);
	if (!err)
		err = read_super(j, ino, nblocks);
	if (err) {
		xr_journal_close(j);
		return err;
	}
	find_head(j);
	*ret = j;
	return 0;
}

void xr_journal_close(struct xr_journal *j)
{
	if (!j)
		return;
	xr_jscan_free(j->scan);
	ext2fs_free_mem(&j->map);
	ext2fs_free_mem(&j->raw);
	ext2fs_free_mem(&j);
}

blk64_t xr_journal_len(struct xr_journal *j)
{
	return j->sb.maxlen;
}

int xr_journal_dirty(struct xr_journal *j)
{
	return j->sb.start != 0;
}

void xr_journal_info(struct xr_journal *j, struct extref_jinfo *info)
{
	info->start = j->sb.start;
	info->sequence = j->sb.sequence;
	info->first = j->sb.first;
	info->maxlen = j->sb.maxlen;
	info->blocksize = j->sb.blocksize;
	info->compat = j->sb.compat;
	info->incompat = j->sb.incompat;
	info->ro_compat = j->sb.ro_compat;
	info->errnum = j->sb.errnum;
	memcpy(info->raw, j->raw, sizeof(info->raw));
}
