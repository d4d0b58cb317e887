/*
 * orphan.c --- an inode kept on the orphan list after its last name went
 * (extref_unlink with EXTREF_UNLINK_KEEP, extref_rename with
 * EXTREF_RENAME_KEEP) released: off the list and freed as unlink frees
 * (nlink.c: every mapping through the counts), one transaction; and
 * every orphan of the list released, as a writer's open does first; a
 * damaged list cut (fsck.extref).
 */
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

static errcode_t release_op(extref_fs_t xfs, ext2_ino_t ino)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode inode;
	errcode_t err = xr_op_begin(xfs);

	if (!err && (ino < EXT2_FIRST_INO(fs->super) ||
		     ino > fs->super->s_inodes_count))
		err = EXT2_ET_BAD_INODE_NUM;
	if (!err)
		err = xr_orphan_check(fs);	/* a loop is never walked */
	if (!err)
		err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (inode.i_links_count || !xr_orphan_on_list(fs, ino))
		return EXTREF_ERR_NOT_ORPHAN;
	err = xr_drop_check(fs, ino, &inode);
	if (!err)
		err = xr_orphan_remove(fs, ino);
	if (!err)
		err = xr_free_inode(xfs, ino, &inode);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_orphan_release(extref_fs_t xfs, ext2_ino_t ino)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, release_op(xfs, ino));
}

/*
 * A damaged list dropped whole (s_last_orphan 0), one transaction: the
 * inodes it held keep no name and their counts, for fsck.extref (stock
 * e2fsck then clears them, their blocks marked by what still maps them,
 * and the counts that were theirs come down).
 */
errcode_t extref_orphan_cut(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err = xr_tx_begin(xfs);

	if (err)
		return err;
	if (!(fs->flags & EXT2_FLAG_RW))
		return xr_tx_end(xfs, EXTREF_ERR_READ_ONLY);
	fs->super->s_last_orphan = 0;
	ext2fs_mark_super_dirty(fs);
	return xr_tx_end(xfs, 0);
}

/* Each orphan from the head, one transaction each; *n counts them. */
errcode_t extref_orphan_release_all(extref_fs_t xfs, unsigned *n)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	__u32 i;
	errcode_t err = 0;

	if (n)
		*n = 0;
	for (i = 0; fs->super->s_last_orphan && !err; i++) {
		if (i > fs->super->s_inodes_count)
			return EXTREF_ERR_ORPHAN_LIST;
		if (!xr_orphan_on_list(fs, fs->super->s_last_orphan))
			return EXTREF_ERR_ORPHAN_LIST;	/* its head */
		err = extref_orphan_release(xfs, fs->super->s_last_orphan);
		if (err == EXTREF_ERR_NOT_ORPHAN)
			err = EXTREF_ERR_ORPHAN_LIST;
		if (!err && n)
			(*n)++;
	}
	return err;
}
