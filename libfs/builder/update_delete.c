/*
 * update_delete.c --- EXTREF_UPDATE_DELETE, as rsync --delete: in every
 * directory the update writes, the names the source lacks leave the
 * image; a directory goes with everything below it, depth first, each
 * name through extref_unlink (shared blocks are counted down, not
 * freed).  The image root's lost+found stays: e2fsck needs it.
 */
#include <stdlib.h>
#include <string.h>
#include "update_int.h"
#include "txn/xr_txio.h"

static int by_name(const void *key, const void *elt)
{
	return strcmp(key, *(char *const *)elt);
}

errcode_t xr_upd_remove_tree(struct xr_upd *up, ext2_ino_t dir,
			     const char *name, ext2_ino_t ino)
{
	struct extref_dirlist l = { 0 };
	struct ext2_inode inode;
	errcode_t err = ext2fs_read_inode(up->fs, ino, &inode);
	size_t i;

	if (!err && !LINUX_S_ISDIR(inode.i_mode)) {
		err = extref_unlink(up->xfs, dir, name,
				    EXTREF_UNLINK_KEEP_TIMES);
		if (!err)
			up->u->removed++;
		return err;
	}
	if (err)
		return err;
	err = extref_dir_list(up->xfs, ino, EXTREF_DIRLIST_SORTED, &l);
	for (i = 0; !err && i < l.n; i++)
		err = xr_upd_remove_tree(up, ino, l.v[i].name, l.v[i].ino);
	extref_dir_list_free(&l);
	if (!err)
		err = extref_unlink(up->xfs, dir, name, EXTREF_UNLINK_DIR |
				    EXTREF_UNLINK_KEEP_TIMES);
	if (!err)
		up->u->removed++;
	return err;
}

errcode_t xr_upd_delete_extra(struct xr_upd *up, ext2_ino_t dir,
			      char **names, size_t n)
{
	struct extref_dirlist l = { 0 };
	errcode_t err = extref_dir_list(up->xfs, dir, EXTREF_DIRLIST_SORTED,
					&l);
	size_t i;

	for (i = 0; !err && i < l.n; i++) {
		const char *name = l.v[i].name;

		if (bsearch(name, names, n, sizeof(char *), by_name))
			continue;
		if (dir == EXT2_ROOT_INO && !strcmp(name, "lost+found"))
			continue;
		err = xr_upd_remove_tree(up, dir, name, l.v[i].ino);
		if (!err)
			err = xr_tx_split_point(up->xfs);
	}
	extref_dir_list_free(&l);
	return err;
}
