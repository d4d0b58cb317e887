/*
 * extref_vec.h --- growable arrays (base/vec.c), shared by the layers.
 *
 * The one piece of the tree layer's helpers that the other layers use
 * for their own arrays; it does not expose the tree itself.
 */
#ifndef EXTREF_VEC_H
#define EXTREF_VEC_H

#include "extref.h"

/*
 * Make room for element n of the array at *vp (esz-byte elements,
 * capacity *cap elements), doubling it (from 16) when full.  xr_big_grow
 * is for arrays as long as the image has extents (the checker's
 * mappings): past 1 MiB they live in a mapping of their own; such an
 * array is freed with xr_big_free only.
 */
errcode_t xr_grow(void *vp, size_t *cap, size_t n, size_t esz);
errcode_t xr_big_grow(void *vp, size_t *cap, size_t n, size_t esz);
void xr_big_free(void *vp, size_t *cap, size_t esz);

#endif /* EXTREF_VEC_H */
