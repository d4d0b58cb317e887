/*
 * ranges.c --- arrays of block ranges and of mappings, for the file
 * operations (the growth rule itself is the tree layer's xr_grow).
 */
#include "tree/extref_int.h"
#include "extent/xr_extent.h"

/* Append a physical range, merging it with the last one when they touch. */
errcode_t xr_prange_push(struct xr_prange_vec *v, blk64_t pblk, blk64_t len)
{
	errcode_t err;

	if (len == 0)
		return 0;
	if (v->n && v->v[v->n - 1].pblk + v->v[v->n - 1].len == pblk) {
		v->v[v->n - 1].len += len;
		return 0;
	}
	err = xr_grow(&v->v, &v->cap, v->n, sizeof(*v->v));
	if (err)
		return err;
	v->v[v->n].pblk = pblk;
	v->v[v->n].len = len;
	v->n++;
	return 0;
}

errcode_t xr_map_push(struct xr_map_vec *v, const struct xr_map *m)
{
	errcode_t err = xr_grow(&v->v, &v->cap, v->n, sizeof(*v->v));

	if (err)
		return err;
	v->v[v->n++] = *m;
	return 0;
}

void xr_prange_vec_free(struct xr_prange_vec *v)
{
	ext2fs_free_mem(&v->v);
	v->n = v->cap = 0;
}

void xr_map_vec_free(struct xr_map_vec *v)
{
	ext2fs_free_mem(&v->v);
	v->n = v->cap = 0;
}
