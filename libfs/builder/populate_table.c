/*
 * populate_table.c --- a key (an archive's normalised path, a host
 * file's device and inode numbers) to the inode the image gave it:
 * open addressing, FNV-1a, the table doubled at three quarters full.
 */
#include <string.h>
#include "populate_int.h"

struct xr_pop_slot {
	char		*key;		/* NULL: free */
	size_t		len;
	ext2_ino_t	ino;
	int		is_dir;
};

static __u64 hash(const unsigned char *k, size_t len)
{
	__u64 h = 0xcbf29ce484222325ULL;

	while (len--)
		h = (h ^ *k++) * 0x100000001b3ULL;
	return h;
}

static struct xr_pop_slot *find(struct xr_pop_slot *v, size_t cap,
				const void *key, size_t len)
{
	size_t i = hash(key, len) & (cap - 1);

	while (v[i].key && (v[i].len != len || memcmp(v[i].key, key, len)))
		i = (i + 1) & (cap - 1);
	return &v[i];
}

static errcode_t grow(struct xr_pop_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024, i;
	struct xr_pop_slot *v;
	errcode_t err = ext2fs_get_arrayzero(cap, sizeof(*v), &v);

	if (err)
		return err;
	for (i = 0; i < t->cap; i++)
		if (t->v[i].key)
			*find(v, cap, t->v[i].key, t->v[i].len) = t->v[i];
	ext2fs_free_mem(&t->v);
	t->v = v;
	t->cap = cap;
	return 0;
}

errcode_t xr_pop_table_put(struct xr_pop_table *t, const void *key,
			   size_t len, ext2_ino_t ino, int is_dir)
{
	struct xr_pop_slot *s;
	errcode_t err;

	if ((t->n + 1) * 4 > t->cap * 3) {
		err = grow(t);
		if (err)
			return err;
	}
	s = find(t->v, t->cap, key, len);
	if (!s->key) {
		err = ext2fs_get_mem(len ? len : 1, &s->key);
		if (err)
			return err;
		memcpy(s->key, key, len);
		s->len = len;
		t->n++;
	}
	s->ino = ino;
	s->is_dir = is_dir;
	return 0;
}

ext2_ino_t xr_pop_table_get(const struct xr_pop_table *t, const void *key,
			    size_t len, int *is_dir)
{
	struct xr_pop_slot *s;

	if (!t->cap)
		return 0;
	s = find(t->v, t->cap, key, len);
	if (!s->key)
		return 0;
	if (is_dir)
		*is_dir = s->is_dir;
	return s->ino;
}

void xr_pop_table_free(struct xr_pop_table *t)
{
	size_t i;

	for (i = 0; i < t->cap; i++)
		ext2fs_free_mem(&t->v[i].key);
	ext2fs_free_mem(&t->v);
	memset(t, 0, sizeof(*t));
}
