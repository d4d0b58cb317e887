/*
 * orphan_list.c --- ext4's classic orphan list: the superblock's
 * s_last_orphan names the first inode, each inode's i_dtime the next
 * (0 ends it); every inode on it has i_links_count 0 and no name left
 * (ext4's orphan.c keeps an open unlinked inode there).  An inode put on
 * it, taken off it, a number looked for on it.  The list of a possibly
 * hostile image is walked with a bound (XR_ORPHAN_MAX inodes), and a
 * number outside the image's ordinary inodes, an inode with links or
 * none, or a longer list ends the walk with EXTREF_ERR_ORPHAN_LIST.
 */
#include "extref_ops_int.h"
#include "txn/xr_txio.h"

/* A longer list is taken for a damaged one (a loop): walks stay short. */
#define XR_ORPHAN_MAX	4096

static int orphan_ino_ok(ext2_filsys fs, ext2_ino_t ino)
{
	return ino >= EXT2_FIRST_INO(fs->super) &&
	       ino <= fs->super->s_inodes_count;
}

/*
 * Call at each inode of the list with its predecessor (0: the head)
 * until it answers nonzero (1: stop, found).  *found tells it did.
 */
static errcode_t walk(ext2_filsys fs, ext2_ino_t want, ext2_ino_t *prev_ret,
		      struct ext2_inode *in, int *found)
{
	ext2_ino_t prev = 0, cur = fs->super->s_last_orphan;
	__u32 n;
	errcode_t err;

	*found = 0;
	for (n = 0; cur && n < XR_ORPHAN_MAX; n++) {
		if (!orphan_ino_ok(fs, cur))
			return EXTREF_ERR_ORPHAN_LIST;
		err = ext2fs_read_inode(fs, cur, in);
		if (err)
			return err;
		if (in->i_links_count || !in->i_mode)
			return EXTREF_ERR_ORPHAN_LIST;
		if (cur == want) {
			*prev_ret = prev;
			*found = 1;
			return 0;
		}
		prev = cur;
		cur = in->i_dtime;
	}
	return cur ? EXTREF_ERR_ORPHAN_LIST : 0;
}

/* The whole list sound: ends within XR_ORPHAN_MAX inodes (no loop),
 * every one an orphan. */
errcode_t xr_orphan_check(ext2_filsys fs)
{
	struct ext2_inode in;
	ext2_ino_t prev;
	int found;

	return walk(fs, 0, &prev, &in, &found);
}

/* Whether ino is on the list (a damaged list: not). */
int xr_orphan_on_list(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode in;
	ext2_ino_t prev;
	int found;

	if (!fs->super->s_last_orphan)
		return 0;
	return !walk(fs, ino, &prev, &in, &found) && found;
}

/*
 * The last name of ino is gone but it stays open: links 0, first on the
 * list (as ext4_orphan_add), its change time set; written.
 */
errcode_t xr_orphan_add(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode)
{
	if (!orphan_ino_ok(fs, ino))
		return EXT2_ET_BAD_INODE_NUM;
	inode->i_links_count = 0;
	inode->i_dtime = fs->super->s_last_orphan;
	fs->super->s_last_orphan = ino;
	ext2fs_mark_super_dirty(fs);
	return xr_write_inode_times(fs, ino, inode, XR_TIME_CTIME);
}

/* ino off the list: its predecessor (or the superblock) takes its next. */
errcode_t xr_orphan_remove(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode in, p;
	ext2_ino_t prev = 0, next;
	int found;
	errcode_t err = walk(fs, ino, &prev, &in, &found);

	if (err)
		return err;
	if (!found)
		return EXTREF_ERR_NOT_ORPHAN;
	next = in.i_dtime;
	if (next == ino)
		return EXTREF_ERR_ORPHAN_LIST;
	if (!prev) {
		fs->super->s_last_orphan = next;
		ext2fs_mark_super_dirty(fs);
		return 0;
	}
	err = ext2fs_read_inode(fs, prev, &p);
	if (err)
		return err;
	p.i_dtime = next;
	err = ext2fs_write_inode(fs, prev, &p);
	if (!err)
		xr_tx_note_inode(fs, prev);
	return err;
}
