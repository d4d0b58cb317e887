/*
 * fsck_sort.c --- in-place sorts for the checker's big arrays.
 *
 * glibc's qsort is a merge sort that allocates a copy of the array and
 * calls a comparison function per step; these typed quicksorts (Hoare
 * partition, median of three, insertion sort for short runs, heapsort
 * when the recursion gets too deep) need no extra memory.
 */
#include "extref_fsck_int.h"

#define DEFINE_SORT(NAME, T, LT)					\
static void NAME##_insertion(T *v, size_t n)				\
{									\
	size_t i, j;							\
	for (i = 1; i < n; i++) {					\
		T x = v[i];						\
		for (j = i; j > 0 && LT(&x, &v[j - 1]); j--)		\
			v[j] = v[j - 1];				\
		v[j] = x;						\
	}								\
}									\
static void NAME##_sift(T *v, size_t root, size_t n)			\
{									\
	for (;;) {							\
		size_t c = 2 * root + 1;				\
		T t;							\
		if (c >= n)						\
			return;						\
		if (c + 1 < n && LT(&v[c], &v[c + 1]))			\
			c++;						\
		if (!LT(&v[root], &v[c]))				\
			return;						\
		t = v[root]; v[root] = v[c]; v[c] = t;			\
		root = c;						\
	}								\
}									\
static void NAME##_heap(T *v, size_t n)					\
{									\
	size_t i;							\
	T t;								\
	for (i = n / 2; i-- > 0;)					\
		NAME##_sift(v, i, n);					\
	for (i = n; i-- > 1;) {						\
		t = v[0]; v[0] = v[i]; v[i] = t;			\
		NAME##_sift(v, 0, i);					\
	}								\
}									\
static void NAME##_rec(T *v, size_t n, int depth)			\
{									\
	while (n > 16) {						\
		size_t i, j, m = n / 2;					\
		T p, t;							\
		if (depth-- == 0) {					\
			NAME##_heap(v, n);				\
			return;						\
		}							\
		if (LT(&v[m], &v[0])) { t = v[m]; v[m] = v[0]; v[0] = t; } \
		if (LT(&v[n - 1], &v[0])) { t = v[n-1]; v[n-1] = v[0]; v[0] = t; } \
		if (LT(&v[n - 1], &v[m])) { t = v[n-1]; v[n-1] = v[m]; v[m] = t; } \
		p = v[m];						\
		i = 0;							\
		j = n - 1;						\
		for (;;) {						\
			while (LT(&v[i], &p))				\
				i++;					\
			while (LT(&p, &v[j]))				\
				j--;					\
			if (i >= j)					\
				break;					\
			t = v[i]; v[i] = v[j]; v[j] = t;		\
			i++;						\
			j--;						\
		}							\
		/* [0, j] <= p <= [j+1, n): recurse on the smaller side */ \
		if (j + 1 < n - j - 1) {				\
			NAME##_rec(v, j + 1, depth);			\
			v += j + 1;					\
			n -= j + 1;					\
		} else {						\
			NAME##_rec(v + j + 1, n - j - 1, depth);	\
			n = j + 1;					\
		}							\
	}								\
	NAME##_insertion(v, n);						\
}									\
void NAME(T *v, size_t n)						\
{									\
	int depth = 0;							\
	size_t k;							\
	for (k = n; k; k >>= 1)						\
		depth += 2;						\
	NAME##_rec(v, n, depth);					\
}

#define MAP_LT(a, b) ((a)->pblk < (b)->pblk || \
		      ((a)->pblk == (b)->pblk && (a)->ino < (b)->ino))
#define U64_LT(a, b) (*(a) < *(b))
#define META_LT(a, b) ((a)->pblk < (b)->pblk)

DEFINE_SORT(xr_sort_mappings, struct xr_mapping, MAP_LT)
DEFINE_SORT(xr_sort_u64, __u64, U64_LT)
DEFINE_SORT(xr_sort_meta, struct xr_meta, META_LT)
