/*
 * rename.c --- extref_rename: a name moved, over an existing name or
 * swapped with it (renameat2's RENAME_NOREPLACE and RENAME_EXCHANGE),
 * with the kernel's checks in its order (do_renameat2, vfs_rename,
 * ext4_rename, ext4_cross_rename).  A moved directory's ".." and both
 * parents' link counts follow; a name replaced is dropped as unlink
 * drops it (nlink.c).
 */
#include <string.h>
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/* The most directories a climb to the root passes: a longer one is a
 * loop of a damaged image. */
#define MAX_CLIMB	65536

/* One side of a rename: a name in a directory and what it names. */
struct side {
	ext2_ino_t		dir;
	const char		*name;
	ext2_ino_t		ino;		/* 0: no such name (a target) */
	struct ext2_inode	inode;
	int			isdir;
};

static int dot_name(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* *yes when anc is dir or one of dir's ancestors (".." up to the root). */
static errcode_t is_ancestor(ext2_filsys fs, ext2_ino_t anc, ext2_ino_t dir,
			     int *yes)
{
	errcode_t err;
	unsigned n;

	*yes = 0;
	for (n = 0; n < MAX_CLIMB; n++) {
		if (dir == anc) {
			*yes = 1;
			return 0;
		}
		if (dir == EXT2_ROOT_INO)
			return 0;
		err = xr_dotdot(fs, dir, &dir);
		if (err)
			return err;
		if (dir == 0)
			return EXT2_ET_DIR_CORRUPTED;
	}
	return EXTREF_ERR_DIR_LOOP;
}

/* The name's inode, read and allowed to change; ino 0 when absent. */
static errcode_t read_side(extref_fs_t xfs, struct side *s)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err = xr_lookup(fs, s->dir, s->name, &s->ino);

	if (err == EXT2_ET_FILE_NOT_FOUND) {
		s->ino = 0;
		return 0;
	}
	if (!err)
		err = extref_check_modifiable(xfs, s->ino);
	if (!err)
		err = xr_read_inode(fs, s->ino, &s->inode);
	s->isdir = !err && LINUX_S_ISDIR(s->inode.i_mode);
	return err;
}

/*
 * do_renameat2 up to the lookups: flags, the parents (directories,
 * searchable), "." and "..", the source there, the target as the flags
 * want it; then the loops lock_rename's trap refuses.
 */
static errcode_t lookup_checks(extref_fs_t xfs, struct side *o,
			       struct side *n, int flags)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	int xchg = flags & EXTREF_RENAME_EXCHANGE, yes = 0;
	errcode_t err;

	if ((flags & ~(EXTREF_RENAME_NOREPLACE | EXTREF_RENAME_EXCHANGE |
		       EXTREF_RENAME_KEEP)) ||
	    ((flags & EXTREF_RENAME_NOREPLACE) && xchg))
		return EXTREF_ERR_BAD_FLAGS;
	err = extref_check_modifiable(xfs, o->dir);
	if (!err)
		err = extref_check_modifiable(xfs, n->dir);
	if (!err)
		err = xr_perm_parent(xfs, o->dir);
	if (!err)
		err = xr_perm_parent(xfs, n->dir);
	if (err)
		return err;
	if (dot_name(o->name))
		return EXTREF_ERR_BUSY;
	if (dot_name(n->name))
		return (flags & EXTREF_RENAME_NOREPLACE) ? EXTREF_ERR_EXISTS :
							   EXTREF_ERR_BUSY;
	if (!*n->name || strchr(n->name, '/') ||
	    strlen(n->name) > EXT2_NAME_LEN)
		return EXT2_ET_INVALID_ARGUMENT;
	err = read_side(xfs, o);
	if (!err && !o->ino)
		err = EXT2_ET_FILE_NOT_FOUND;
	if (!err)
		err = read_side(xfs, n);
	if (err)
		return err;
	if ((flags & EXTREF_RENAME_NOREPLACE) && n->ino)
		return EXTREF_ERR_EXISTS;
	if (xchg && !n->ino)
		return EXT2_ET_FILE_NOT_FOUND;
	if (o->dir == n->dir)
		return 0;
	if (o->isdir && (err = is_ancestor(fs, o->ino, n->dir, &yes)))
		return err;
	if (yes)
		return EXTREF_ERR_MOVE_INTO_ITSELF;
	if (n->ino && n->isdir && (err = is_ancestor(fs, n->ino, o->dir, &yes)))
		return err;
	if (yes)
		return xchg ? EXTREF_ERR_MOVE_INTO_ITSELF :
			      EXTREF_ERR_DIR_NOT_EMPTY;
	return 0;
}

/*
 * vfs_rename's checks: may_delete of the source, may_create or
 * may_delete of the target (with the type rule of a replaced name),
 * write permission on a directory whose ".." changes; then ext4's:
 * the project rule, a replaced directory empty, the link limit of a
 * directory taking a subdirectory, and the mappings of a dropped target
 * readable.
 */
static errcode_t vfs_checks(extref_fs_t xfs, struct side *o, struct side *n,
			    int xchg)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	int moved = o->dir != n->dir;
	errcode_t err = xr_may_delete(xfs, o->dir, o->ino);

	if (!err)
		err = n->ino ? xr_may_delete(xfs, n->dir, n->ino)
			     : xr_may_create(xfs, n->dir);
	if (err)
		return err;
	if (!xchg && n->ino && o->isdir && !n->isdir)
		return EXTREF_ERR_NOT_DIR;
	if (!xchg && n->ino && !o->isdir && n->isdir)
		return EXTREF_ERR_IS_DIR;
	if (moved && o->isdir)
		err = xr_perm_inode(xfs, o->ino, XR_MAY_WRITE);
	if (!err && moved && xchg && n->isdir)
		err = xr_perm_inode(xfs, n->ino, XR_MAY_WRITE);
	if (!err)
		err = xr_project_check(fs, n->dir, o->ino);
	if (!err && xchg)
		err = xr_project_check(fs, o->dir, n->ino);
	if (err)
		return err;
	if (!xchg && o->isdir && n->ino)
		err = xr_dir_empty(fs, n->ino);
	else if (moved && o->isdir && !n->isdir)
		err = xr_dir_may_grow(fs, n->dir);
	else if (moved && xchg && n->isdir && !o->isdir)
		err = xr_dir_may_grow(fs, o->dir);
	if (!err && !xchg && n->ino)
		err = xr_drop_check(fs, n->ino, &n->inode);
	return err;
}

/* ino's change time set to now. */
static errcode_t touch_ctime(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(fs, ino, &in);

	return err ? err : xr_write_inode_times(fs, ino, &in, XR_TIME_CTIME);
}

/* Both parents' times, and their counts moved by so many subdirectories. */
static errcode_t parents_changed(ext2_filsys fs, struct side *o,
				 struct side *n, int dold, int dnew)
{
	errcode_t err;

	if (o->dir == n->dir)
		return xr_dir_changed(fs, o->dir, dold + dnew);
	err = xr_dir_changed(fs, o->dir, dold);
	return err ? err : xr_dir_changed(fs, n->dir, dnew);
}

/* The source takes the target's name (replacing it), its own goes. */
static errcode_t move(extref_fs_t xfs, struct side *o, struct side *n,
		      int keep)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	int ftype = xr_file_type(o->inode.i_mode);
	errcode_t err;

	err = n->ino ? xr_set_entry(fs, n->dir, n->name, o->ino, ftype)
		     : xr_link(fs, n->dir, n->name, o->ino, ftype);
	if (!err)
		err = xr_unlink_name(fs, o->dir, o->name, o->ino);
	if (!err && o->isdir && o->dir != n->dir)
		err = xr_set_entry(fs, o->ino, "..", n->dir, EXT2_FT_DIR);
	/* ext4_rename: the old parent loses a subdirectory, the new gains
	 * one unless it loses the directory replaced */
	if (!err)
		err = parents_changed(fs, o, n, o->isdir ? -1 : 0,
				      o->isdir && !n->ino ? 1 : 0);
	if (!err)
		err = touch_ctime(fs, o->ino);
	if (!err && n->ino)
		err = ext2fs_read_inode(fs, n->ino, &n->inode);
	return err || !n->ino ? err : xr_drop_link(xfs, n->ino, &n->inode,
						   keep);
}

/* The two names swap their inodes (ext4_cross_rename). */
static errcode_t exchange(ext2_filsys fs, struct side *o, struct side *n)
{
	int d = 0;
	errcode_t err;

	err = xr_set_entry(fs, o->dir, o->name, n->ino,
			   xr_file_type(n->inode.i_mode));
	if (!err)
		err = xr_set_entry(fs, n->dir, n->name, o->ino,
				   xr_file_type(o->inode.i_mode));
	if (!err && o->dir != n->dir && o->isdir)
		err = xr_set_entry(fs, o->ino, "..", n->dir, EXT2_FT_DIR);
	if (!err && o->dir != n->dir && n->isdir)
		err = xr_set_entry(fs, n->ino, "..", o->dir, EXT2_FT_DIR);
	if (o->dir != n->dir && o->isdir != n->isdir)
		d = o->isdir ? -1 : 1;
	if (!err)
		err = parents_changed(fs, o, n, d, -d);
	if (!err)
		err = touch_ctime(fs, o->ino);
	return err ? err : touch_ctime(fs, n->ino);
}

static errcode_t rename_op(extref_fs_t xfs, struct side *o, struct side *n,
			   int flags)
{
	int xchg = flags & EXTREF_RENAME_EXCHANGE;
	errcode_t err = lookup_checks(xfs, o, n, flags);

	if (err)
		return err;
	/* vfs_rename: a name onto another of the same inode does nothing */
	if (o->ino == n->ino)
		return 0;
	err = vfs_checks(xfs, o, n, xchg);
	if (err)
		return err;
	err = xchg ? exchange(extref_fs_ext2(xfs), o, n) : move(xfs, o, n,
							 flags & EXTREF_RENAME_KEEP);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c). */
errcode_t extref_rename(extref_fs_t xfs, ext2_ino_t olddir,
			const char *oldname, ext2_ino_t newdir,
			const char *newname, int flags)
{
	struct side o = { .dir = olddir, .name = oldname };
	struct side n = { .dir = newdir, .name = newname };
	errcode_t err;

	if (!oldname || !newname)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_tx_begin(xfs);
	return err ? err : xr_tx_end(xfs, rename_op(xfs, &o, &n, flags));
}
