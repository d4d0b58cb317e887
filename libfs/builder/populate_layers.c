/*
 * populate_layers.c --- layers, as an OCI image applies them: each
 * archive after the first is written over what the ones before left in
 * the image.  A later entry replaces an earlier one (a directory stays
 * for a directory, its metadata the later one's; anything else goes,
 * a directory with everything below it); a hard link may name a file of
 * a layer below.  In an OCI layer, ".wh.NAME" removes NAME as the layers
 * below left it and ".wh..wh..opq" in a directory removes what the
 * layers below put there; neither touches what its own layer wrote (the
 * image-spec's rule) and neither is written itself.  The image root's
 * lost+found stays (e2fsck needs it).
 *
 * The layers below are read from the image (one lookup a component;
 * their directories cached until something is removed); this layer's
 * paths from the reader's table, where a removed one is marked 0.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "populate_layers.h"

#define WH		".wh."
#define WH_LEN		4
#define WH_OPAQUE	".wh..wh..opq"

errcode_t xr_layer_find(struct rd *r, const char *path, size_t len,
			ext2_ino_t *ino, int *is_dir)
{
	const char *slash, *base;
	struct ext2_inode in;
	ext2_ino_t parent;
	int pdir = 0;
	errcode_t err;

	*ino = 0;
	*is_dir = 0;
	if (!len) {
		*ino = EXT2_ROOT_INO;
		*is_dir = 1;
		return 0;
	}
	*ino = xr_pop_table_get(&r->paths, path, len, is_dir);
	if (!*ino)
		*ino = xr_pop_table_get(&r->lower, path, len, is_dir);
	if (*ino)
		return 0;
	slash = memrchr(path, '/', len);
	err = xr_layer_find(r, path, slash ? (size_t)(slash - path) : 0,
			    &parent, &pdir);
	if (err || !parent || !pdir) {
		*ino = 0;
		return err;
	}
	base = slash ? slash + 1 : path;
	err = ext2fs_lookup(r->p->fs, parent, base, (int)(len - (base - path)),
			    NULL, ino);
	if (err == EXT2_ET_FILE_NOT_FOUND) {
		*ino = 0;
		return 0;
	}
	if (!err)
		err = ext2fs_read_inode(r->p->fs, *ino, &in);
	if (err)
		return err;
	*is_dir = LINUX_S_ISDIR(in.i_mode);
	return *is_dir ? xr_pop_table_put(&r->lower, path, len, *ino, 1) : 0;
}

/* The names in directory ino (not "." nor ".."), malloc'd. */
struct names {
	char		**v;
	size_t		n, cap;
	errcode_t	err;
};

static int add_name(struct ext2_dir_entry *de, int offset, int blocksize,
		    char *buf, void *priv)
{
	struct names *l = priv;
	int len = ext2fs_dirent_name_len(de);
	char *s;

	(void)offset; (void)blocksize; (void)buf;
	if ((len == 1 && de->name[0] == '.') ||
	    (len == 2 && de->name[0] == '.' && de->name[1] == '.'))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->err = EXT2_ET_NO_MEMORY;
			return DIRENT_ABORT;
		}
		l->v = v;
		l->cap = cap;
	}
	s = strndup(de->name, (size_t)len);
	if (!s) {
		l->err = EXT2_ET_NO_MEMORY;
		return DIRENT_ABORT;
	}
	l->v[l->n++] = s;
	return 0;
}

static errcode_t list_names(ext2_filsys fs, ext2_ino_t dir, struct names *l)
{
	errcode_t err;

	memset(l, 0, sizeof(*l));
	err = ext2fs_dir_iterate(fs, dir, 0, NULL, add_name, l);
	return err ? err : l->err;
}

static void free_names(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/*
 * path (plen bytes of the PATH_MAX buffer path, name in dir, inode ino)
 * out of the image, depth first; this layer's table forgets it.
 */
static errcode_t remove_tree(struct rd *r, char *path, size_t plen,
			     ext2_ino_t dir, const char *name, ext2_ino_t ino)
{
	struct ext2_inode in;
	struct names l;
	int is_dir = 0;
	errcode_t err = ext2fs_read_inode(r->p->fs, ino, &in);

	if (!err && xr_pop_table_get(&r->paths, path, plen, &is_dir))
		err = xr_pop_table_put(&r->paths, path, plen, 0, 0);
	if (err)
		return err;
	if (!LINUX_S_ISDIR(in.i_mode))
		return xr_pop_remove(r->p, dir, name, ino);
	err = list_names(r->p->fs, ino, &l);
	for (size_t i = 0; !err && i < l.n; i++) {
		size_t n = strlen(l.v[i]);
		ext2_ino_t child;

		if (plen + 1 + n + 1 > PATH_MAX) {
			err = EXTREF_ERR_ARCHIVE_PATH;
			break;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, l.v[i], n + 1);
		err = ext2fs_lookup(r->p->fs, ino, l.v[i], (int)n, NULL,
				    &child);
		if (!err)
			err = remove_tree(r, path, plen + 1 + n, ino, l.v[i],
					  child);
		path[plen] = 0;
	}
	free_names(&l);
	return err ? err : xr_pop_remove_dir(r->p, dir, name, ino);
}

/* path (len bytes), inode ino, out of the image; the cache emptied. */
static errcode_t remove_path(struct rd *r, const char *path, size_t len,
			     ext2_ino_t ino)
{
	const char *slash = memrchr(path, '/', len);
	ext2_ino_t dir;
	int is_dir;
	errcode_t err;

	if (!len)
		return EXTREF_ERR_ARCHIVE_ROOT;
	if (!slash && len == 10 && !memcmp(path, "lost+found", 10))
		return 0;
	err = xr_layer_find(r, path, slash ? (size_t)(slash - path) : 0,
			    &dir, &is_dir);
	if (!err && (!dir || !is_dir))
		err = EXT2_ET_NO_DIRECTORY;
	if (!err) {
		char buf[PATH_MAX];

		memcpy(buf, path, len);
		buf[len] = 0;
		err = remove_tree(r, buf, len, dir,
				  buf + (slash ? slash + 1 - path : 0), ino);
	}
	xr_pop_table_free(&r->lower);
	return err;
}

errcode_t xr_layer_replace(struct rd *r, int keep_dir, ext2_ino_t *ino)
{
	size_t len = strlen(r->path);
	int is_dir = 0;
	errcode_t err;

	*ino = 0;
	if (!r->layer || xr_pop_table_get(&r->paths, r->path, len, NULL))
		return 0;
	err = xr_layer_find(r, r->path, len, ino, &is_dir);
	if (err || !*ino || (is_dir && keep_dir))
		return err;
	err = remove_path(r, r->path, len, *ino);
	*ino = 0;
	return err;
}

int xr_layer_is_whiteout(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, WH, WH_LEN);
}

/* ".wh..wh..opq" in directory r->path[0..len): the layers below's
 * entries there go. */
static errcode_t opaque(struct rd *r, size_t len)
{
	char child[PATH_MAX];
	struct names l;
	ext2_ino_t dir, ino;
	int is_dir = 0;
	errcode_t err = xr_layer_find(r, r->path, len, &dir, &is_dir);

	if (err || !dir || !is_dir)
		return err;
	err = list_names(r->p->fs, dir, &l);
	for (size_t i = 0; !err && i < l.n; i++) {
		size_t n = strlen(l.v[i]);

		if (len + 1 + n >= PATH_MAX) {
			err = EXTREF_ERR_ARCHIVE_PATH;
			break;
		}
		memcpy(child, r->path, len);
		child[len] = '/';
		memcpy(child + len + !!len, l.v[i], n + 1);
		if (xr_pop_table_get(&r->paths, child, len + !!len + n, NULL))
			continue;		/* this layer's own */
		err = ext2fs_lookup(r->p->fs, dir, l.v[i], (int)n, NULL, &ino);
		if (!err)
			err = remove_path(r, child, len + !!len + n, ino);
	}
	free_names(&l);
	return err;
}

errcode_t xr_layer_whiteout(struct rd *r)
{
	char *base = strrchr(r->path, '/');
	size_t dlen = base ? (size_t)(base - r->path) : 0;
	char full[PATH_MAX];
	ext2_ino_t ino;
	int is_dir;
	errcode_t err;

	base = base ? base + 1 : r->path;
	if (!strcmp(base, WH_OPAQUE))
		return opaque(r, dlen);
	if (!strncmp(base, WH WH, 2 * WH_LEN))
		return 0;			/* aufs's own: dropped */
	/* path without the ".wh." */
	memcpy(full, r->path, dlen);
	full[dlen] = '/';
	strcpy(full + dlen + !!dlen, base + WH_LEN);
	if (!base[WH_LEN] || xr_pop_table_get(&r->paths, full, strlen(full),
					      NULL))
		return 0;		/* nothing named, or this layer's */
	err = xr_layer_find(r, full, strlen(full), &ino, &is_dir);
	if (err || !ino)
		return err;
	return remove_path(r, full, strlen(full), ino);
}
