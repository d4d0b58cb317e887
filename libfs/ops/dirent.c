/*
 * dirent.c --- names in a directory: a name checked free, and a name
 * added (a link to an inode, or a new directory or symlink), the
 * directory indexed or grown when full; removal is dirclean.c's
 * xr_unlink_name.
 */
#include <string.h>
#include "extref_ops_int.h"

/* NAME must not exist in DIR. */
errcode_t xr_name_free(ext2_filsys fs, ext2_ino_t dir, const char *name)
{
	ext2_ino_t ino;
	errcode_t err;

	if (!*name || strchr(name, '/') || strlen(name) > EXT2_NAME_LEN)
		return EXT2_ET_INVALID_ARGUMENT;
	err = xr_lookup(fs, dir, name, &ino);
	if (err == EXT2_ET_FILE_NOT_FOUND)
		return 0;
	return err ? err : EXTREF_ERR_EXISTS;
}

/*
 * NAME into DIR: -> ino by ext2fs_link, or with ino 0 a new inode by
 * ext2fs_symlink (to target) or ext2fs_mkdir (target NULL).  The blocks
 * a split of an indexed DIR wrote are then cleaned (dirclean.c).
 */
static errcode_t add_name(ext2_filsys fs, ext2_ino_t dir, const char *name,
			  ext2_ino_t ino, int ftype, const char *target)
{
	struct xr_dx_path path;
	errcode_t err = xr_dx_path(fs, dir, name, &path);

	if (!err)
		err = ino ? ext2fs_link(fs, dir, name, ino, ftype)
		      : target ? ext2fs_symlink(fs, dir, 0, name, target)
			       : ext2fs_mkdir(fs, dir, 0, name);
	return err ? err : xr_dx_clean(fs, dir, &path);
}

/*
 * Add NAME to DIR (add_name's arguments), which must not hold NAME yet
 * (EXTREF_ERR_EXISTS: libext2fs would add a second entry of the name,
 * which e2fsck reports as "Duplicate entry").  A full directory of one
 * block becomes indexed (htree.c), as the kernel makes it, and libext2fs
 * then inserts through the index; other full linear directories get one
 * more block.
 */
errcode_t xr_add_name(ext2_filsys fs, ext2_ino_t dir,
		      const char *name, ext2_ino_t ino, int ftype,
		      const char *target)
{
	/* ext2fs_mkdir and ext2fs_symlink look the name up themselves */
	errcode_t err = ino ? xr_name_free(fs, dir, name) : 0;

	if (!err)
		err = add_name(fs, dir, name, ino, ftype, target);

	if (err != EXT2_ET_DIR_NO_SPACE)
		return err;
	err = xr_dx_make_indexed(fs, dir);
	if (err == EXT2_ET_DIR_NO_SPACE)
		err = ext2fs_expand_dir(fs, dir);
	return err ? err : add_name(fs, dir, name, ino, ftype, target);
}

/* Add NAME -> ino to DIR. */
errcode_t xr_link(ext2_filsys fs, ext2_ino_t dir, const char *name,
		  ext2_ino_t ino, int ftype)
{
	return xr_add_name(fs, dir, name, ino, ftype, NULL);
}
