/*
 * tar_meta.c --- what an archive says about each of its entries, kept
 * in memory by normalised path (no "./", no "//", no trailing "/"; ""
 * is the root) while the host holds only owner-only placeholders.
 * Hard links share one record.  An entry met again replaces the record
 * of its path, as unpacking it again would.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs.h"

struct slot {
	char		*path;
	struct tar_meta	*meta;
};

static struct {
	struct slot	*v;
	size_t		cap, n;		/* cap a power of 2, or 0 */
} tab;

static uint64_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

static struct slot *find(struct slot *v, size_t cap, const char *path)
{
	size_t i = hash(path) & (cap - 1);

	while (v[i].path && strcmp(v[i].path, path))
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static int grow(void)
{
	size_t cap = tab.cap ? tab.cap * 2 : 1024, i;
	struct slot *v = calloc(cap, sizeof(*v));

	if (!v)
		return ENOMEM;
	for (i = 0; i < tab.cap; i++)
		if (tab.v[i].path)
			*find(v, cap, tab.v[i].path) = tab.v[i];
	free(tab.v);
	tab.v = v;
	tab.cap = cap;
	return 0;
}

static void release(struct tar_meta *m)
{
	size_t i;

	if (!m || --m->refs)
		return;
	for (i = 0; i < m->n_xattr; i++) {
		free(m->xattr[i].name);
		free(m->xattr[i].value);
	}
	free(m->xattr);
	free(m);
}

int tar_meta_put(const char *path, struct tar_meta *meta)
{
	struct slot *s;

	if ((tab.n + 1) * 4 > tab.cap * 3 && grow())
		return ENOMEM;
	s = find(tab.v, tab.cap, path);
	if (!s->path) {
		s->path = strdup(path);
		if (!s->path)
			return ENOMEM;
		tab.n++;
	} else {
		release(s->meta);
	}
	meta->refs++;
	s->meta = meta;
	return 0;
}

struct tar_meta *tar_meta_get(const char *path)
{
	struct slot *s;

	if (!tab.cap)
		return NULL;
	s = find(tab.v, tab.cap, path);
	return s->path ? s->meta : NULL;
}

int tar_meta_add_xattr(struct tar_meta *m, const char *name,
		       const void *value, size_t len)
{
	struct tar_xattr *v = realloc(m->xattr,
				      (m->n_xattr + 1) * sizeof(*v));
	struct tar_xattr *x;

	if (!v)
		return ENOMEM;
	m->xattr = v;
	x = &v[m->n_xattr];
	x->name = strdup(name);
	x->value = malloc(len ? len : 1);
	x->len = len;
	if (!x->name || !x->value) {
		free(x->name);
		free(x->value);
		return ENOMEM;
	}
	memcpy(x->value, value, len);
	m->n_xattr++;
	return 0;
}

void tar_meta_free_all(void)
{
	size_t i;

	for (i = 0; i < tab.cap; i++) {
		if (!tab.v[i].path)
			continue;
		free(tab.v[i].path);
		release(tab.v[i].meta);
	}
	free(tab.v);
	memset(&tab, 0, sizeof(tab));
}
