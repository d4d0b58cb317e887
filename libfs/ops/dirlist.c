/*
 * dirlist.c --- a directory's entries as an array.
 *
 * For the walks that change the filesystem as they go (a recursive
 * reflink, the times set after mkfs -d), which must not do so from inside
 * ext2fs_dir_iterate, and for those that want the entries in name order
 * (du).  "." and ".." are left out.  The names live in one growing
 * buffer, so a listing is two allocations however long it is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tree/extref_int.h"
#include "extref_ops_int.h"

struct lister {
	struct extref_dirlist	*l;
	char			*names;	/* NUL-terminated, end to end */
	size_t			used, cap;
	errcode_t		err;
};

static int on_entry(struct ext2_dir_entry *d, int offset, int bs, char *buf,
		    void *priv)
{
	struct lister *w = priv;
	struct extref_dirlist *l = w->l;
	int len = ext2fs_dirent_name_len(d);

	(void) offset; (void) bs; (void) buf;
	if (!d->inode || (len == 1 && d->name[0] == '.') ||
	    (len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	w->err = xr_grow(&l->v, &l->cap, l->n, sizeof(*l->v));
	while (!w->err && w->used + len + 1 > w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 1024;

		w->err = ext2fs_resize_mem(w->cap, ncap, &w->names);
		if (!w->err)
			w->cap = ncap;
	}
	if (w->err)
		return DIRENT_ABORT;
	memcpy(w->names + w->used, d->name, len);
	w->names[w->used + len] = 0;
	/* an offset for now: the buffer may still move */
	l->v[l->n].name = (char *)(uintptr_t)w->used;
	l->v[l->n].ino = d->inode;
	l->v[l->n].file_type = ext2fs_dirent_file_type(d);
	l->n++;
	w->used += len + 1;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	const struct extref_dirent *x = a, *y = b;

	return strcmp(x->name, y->name);
}

errcode_t xr_dir_list(ext2_filsys fs, ext2_ino_t dir, int flags,
		      struct extref_dirlist *l)
{
	struct lister w = { .l = l };
	errcode_t err;
	size_t i;

	memset(l, 0, sizeof(*l));
	err = ext2fs_dir_iterate(fs, dir, 0, NULL, on_entry, &w);
	if (!err)
		err = w.err;
	if (err) {
		ext2fs_free_mem(&w.names);
		ext2fs_free_mem(&l->v);
		memset(l, 0, sizeof(*l));
		return err;
	}
	for (i = 0; i < l->n; i++)
		l->v[i].name = w.names + (uintptr_t)l->v[i].name;
	l->names = w.names;
	/* An empty directory has no array: qsort must not see NULL. */
	if ((flags & EXTREF_DIRLIST_SORTED) && l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), by_name);
	return 0;
}

void extref_dir_list_free(struct extref_dirlist *l)
{
	ext2fs_free_mem(&l->names);
	ext2fs_free_mem(&l->v);
	memset(l, 0, sizeof(*l));
}

errcode_t extref_dir_list(extref_fs_t xfs, ext2_ino_t dir, int flags,
			  struct extref_dirlist *l)
{
	return xr_dir_list(extref_fs_ext2(xfs), dir, flags, l);
}
