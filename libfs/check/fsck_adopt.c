/*
 * fsck_adopt.c --- an image whose shared_blocks feature is set but whose
 * inode 5 holds nothing (Android's e2fsdroid shares identical blocks
 * between files so) made an extref image: its tree built from the
 * counted extent mappings by the repair of a missing tree (0x0002), as
 * fsck.extref -y makes it, every shared block kept shared.  Adopted only
 * when the missing tree is all the checker finds.
 */
#include "extref_fsck_int.h"
#include "txn/xr_txio.h"

/* The first problem other than the missing tree. */
static void on_problem(const struct extref_problem_report *r, void *priv)
{
	int *first = priv;

	if (!*first && r->code != PR_X_TREE_MISSING)
		*first = r->code;
}

/* What no checker run is needed to refuse (extref_convert's refusals,
 * and an inode 5 that holds anything). */
static errcode_t refusal(ext2_filsys fs)
{
	struct ext2_super_block *sb = fs->super;

	if (ext2fs_has_feature_bigalloc(sb))
		return EXTREF_ERR_BIGALLOC;
	if (!ext2fs_has_feature_extents(sb))
		return EXTREF_ERR_NO_EXTENTS;
	if (ext2fs_has_feature_journal_needs_recovery(sb))
		return EXTREF_ERR_NEEDS_RECOVERY;
	if (!ext2fs_has_feature_shared_blocks(sb))
		return EXTREF_ERR_NO_FEATURE;
	return extref_fsck_unbuilt(fs) == EXTREF_ERR_TREE_UNBUILT ? 0 :
	       EXTREF_ERR_ALREADY;
}

errcode_t extref_fsck_adoptable(ext2_filsys fs, int *first)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_NO,
				      .report = on_problem,
				      .foreign = EXTREF_FSCK_FOREIGN_NONE };
	struct extref_fsck_result res;
	int other = 0;
	errcode_t err;

	if (first)
		*first = 0;
	err = refusal(fs);
	if (err)
		return err;
	o.priv = &other;
	err = xr_fsck_look(fs, &o, &res);
	if (first)
		*first = other;
	if (err)
		return err;
	return other ? EXTREF_ERR_ADOPT_PROBLEMS : 0;
}

/* Nothing shared: the empty tree of a conversion, in one transaction
 * when the transaction layer holds fs. */
static errcode_t empty_tree(ext2_filsys fs)
{
	extref_fs_t xfs = xr_tx_fs_of(fs);
	errcode_t err = xfs ? xr_tx_begin2(xfs, 1) : 0;

	if (err)
		return err;
	err = extref_format(fs);
	return xfs ? xr_tx_end2(xfs, err) : err;
}

errcode_t extref_fsck_adopt(ext2_filsys fs, int *first)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_YES,
				      .foreign = EXTREF_FSCK_FOREIGN_NONE };
	struct extref_fsck_result res;
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = extref_fsck_adoptable(fs, first);
	if (!err)
		err = extref_fsck(fs, &o, &res);
	if (!err && !res.records)
		err = empty_tree(fs);
	return err;
}
