/*
 * dirent.c --- names in a directory: a name checked free, and a name
 * added (a link to an inode, or a new directory or symlink), the
 * directory indexed or grown when full; an entry pointed at another
 * inode; a directory found empty; removal is dirclean.c's
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

static int count_entry(struct ext2_dir_entry *d, int offset, int bs,
		       char *buf, void *priv)
{
	int *n = priv;
	int len = ext2fs_dirent_name_len(d);

	(void) offset; (void) bs; (void) buf;
	if (d->inode && !(len == 1 && d->name[0] == '.') &&
	    !(len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		(*n)++;
	return 0;
}

/* DIR holds nothing but "." and ".." (else EXTREF_ERR_DIR_NOT_EMPTY). */
errcode_t xr_dir_empty(ext2_filsys fs, ext2_ino_t dir)
{
	int n = 0;
	errcode_t err = ext2fs_dir_iterate(fs, dir, 0, NULL, count_entry, &n);

	return err ? err : (n ? EXTREF_ERR_DIR_NOT_EMPTY : 0);
}

struct set_entry {
	const char	*name;
	size_t		len;
	ext2_ino_t	ino;
	int		ftype;	/* -1: the filesystem keeps no file types */
	int		done;
};

static int set_entry_proc(struct ext2_dir_entry *d, int offset, int bs,
			  char *buf, void *priv)
{
	struct set_entry *s = priv;

	(void) offset; (void) bs; (void) buf;
	if (!d->inode || (size_t)ext2fs_dirent_name_len(d) != s->len ||
	    memcmp(d->name, s->name, s->len))
		return 0;
	d->inode = s->ino;
	if (s->ftype >= 0)
		ext2fs_dirent_set_file_type(d, s->ftype);
	s->done = 1;
	return DIRENT_CHANGED | DIRENT_ABORT;
}

/*
 * The entry NAME in DIR (which must hold it: EXT2_ET_FILE_NOT_FOUND)
 * made to name ino, of file type ftype, in place: a rename over an
 * existing name, and a moved directory's "..".  The name, and so its
 * place in an htree index, is unchanged.
 */
errcode_t xr_set_entry(ext2_filsys fs, ext2_ino_t dir, const char *name,
		       ext2_ino_t ino, int ftype)
{
	struct set_entry s = { .name = name, .len = strlen(name), .ino = ino,
			       .ftype = ext2fs_has_feature_filetype(fs->super) ?
					ftype : -1 };
	errcode_t err = ext2fs_dir_iterate(fs, dir, 0, NULL, set_entry_proc,
					   &s);

	return err ? err : s.done ? 0 : EXT2_ET_FILE_NOT_FOUND;
}

static int dotdot_proc(ext2_ino_t dir, int entry, struct ext2_dir_entry *d,
		       int offset, int bs, char *buf, void *priv)
{
	(void) dir; (void) d; (void) offset; (void) bs; (void) buf;
	if (entry != DIRENT_DOT_DOT_FILE)
		return 0;
	*(ext2_ino_t *)priv = d->inode;
	return DIRENT_ABORT;
}

/*
 * DIR's parent, as its ".." entry names it (0 when it has none): read
 * from its first block, where ".." is whether or not DIR is indexed.
 */
errcode_t xr_dotdot(ext2_filsys fs, ext2_ino_t dir, ext2_ino_t *parent)
{
	*parent = 0;
	return ext2fs_dir_iterate2(fs, dir, 0, NULL, dotdot_proc, parent);
}
