/*
 * update_layer.c --- one more OCI layer (an archive) applied to an
 * existing image in place (extref_update_layer), with the rules of
 * populate_layers.c: a later entry replaces what the image has at its
 * name (a directory stays for a directory; anything else goes, a
 * directory with everything below it, through xr_upd_remove_tree: shared
 * blocks are counted down, not freed); ".wh.NAME" removes NAME,
 * ".wh..wh..opq" empties its directory of what was there before the
 * layer; neither touches what the layer itself wrote.  A regular file's
 * data is staged in an unnamed file of TMPDIR and written through
 * update_file.c, which shares every block the image already holds.
 * Between two entries the update may be committed (xr_tx_split_point).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "archive_dl.h"
#include "update_int.h"
#include "txn/xr_txio.h"

#define WH		".wh."
#define WH_OPAQUE	".wh..wh..opq"

struct ul {
	struct xr_upd		*up;
	struct archive		*a;
	struct xr_pop_table	own;		/* the layer's paths */
	void			*acl[2];
	int			tmp;		/* the staged data */
	int			ended;		/* the tar's trailer missing */
	char			path[PATH_MAX];
	char			target[PATH_MAX];
	char			name[NAME_MAX + 1];
};

/*
 * path (len bytes, normalised) in the image: *ino (0: absent), *is_dir.
 * With make, missing directories are made (0755, root's).
 */
static errcode_t find(struct ul *l, const char *path, size_t len, int make,
		      ext2_ino_t *ino, int *is_dir)
{
	struct xr_upd *up = l->up;
	struct ext2_inode in;
	size_t at = 0;
	errcode_t err = 0;

	*ino = EXT2_ROOT_INO;
	*is_dir = 1;
	while (at < len && !err) {
		size_t n = strcspn(path + at, "/");
		ext2_ino_t child = 0;

		if (n > len - at)
			n = len - at;
		if (!*is_dir)
			return make ? EXT2_ET_NO_DIRECTORY : (*ino = 0, 0);
		memcpy(l->name, path + at, n);
		l->name[n] = 0;
		err = xr_lookup(up->fs, *ino, l->name, &child);
		if (err == EXT2_ET_FILE_NOT_FOUND && !make) {
			*ino = 0;
			return 0;
		}
		if (err == EXT2_ET_FILE_NOT_FOUND) {
			struct xr_pop_meta m;

			memset(&m, 0, sizeof(m));
			m.mode = LINUX_S_IFDIR | 0755;
			m.atime = m.mtime = m.ctime =
				(struct timespec){ xr_now(up->fs), 0 };
			err = xr_pop_mkdir(&up->p, *ino, l->name, &m, &child);
			in.i_mode = LINUX_S_IFDIR;
		} else if (!err) {
			err = ext2fs_read_inode(up->fs, child, &in);
		}
		*ino = child;
		*is_dir = LINUX_S_ISDIR(in.i_mode);
		at += n + 1;
	}
	return err;
}

static int is_own(struct ul *l, const char *path)
{
	return xr_pop_table_get(&l->own, path, strlen(path), NULL) != 0;
}

/* name (ino) out of dir, unless it is the root's lost+found. */
static errcode_t rm_entry(struct ul *l, ext2_ino_t dir, const char *name,
			ext2_ino_t ino)
{
	if (dir == EXT2_ROOT_INO && !strcmp(name, "lost+found"))
		return 0;
	return xr_upd_remove_tree(l->up, dir, name, ino);
}

/* ".wh..wh..opq" in the directory path[0..len). */
static errcode_t opaque(struct ul *l, size_t len)
{
	struct extref_dirlist dl = { 0 };
	ext2_ino_t dir;
	int is_dir;
	errcode_t err = find(l, l->path, len, 0, &dir, &is_dir);

	if (err || !dir || !is_dir)
		return err;
	err = extref_dir_list(l->up->xfs, dir, EXTREF_DIRLIST_SORTED, &dl);
	for (size_t i = 0; !err && i < dl.n; i++) {
		size_t n = strlen(dl.v[i].name);

		if (len + 1 + n >= PATH_MAX)
			continue;
		memcpy(l->target, l->path, len);
		l->target[len] = '/';
		memcpy(l->target + len + !!len, dl.v[i].name, n + 1);
		if (!is_own(l, l->target))
			err = rm_entry(l, dir, dl.v[i].name, dl.v[i].ino);
	}
	extref_dir_list_free(&dl);
	return err;
}

static errcode_t whiteout(struct ul *l, const char *base)
{
	size_t dlen = base == l->path ? 0 : (size_t)(base - l->path - 1);
	ext2_ino_t dir, ino;
	int is_dir;
	errcode_t err;

	if (!strcmp(base, WH_OPAQUE))
		return opaque(l, dlen);
	if (!strncmp(base, WH WH, 8) || !base[4])
		return 0;			/* aufs's own */
	memcpy(l->target, l->path, dlen);
	l->target[dlen] = '/';
	strcpy(l->target + dlen + !!dlen, base + 4);
	if (is_own(l, l->target))
		return 0;
	err = find(l, l->path, dlen, 0, &dir, &is_dir);
	if (err || !dir || !is_dir)
		return err;
	err = xr_lookup(l->up->fs, dir, base + 4, &ino);
	if (err == EXT2_ET_FILE_NOT_FOUND)
		return 0;
	return err ? err : rm_entry(l, dir, base + 4, ino);
}

/* What the image has at name in dir goes. */
static errcode_t drop_old(struct ul *l, ext2_ino_t dir, const char *name,
			  ext2_ino_t old, const struct ext2_inode *oi)
{
	if (!old)
		return 0;
	if (LINUX_S_ISDIR(oi->i_mode))
		return xr_upd_remove_tree(l->up, dir, name, old);
	return extref_unlink(l->up->xfs, dir, name, EXTREF_UNLINK_KEEP_TIMES);
}

/* The entry's data into l->tmp, from its start; *size its length. */
static errcode_t stage(struct ul *l, struct archive_entry *e, __u64 *size)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int ar;

	*size = 0;
	if (ftruncate(l->tmp, 0) < 0)
		return errno;
	while ((ar = archive_read_data_block(l->a, &buf, &len, &off)) ==
	       ARCHIVE_OK) {
		if (len && pwrite(l->tmp, buf, len, off) != (ssize_t)len)
			return errno ? errno : EXT2_ET_SHORT_WRITE;
		if ((__u64)off + len > *size)
			*size = (__u64)off + len;
	}
	if (archive_entry_size_is_set(e) &&
	    (__u64)archive_entry_size(e) > *size)
		*size = (__u64)archive_entry_size(e);
	/* the tar stops right after this entry's data, without its
	 * padding and end records, as umoci 0.4.7's layers do
	 * (populate_archive.c's trailer_missing): the layer ends here */
	if (ar != ARCHIVE_EOF && xr_archive_truncated_after(l->a, e, *size))
		l->ended = 1;
	else if (ar != ARCHIVE_EOF) {
		xr_pop_fail(&l->up->p, l->path, archive_error_string(l->a));
		return EXTREF_ERR_ARCHIVE;
	}
	if (ftruncate(l->tmp, (off_t)*size) < 0)
		return errno;
	return 0;
}

static errcode_t xattrs_of(struct ul *l, struct archive_entry *e,
			   struct xr_pop_meta *m)
{
	struct xr_pop_xattrs *x = &l->up->xa;
	const char *name;
	const void *value;
	char why[160];
	size_t len;
	int dir = LINUX_S_ISDIR(m->mode);
	errcode_t err = 0;

	xr_pop_xattrs_reset(x);
	archive_entry_xattr_reset(e);
	while (!err && archive_entry_xattr_next(e, &name, &value, &len) ==
	       ARCHIVE_OK)
		if (dir || strcmp(name, "system.posix_acl_default"))
			err = xr_pop_xattrs_add(x, name, value, len);
	if (!err)
		err = xr_pop_archive_acls(e, x, l->acl, dir, &m->mode, why,
					  sizeof(why));
	if (err == EXTREF_ERR_ARCHIVE_ACL)
		xr_pop_fail(&l->up->p, l->path, why);
	return err;
}

static errcode_t make(struct ul *l, struct archive_entry *e, ext2_ino_t dir,
		      const char *base, const struct xr_pop_meta *m,
		      ext2_ino_t old, const struct ext2_inode *oi,
		      ext2_ino_t *ino)
{
	struct xr_upd *up = l->up;
	const char *target;
	__u64 size;
	errcode_t err = 0;

	switch (m->mode & LINUX_S_IFMT) {
	case LINUX_S_IFDIR:
		if (old && LINUX_S_ISDIR(oi->i_mode)) {
			*ino = old;
			return 0;
		}
		err = drop_old(l, dir, base, old, oi);
		return err ? err : xr_pop_mkdir(&up->p, dir, base, m, ino);
	case LINUX_S_IFREG:
		err = stage(l, e, &size);
		if (!err)
			err = xr_upd_file(up, l->tmp, dir, m, size,
					  old && LINUX_S_ISREG(oi->i_mode) &&
					  oi->i_links_count == 1 ? old : 0,
					  ino);
		if (!err && *ino != old)
			err = drop_old(l, dir, base, old, oi);
		if (!err && *ino != old)
			err = xr_link(up->fs, dir, base, *ino,
				      EXT2_FT_REG_FILE);
		return err;
	case LINUX_S_IFLNK:
		target = archive_entry_symlink(e);
		if (!target)
			return EXTREF_ERR_ARCHIVE;
		err = drop_old(l, dir, base, old, oi);
		return err ? err : xr_pop_symlink(&up->p, dir, base, m, target,
						  ino);
	default:
		err = drop_old(l, dir, base, old, oi);
		return err ? err : xr_pop_special(&up->p, dir, base, m, ino);
	}
}

static errcode_t hardlink(struct ul *l, const char *link, ext2_ino_t dir,
			  const char *base, ext2_ino_t old,
			  const struct ext2_inode *oi)
{
	ext2_ino_t ino;
	int is_dir;
	errcode_t err;

	while (*link == '/')
		link++;
	if (xr_pop_normalise(link, l->target, sizeof(l->target)) ||
	    !strcmp(l->target, l->path))
		return EXTREF_ERR_ARCHIVE_LINK;
	err = find(l, l->target, strlen(l->target), 0, &ino, &is_dir);
	if (!err && (!ino || is_dir))
		err = EXTREF_ERR_ARCHIVE_LINK;
	if (err || ino == old)
		return err;
	if (old && LINUX_S_ISDIR(oi->i_mode))
		return EXTREF_ERR_ARCHIVE_LINK;	/* may hold the target */
	err = drop_old(l, dir, base, old, oi);
	return err ? err : xr_pop_hardlink(&l->up->p, dir, base, ino);
}

static errcode_t one(struct ul *l, struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e), *link, *base, *why;
	struct ext2_inode oi;
	struct xr_pop_meta m;
	ext2_ino_t dir, old = 0, ino = 0;
	int is_dir;
	errcode_t err;

	if (!name)
		return EXTREF_ERR_ARCHIVE;
	while (*name == '/')
		name++;
	if (xr_pop_normalise(name, l->path, sizeof(l->path)))
		return EXTREF_ERR_ARCHIVE_PATH;
	if ((why = xr_path_why(l->path, 1))) {
		xr_pop_fail(&l->up->p, l->path, why);
		return EXTREF_ERR_SOURCE_BAD_NAME;
	}
	l->up->u->entries++;
	base = strrchr(l->path, '/');
	base = base ? base + 1 : l->path;
	if (!strncmp(base, WH, 4))
		return whiteout(l, base);
	link = archive_entry_hardlink(e);
	err = find(l, l->path, base == l->path ? 0 :
		   (size_t)(base - l->path - 1), 1, &dir, &is_dir);
	if (!err && !is_dir)
		err = EXT2_ET_NO_DIRECTORY;
	if (!err && *base) {
		err = xr_lookup(l->up->fs, dir, base, &old);
		if (err == EXT2_ET_FILE_NOT_FOUND)
			err = old = 0;
		else if (!err)
			err = ext2fs_read_inode(l->up->fs, old, &oi);
	}
	if (err)
		return err;
	if (link) {
		err = hardlink(l, link, dir, base, old, &oi);
		goto own;
	}
	err = xr_pop_archive_meta(e, &m);
	if (!err)
		err = xattrs_of(l, e, &m);
	if (!err && !*base)		/* the root: its owner and mode stay */
		return LINUX_S_ISDIR(m.mode) ?
			xr_pop_set_meta(&l->up->p, EXT2_ROOT_INO, &m, 0, 0) :
			EXTREF_ERR_ARCHIVE_ROOT;
	if (!err)
		err = make(l, e, dir, base, &m, old, &oi, &ino);
	if (!err)
		err = xr_upd_sync_xattrs(l->up, ino, &l->up->xa, 1);
	if (!err)
		err = xr_pop_set_meta(&l->up->p, ino, &m, 1, 1);
own:
	if (!err)
		err = xr_pop_table_put(&l->own, l->path, strlen(l->path), 1, 0);
	return err;
}

static int open_tmp(void)
{
	const char *dir = getenv("TMPDIR");

	if (!dir || !*dir)
		dir = "/var/tmp";
	return open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
}

errcode_t xr_upd_layer(struct xr_upd *up, int fd)
{
	struct archive_entry *e;
	const char *why = NULL;
	struct ul *l;
	errcode_t err = xr_archive_load(&why);
	int ar = ARCHIVE_EOF;

	if (err) {
		xr_pop_fail(&up->p, "", why);
		return err;
	}
	err = xr_upd_layer_prescan(up, fd);
	if (err)
		return err;
	err = ext2fs_get_memzero(sizeof(*l), &l);
	if (err)
		return err;
	l->up = up;
	l->tmp = open_tmp();
	if (l->tmp < 0)
		err = errno;
	if (!err && !(l->a = archive_read_new()))
		err = EXT2_ET_NO_MEMORY;
	if (!err) {
		archive_read_support_filter_all(l->a);
		archive_read_support_format_tar(l->a);
		archive_read_support_format_gnutar(l->a);
		if (archive_read_open_fd(l->a, fd, 65536) != ARCHIVE_OK)
			err = EXTREF_ERR_ARCHIVE;
	}
	while (!err && !l->ended &&
	       ((ar = archive_read_next_header(l->a, &e)) == ARCHIVE_OK ||
		ar == ARCHIVE_WARN)) {
		err = one(l, e);
		if (err)
			xr_pop_fail(&up->p, l->path, NULL);
		if (!err)
			err = xr_tx_split_point(up->xfs);
	}
	if (!err && !l->ended && ar != ARCHIVE_EOF)
		err = EXTREF_ERR_ARCHIVE;
	if (err == EXTREF_ERR_ARCHIVE && l->a)
		xr_pop_fail(&up->p, "", archive_error_string(l->a));
	if (l->a)
		archive_read_free(l->a);
	if (l->tmp >= 0)
		close(l->tmp);
	xr_pop_table_free(&l->own);
	ext2fs_free_mem(&l->acl[0]);
	ext2fs_free_mem(&l->acl[1]);
	ext2fs_free_mem(&l);
	return err;
}
