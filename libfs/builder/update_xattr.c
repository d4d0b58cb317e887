/*
 * update_xattr.c --- an inode's extended attributes made the source's:
 * the ones that differ or are missing are set, and (exact) the ones the
 * source lacks are removed; an inode that already has them is not
 * written at all (an update with unchanged input changes nothing).
 */
#include <stdlib.h>
#include <string.h>
#include "update_int.h"
#include "base/extref_vec.h"

struct extra {
	const struct xr_pop_xattrs *x;
	char		**names;	/* the image's, not in x */
	size_t		n, cap;
	errcode_t	err;
};

static int in_source(const struct xr_pop_xattrs *x, const char *name)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		if (!strcmp(x->v[i].name, name))
			return 1;
	return 0;
}

static int note_extra(char *name, char *value, size_t len, void *priv)
{
	struct extra *e = priv;

	(void)value; (void)len;
	if (in_source(e->x, name))
		return 0;
	e->err = xr_grow(&e->names, &e->cap, e->n, sizeof(char *));
	if (!e->err && !(e->names[e->n] = strdup(name)))
		e->err = EXT2_ET_NO_MEMORY;
	if (e->err)
		return XATTR_ABORT;
	e->n++;
	return 0;
}

/* Does h hold name with exactly this value? */
static int has_value(struct ext2_xattr_handle *h, const char *name,
		     const void *value, size_t len)
{
	void *v = NULL;
	size_t vl = 0;
	int same;

	if (ext2fs_xattr_get(h, name, &v, &vl))
		return 0;
	same = vl == len && (!len || !memcmp(v, value, len));
	ext2fs_free_mem(&v);
	return same;
}

static errcode_t sync_open(struct ext2_xattr_handle *h,
			   const struct xr_pop_xattrs *x, int exact)
{
	struct extra e = { .x = x };
	errcode_t err = exact ? ext2fs_xattrs_iterate(h, note_extra, &e) : 0;
	size_t i;

	if (!err)
		err = e.err;
	for (i = 0; !err && i < e.n; i++)
		err = ext2fs_xattr_remove(h, e.names[i]);
	for (i = 0; !err && i < x->n; i++)
		if (!has_value(h, x->v[i].name, x->v[i].value, x->v[i].len))
			err = ext2fs_xattr_set(h, x->v[i].name,
					       x->v[i].value, x->v[i].len);
	for (i = 0; i < e.n; i++)
		free(e.names[i]);
	ext2fs_free_mem(&e.names);
	return err;
}

errcode_t xr_upd_sync_xattrs(struct xr_upd *up, ext2_ino_t ino,
			     const struct xr_pop_xattrs *x, int exact)
{
	struct ext2_xattr_handle *h = NULL;
	errcode_t err, e2;

	if (!ext2fs_has_feature_xattr(up->fs->super))
		return x->n ? EXT2_ET_MISSING_EA_FEATURE : 0;
	err = ext2fs_xattrs_open(up->fs, ino, &h);
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	if (!err)
		err = sync_open(h, x, exact);
	e2 = ext2fs_xattrs_close(&h);
	return err ? err : e2;
}
