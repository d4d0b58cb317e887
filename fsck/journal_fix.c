/*
 * journal_fix.c --- a journal inode whose blocks are not its own (also
 * group metadata, mapped by another inode, or twice in its own map).
 * Its next commit would write the log over those blocks and its replay
 * would read back what it wrote, so the library refuses it for writing
 * (EXTREF_ERR_JNL_OVERLAP).  Repaired before e2fsck runs, as e2fsck
 * treats a journal inode it finds invalid: the inode is cleared, with
 * has_journal and needs_recovery (a log it holds is lost, as e2fsck loses
 * it); e2fsck then frees the blocks that were the journal's alone; after
 * it, a new journal of the same size is made elsewhere ("Creating
 * journal ... journal has been regenerated", e2fsck's words).  The other
 * owners keep their bytes.  With shared_blocks set, e2fsck itself does
 * not see the overlap (shared blocks are not multiply-claimed to it).
 */
#include <stdio.h>
#include <string.h>
#include <et/com_err.h>
#include "fsck.h"

static errcode_t clear_journal(ext2_filsys fs, blk64_t *nblocks)
{
	struct ext2_inode inode;
	ext2_ino_t ino = fs->super->s_journal_inum;
	errcode_t err;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	*nblocks = EXT2_I_SIZE(&inode) / fs->blocksize;
	memset(&inode, 0, sizeof(inode));
	err = ext2fs_write_inode(fs, ino, &inode);
	if (err)
		return err;
	fs->super->s_journal_inum = 0;
	memset(fs->super->s_jnl_blocks, 0, sizeof(fs->super->s_jnl_blocks));
	fs->super->s_jnl_backup_type = 0;
	ext2fs_clear_feature_journal(fs->super);
	ext2fs_clear_feature_journal_needs_recovery(fs->super);
	ext2fs_mark_super_dirty(fs);
	fs->flags &= ~EXT2_FLAG_MASTER_SB_ONLY;		/* backups too */
	return 0;
}

static int report(struct fsck_opts *o, int fix)
{
	const char *fix_text = "clear the journal; a new one is made after "
			       "e2fsck";

	printf("0x%04x journal inode's blocks are not its own: %s (%s%s)\n",
	       PR_X_JOURNAL_OVERLAP, extref_journal_detail(),
	       fix ? "" : "would ", fix_text);
	if (o->mode == EXTREF_FSCK_ASK)
		return ask_yes_no(o, "Clear the journal");
	return fix;
}

int fix_journal_blocks(struct fsck_opts *o, blk64_t *recreate)
{
	int rw = o->mode != EXTREF_FSCK_NO;
	ext2_filsys fs;
	errcode_t err;

	*recreate = 0;
	if (ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS |
			 (rw ? EXT2_FLAG_RW : 0), 0, 0, unix_io_manager, &fs))
		return 0;		/* e2fsck's to repair */
	/* a plain image is stock e2fsck's alone (fsck.extref(8)) */
	err = extref_fsck_is_extref(fs) ? extref_journal_check_blocks(fs) : 0;
	if (err != EXTREF_ERR_JNL_OVERLAP) {
		ext2fs_close_free(&fs);
		if (!err)
			return 0;
		com_err(prog, err, "while checking the journal of %s",
			o->image);
		return FSCK_ERROR;
	}
	if (!report(o, rw)) {
		ext2fs_close_free(&fs);
		return FSCK_UNCORRECTED;
	}
	err = clear_journal(fs, recreate);
	if (!err)
		err = ext2fs_close_free(&fs);
	else
		ext2fs_free(fs);
	if (err) {
		com_err(prog, err, "while clearing the journal of %s",
			o->image);
		return FSCK_ERROR;
	}
	printf("*** journal has been deleted ***\n\n");
	return FSCK_NONDESTRUCT;
}

/* After e2fsck: a journal of the cleared one's size, as e2fsck makes. */
int remake_journal(struct fsck_opts *o, blk64_t nblocks)
{
	struct ext2fs_journal_params jp;
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_RW | EXT2_FLAG_64BITS,
			   0, 0, unix_io_manager, &fs);
	if (err)
		goto fail;
	err = ext2fs_read_bitmaps(fs);
	if (!err)
		err = ext2fs_get_journal_params(&jp, fs);
	if (!err) {
		if (nblocks >= 1024 && nblocks < jp.num_journal_blocks)
			jp.num_journal_blocks = nblocks;
		printf("Creating journal (%u blocks): ", jp.num_journal_blocks);
		fflush(stdout);
		err = ext2fs_add_journal_inode3(fs, &jp, ~0ULL, 0);
		printf("%s\n", err ? "failed" : "Done.");
	}
	if (!err) {
		err = ext2fs_close_free(&fs);
		if (!err) {
			printf("\n*** journal has been regenerated ***\n");
			return 0;
		}
	} else {
		ext2fs_free(fs);
	}
fail:
	com_err(prog, err, "while making a new journal for %s", o->image);
	return FSCK_UNCORRECTED;
}
