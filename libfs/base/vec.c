/*
 * vec.c --- growable arrays: the growth rule, and big arrays in mappings
 * of their own.
 */
#define _GNU_SOURCE	/* mremap */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "extref_vec.h"
#include "xr_fault.h"

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
#ifdef EXTREF_FAULT_INJECTION
	if (xr_fault_nomem())
		return EXT2_ET_NO_MEMORY;
#endif
	ncap = *cap ? *cap * 2 : 16;
	err = ext2fs_resize_mem(*cap * esz, ncap * esz, vp);
	if (!err)
		*cap = ncap;
	return err;
}

/*
 * Arrays as long as the image has extents (the checker's mappings): past
 * BIG_MIN bytes they live in their own anonymous mapping, grown with
 * mremap (page tables moved, nothing copied) and backed by transparent
 * huge pages where the kernel offers them on request: filling 16 MiB a
 * 4 KiB page fault at a time costs more than the filling.  Which kind a
 * capacity is follows from its size alone.  Sanitizer builds keep to
 * malloc, so that every access stays checked.
 */
#define BIG_MIN		(1UL << 20)
#define BIG_ALIGN	(2UL << 20)	/* a huge page */

#if defined(__SANITIZE_ADDRESS__) || !defined(MREMAP_MAYMOVE)
#define BIG_MAPPED(bytes)	0
#else
#define BIG_MAPPED(bytes)	((bytes) >= BIG_MIN)
#endif

static size_t big_round(size_t bytes)
{
	return (bytes + BIG_ALIGN - 1) & ~(BIG_ALIGN - 1);
}

static errcode_t big_remap(void **p, size_t old, size_t bytes)
{
	void *q;

	if (old)
		q = mremap(*p, big_round(old), big_round(bytes),
			   MREMAP_MAYMOVE);
	else
		q = mmap(NULL, big_round(bytes), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q == MAP_FAILED)
		return EXT2_ET_NO_MEMORY;
#ifdef MADV_HUGEPAGE
	(void) madvise(q, big_round(bytes), MADV_HUGEPAGE);
#endif
	*p = q;
	return 0;
}

errcode_t xr_big_grow(void *vp, size_t *cap, size_t n, size_t esz)
{
	void **p = vp, *q = NULL;
	size_t ncap, old, bytes;
	errcode_t err;

	if (n < *cap)
		return 0;
#ifdef EXTREF_FAULT_INJECTION
	if (xr_fault_nomem())
		return EXT2_ET_NO_MEMORY;
#endif
	ncap = *cap ? *cap * 2 : 16;
	if (ncap > SIZE_MAX / 2 / esz)
		return EXT2_ET_NO_MEMORY;
	old = *cap * esz;
	bytes = ncap * esz;
	if (!BIG_MAPPED(bytes))
		return xr_grow(vp, cap, n, esz);
	if (BIG_MAPPED(old)) {
		err = big_remap(p, old, bytes);
	} else {
		err = big_remap(&q, 0, bytes);
		if (!err && old)
			memcpy(q, *p, old);
		if (!err) {
			ext2fs_free_mem(p);
			*p = q;
		}
	}
	if (!err)
		*cap = ncap;
	return err;
}

void xr_big_free(void *vp, size_t *cap, size_t esz)
{
	void **p = vp;

	if (*p && BIG_MAPPED(*cap * esz))
		munmap(*p, big_round(*cap * esz));
	else
		ext2fs_free_mem(p);
	*p = NULL;
	*cap = 0;
}
