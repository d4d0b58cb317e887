/*
 * vec.c --- growable arrays: the growth rule, and arrays of block ranges
 * for the file operations.
 */
#include "extref_int.h"
#include "extref_ops_int.h"

/*
 * Make room for element n of an array of esz-byte elements at *vp whose
 * capacity is *cap, doubling it (from 16) when full.
 */
errcode_t xr_grow(void *vp, size_t *cap, size_t n, size_t esz)
{
	size_t ncap;
	errcode_t err;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	err = ext2fs_resize_mem(*cap * esz, ncap * esz, vp);
	if (!err)
		*cap = ncap;
	return err;
}

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
