/*
 * shrink_journal.c --- --shrink gives the image the journal a fresh
 * build of what it holds would have (plan_size.c: 4 MiB, or 1/1024 of
 * the content above 4 GiB), when its own is larger: mke2fs sizes a
 * journal from the filesystem (64 MiB for 2 GiB), which a cut would
 * otherwise keep whole.
 *
 * The journal is clean (replayed before the shrink starts), so nothing
 * in it is needed: its blocks are freed, and a new journal of the new
 * size is made by libext2fs (ext2fs_add_journal_inode3) at the old one's
 * first block, zeroed (not lazily: old transactions left in its blocks
 * could pass for new ones in a later recovery; on a file libext2fs
 * zeroes with fallocate, so the host need not store the zeros).  It runs
 * inside --shrink's first step, through the undo io manager.  An external
 * journal, or one with a fast-commit area, is kept.
 */
#include <string.h>

#include "mkfs.h"
#include "shrink_int.h"

/* The journal's blocks, 0 when there is no internal one to cut. */
static blk64_t journal_now(ext2_filsys fs, struct ext2_inode *inode)
{
	ext2_ino_t ino = fs->super->s_journal_inum;

	if (!ext2fs_has_feature_journal(fs->super) ||
	    ext2fs_has_feature_fast_commit(fs->super) ||
	    ext2fs_has_feature_journal_needs_recovery(fs->super) ||
	    ino != EXT2_JOURNAL_INO || ext2fs_read_inode(fs, ino, inode))
		return 0;
	return EXT2_I_SIZE(inode) / fs->blocksize;
}

blk64_t shrink_journal_want(ext2_filsys fs)
{
	struct ext2_inode inode;
	blk64_t now = journal_now(fs, &inode), used, want;

	if (!now)
		return 0;
	used = ext2fs_blocks_count(fs->super) -
	       ext2fs_free_blocks_count(fs->super);
	used = used > now ? used - now : 0;
	want = ((blk64_t)journal_mib(used * fs->blocksize) << 20) /
	       fs->blocksize;
	return want < now ? want : 0;
}

errcode_t shrink_journal(ext2_filsys fs, blk64_t blocks)
{
	struct ext2fs_journal_params jp;
	struct ext2_inode inode;
	blk64_t goal = 0;
	errcode_t err;

	if (!journal_now(fs, &inode))
		return 0;
	err = ext2fs_bmap2(fs, EXT2_JOURNAL_INO, &inode, NULL, 0, 0, NULL,
			   &goal);
	if (!err)
		err = shrink_free_inode(fs, EXT2_JOURNAL_INO, &inode);
	if (err)
		return err;
	ext2fs_clear_feature_journal(fs->super);
	fs->super->s_journal_inum = 0;
	memset(fs->super->s_jnl_blocks, 0, sizeof(fs->super->s_jnl_blocks));
	fs->super->s_jnl_backup_type = 0;
	ext2fs_mark_super_dirty(fs);
	memset(&jp, 0, sizeof(jp));
	jp.num_journal_blocks = (blk_t)blocks;
	return ext2fs_add_journal_inode3(fs, &jp, goal,
					 EXT2_MKJOURNAL_NO_MNT_CHECK);
}
