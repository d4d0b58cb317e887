/*
 * fsck_journal.c --- a journal inode whose blocks are not its own (also
 * group metadata, mapped by another inode, or twice in its own map:
 * journal/jown.c).  Its next commit would write the log over those
 * blocks and its replay would read back what it wrote, so the library
 * refuses it for writing (EXTREF_ERR_JNL_OVERLAP).  fsck.extref repairs
 * it before e2fsck runs, as e2fsck treats a journal inode it finds
 * invalid: the inode is cleared, with has_journal and needs_recovery (a
 * log it holds is lost, as e2fsck loses it); e2fsck then frees the blocks
 * that were the journal's alone; after it, a new journal of the same
 * size is made elsewhere.  The other owners keep their bytes.  With
 * shared_blocks set, e2fsck itself does not see the overlap (shared
 * blocks are not multiply-claimed to it).
 */
#include <string.h>
#include "extref_fsck_int.h"

/* The journal inode zeroed and forgotten by the superblock (backups too,
 * at the close); *nblocks gets its size. */
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
	fs->flags &= ~EXT2_FLAG_MASTER_SB_ONLY;
	return 0;
}

errcode_t extref_fsck_journal_clear(const char *image,
				    struct extref_fsck_journal_fix *jf)
{
	ext2_filsys fs;
	blk64_t nblocks;
	errcode_t err;

	jf->found = jf->cleared = 0;
	jf->nblocks = 0;
	if (ext2fs_open2(image, NULL, EXT2_FLAG_64BITS |
			 (jf->write ? EXT2_FLAG_RW : 0), 0, 0,
			 unix_io_manager, &fs))
		return 0;		/* e2fsck's to repair */
	/* a plain image is stock e2fsck's alone */
	err = extref_fsck_is_extref(fs) ? extref_journal_check_blocks(fs) : 0;
	if (err != EXTREF_ERR_JNL_OVERLAP) {
		ext2fs_close_free(&fs);
		return err;
	}
	jf->found = 1;
	/* asked (or told, without write) */
	if (!(jf->confirm && jf->confirm(jf->priv)) || !jf->write) {
		ext2fs_close_free(&fs);
		return 0;
	}
	err = clear_journal(fs, &nblocks);
	if (!err)
		err = ext2fs_close_free(&fs);
	else
		ext2fs_free(fs);	/* nothing written */
	if (err)
		return err;
	jf->cleared = 1;
	jf->nblocks = nblocks;
	return 0;
}

errcode_t extref_fsck_journal_remake(const char *image, blk64_t nblocks,
				     extref_fsck_journal_func note,
				     void *priv)
{
	struct ext2fs_journal_params jp;
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open2(image, NULL, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	err = ext2fs_read_bitmaps(fs);
	if (!err)
		err = ext2fs_get_journal_params(&jp, fs);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	/* e2fsck's size for the filesystem, or less: the old one's */
	if (nblocks >= 1024 && nblocks < jp.num_journal_blocks)
		jp.num_journal_blocks = nblocks;
	if (note)
		note(EXTREF_FSCK_JOURNAL_CREATING, jp.num_journal_blocks, priv);
	err = ext2fs_add_journal_inode3(fs, &jp, ~0ULL, 0);
	if (note)
		note(err ? EXTREF_FSCK_JOURNAL_FAILED : EXTREF_FSCK_JOURNAL_MADE,
		     jp.num_journal_blocks, priv);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	return ext2fs_close_free(&fs);
}
