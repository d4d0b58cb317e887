/*
 * fsck_sort.c --- in-place sorts for the checker's big arrays.
 *
 * glibc's qsort is a merge sort that allocates a copy of the array and
 * calls a comparison function per step; these typed quicksorts (Hoare
 * partition, median of three, insertion sort for short runs, heapsort
 * when the recursion gets too deep) need no extra memory.  The mappings,
 * the one array as long as the image has extents, are first put in
 * order of their block numbers' high bits by an in-place radix sort
 * (American flag sort: a byte at a time from the most significant, each
 * bucket then sorted on the next byte), which leaves buckets short
 * enough for the quicksort to finish cheaply.
 */
#include <stdint.h>
#include <string.h>
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
#define META_LT(a, b) ((a)->pblk < (b)->pblk)
#define PARENT_LT(a, b) ((a)->ino < (b)->ino || \
			 ((a)->ino == (b)->ino && (a)->dir < (b)->dir))
#define NODE_LT(a, b) ((a)->pblk < (b)->pblk || \
		       ((a)->pblk == (b)->pblk && (a)->ino < (b)->ino))

DEFINE_SORT(xr_qsort_mappings, struct xr_mapping, MAP_LT)
DEFINE_SORT(xr_sort_meta, struct xr_meta, META_LT)
DEFINE_SORT(xr_sort_nodes, struct xr_node_ref, NODE_LT)
DEFINE_SORT(xr_sort_parents, struct xr_parent, PARENT_LT)
#define KEY_LT(a, b) (*(a) < *(b))
DEFINE_SORT(xr_qsort_keys, __u64, KEY_LT)

#define RADIX_BITS	8
#define RADIX_SMALL	64	/* shorter buckets go to the quicksort */

/*
 * NAME(v, n, shift, min_shift): v[0, n) share the key bits above
 * shift + RADIX_BITS; sort them by the byte at shift, then each bucket
 * on the next byte down, handing buckets to QSORT once short or once
 * shift is below min_shift.  DIGIT(x, shift) is that byte of *x.
 */
#define DEFINE_RADIX(NAME, T, DIGIT, QSORT)				\
static void NAME(T *v, size_t n, int shift, int min_shift)		\
{									\
	size_t count[1U << RADIX_BITS];					\
	size_t head[1U << RADIX_BITS], end[1U << RADIX_BITS];		\
	size_t i, at = 0;						\
	unsigned b, d;							\
	if (n <= RADIX_SMALL || shift < min_shift) {			\
		QSORT(v, n);						\
		return;							\
	}								\
	/* cleared only here: most calls are for short buckets */	\
	memset(count, 0, sizeof(count));				\
	for (i = 0; i < n; i++)						\
		count[DIGIT(&v[i], shift)]++;				\
	for (b = 0; b < (1U << RADIX_BITS); b++) {			\
		head[b] = at;						\
		at += count[b];						\
		end[b] = at;						\
	}								\
	/* put each element into its bucket, following cycles of swaps */ \
	for (b = 0; b < (1U << RADIX_BITS); b++) {			\
		while (head[b] < end[b]) {				\
			T x = v[head[b]], t;				\
			while ((d = DIGIT(&x, shift)) != b) {		\
				t = v[head[d]];				\
				v[head[d]++] = x;			\
				x = t;					\
			}						\
			v[head[b]++] = x;				\
		}							\
	}								\
	for (b = 0, at = 0; b < (1U << RADIX_BITS); at += count[b], b++) \
		if (count[b] > 1)					\
			NAME(v + at, count[b], shift - RADIX_BITS,	\
			     min_shift);				\
}

#define MAP_DIGIT(m, shift) \
	((unsigned)((m)->pblk >> (shift)) & ((1U << RADIX_BITS) - 1))
DEFINE_RADIX(radix_mappings, struct xr_mapping, MAP_DIGIT, xr_qsort_mappings)

/* The shift of the highest byte in which a key below max has a bit set. */
static int top_shift(__u64 max)
{
	int bits = 0;

	while (bits < 64 && (max >> bits))
		bits++;
	return bits > RADIX_BITS ? (bits - 1) / RADIX_BITS * RADIX_BITS : 0;
}

#define KEY_RADIX_MAX	11	/* widest digit of the keys' sort */

static void insertion_keys(__u64 *v, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		__u64 x = v[i];

		for (j = i; j > 0 && x < v[j - 1]; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

static int bit_length(__u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

/*
 * v[0, n) agree on the bits from top up; put them in order of the bits
 * from low to top (below low, order does not matter).  Each level takes
 * a digit as wide as its bucket is long calls for (a few elements a
 * bucket), so that long arrays take few passes and short buckets do not
 * pay for thousands of empty ones.
 */
static void radix_keys(__u64 *v, size_t n, int top, int low)
{
	__u32 start[(1U << KEY_RADIX_MAX) + 1], head[1U << KEY_RADIX_MAX];
	unsigned b, d, nb, mask;
	int w, shift;
	size_t i;

	if (top <= low || n < 2)
		return;
	if (n <= RADIX_SMALL) {
		insertion_keys(v, n);
		return;
	}
	w = bit_length(n) - 3;
	w = w > KEY_RADIX_MAX ? KEY_RADIX_MAX : w;
	w = w > top - low ? top - low : w;
	shift = top - w;
	nb = 1U << w;
	mask = nb - 1;
	memset(start, 0, (nb + 1) * sizeof(*start));
	for (i = 0; i < n; i++)
		start[((v[i] >> shift) & mask) + 1]++;
	for (b = 0; b < nb; b++) {
		start[b + 1] += start[b];
		head[b] = start[b];
	}
	/* put each element into its bucket, following cycles of swaps */
	for (b = 0; b < nb; b++) {
		while (head[b] < start[b + 1]) {
			__u64 x = v[head[b]], t;

			while ((d = (x >> shift) & mask) != b) {
				t = v[head[d]];
				v[head[d]++] = x;
				x = t;
			}
			v[head[b]++] = x;
		}
	}
	for (b = 0; b < nb; b++)
		radix_keys(v + start[b], start[b + 1] - start[b], shift, low);
}

/*
 * Keys that come in a few ascending runs (files written in order, their
 * extent blocks read in order) are merged rather than sorted, in
 * rounds of pairs, each merge with room for the shorter run only.
 */
#define RUNS_MAX	16

/*
 * Galloping searches (steps of 1, 2, 4, ... then a binary search), so
 * that finely interleaved runs cost a step a key and long stretches a
 * logarithm.  Before i: the first index of the keys above x that end at
 * i.  From j: the first index in [j, end) of a key above x.
 */
static size_t gallop_back(const __u64 *v, size_t i, __u64 x)
{
	size_t gt, lo, step = 1;

	if (!i || v[i - 1] <= x)
		return i;
	gt = i - 1;			/* v[gt] > x */
	for (;;) {
		if (step > gt) {
			lo = 0;
			break;
		}
		if (v[gt - step] <= x) {
			lo = gt - step + 1;
			break;
		}
		gt -= step;
		step *= 2;
	}
	return lo + XR_PARTITION_POINT(gt - lo, k, v[lo + k] <= x);
}

static size_t gallop_front(const __u64 *v, size_t j, size_t end, __u64 x)
{
	size_t le, hi, step = 1;

	if (j == end || v[j] > x)
		return j;
	le = j;				/* v[le] <= x */
	for (;;) {
		if (step >= end - le) {
			hi = end;
			break;
		}
		if (v[le + step] > x) {
			hi = le + step;
			break;
		}
		le += step;
		step *= 2;
	}
	return le + 1 + XR_PARTITION_POINT(hi - le - 1, k, v[le + 1 + k] <= x);
}

/* Merge ascending v[0, na) and v[na, na + nb), nb <= na, from the back. */
static void merge_back(__u64 *v, size_t na, size_t nb, __u64 *buf)
{
	size_t i = na, j = nb, k = na + nb, p;

	memcpy(buf, v + na, nb * sizeof(*v));
	while (j) {
		__u64 x = buf[--j];

		p = gallop_back(v, i, x);	/* A's keys above x move up */
		memmove(v + k - (i - p), v + p, (i - p) * sizeof(*v));
		k -= i - p;
		i = p;
		v[--k] = x;
	}
}

/* The same with na < nb: A saved, merged from the front. */
static void merge_front(__u64 *v, size_t na, size_t nb, __u64 *buf)
{
	size_t i = 0, j = na, k = 0, q, end = na + nb;

	memcpy(buf, v, na * sizeof(*v));
	while (i < na) {
		__u64 x = buf[i++];

		q = gallop_front(v, j, end, x);	/* B's keys up to x move down */
		memmove(v + k, v + j, (q - j) * sizeof(*v));
		k += q - j;
		j = q;
		v[k++] = x;
	}
}

/*
 * Merge the runs starting at run[0, nrun) (run[nrun] == n) in rounds of
 * pairs.  Returns 0, or EXT2_ET_NO_MEMORY with v as it was.
 */
static errcode_t merge_runs(__u64 *v, size_t *run, size_t nrun)
{
	__u64 *buf = NULL;
	size_t r, out, a, b;

	/* room for the shorter side of any merge (only what a merge
	 * uses is ever touched) */
	if (ext2fs_get_array(run[nrun] / 2 + 1, sizeof(*buf), &buf))
		return EXT2_ET_NO_MEMORY;
	while (nrun > 1) {
		for (r = 0, out = 0; r < nrun; r += 2, out++) {
			run[out] = run[r];
			if (r + 1 == nrun)
				continue;
			a = run[r + 1] - run[r];
			b = run[r + 2] - run[r + 1];
			if (b <= a)
				merge_back(v + run[r], a, b, buf);
			else
				merge_front(v + run[r], a, b, buf);
		}
		run[out] = run[nrun];
		nrun = out;
	}
	ext2fs_free_mem(&buf);
	return 0;
}

/* Sorted by merging its few runs; 0 when there are too many. */
static int sort_runs(__u64 *v, size_t n)
{
	size_t run[RUNS_MAX + 1], nrun = 1, i;

	run[0] = 0;
	for (i = 1; i < n; i++) {
		if (v[i] >= v[i - 1])
			continue;
		if (nrun == RUNS_MAX)
			return 0;
		run[nrun++] = i;
	}
	run[nrun] = n;
	return nrun == 1 || !merge_runs(v, run, nrun);
}

/*
 * 64-bit keys in order of their bits from low up (the order of keys
 * equal there is left as it comes).
 */
void xr_sort_keys(__u64 *v, size_t n, int low)
{
	__u64 lo = ~0ULL, hi = 0;
	size_t i;

	if (sort_runs(v, n))
		return;
	if (n > UINT32_MAX) {	/* past the radix's indices */
		xr_qsort_keys(v, n);
		return;
	}
	for (i = 0; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	/* bits above the highest where lo and hi differ are all equal */
	radix_keys(v, n, bit_length(lo ^ hi), low);
}

/* By block, then inode. */
void xr_sort_mappings(struct xr_mapping *v, size_t n)
{
	blk64_t max = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].pblk > max)
			max = v[i].pblk;
	/* the first byte is the highest one with a bit set */
	radix_mappings(v, n, top_shift(max), 0);
}
