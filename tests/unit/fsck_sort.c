/*
 * fsck_sort.c --- the checker's sort of its probe keys
 * (libfs/check/fsck_sort.c, xr_sort_keys): every shape of input comes
 * out in order of the bits from the given low bit up, as a permutation
 * of what went in.  The oracle is the C library's qsort of the whole
 * keys (the order below the low bit is free, so both sides are compared
 * after a full sort of the output).
 *
 * Shapes: random keys over wide and narrow ranges, all equal, ascending,
 * descending, a few ascending runs (merged: short ones against long
 * ones, equal halves, finely interleaved runs, runs with equal keys
 * across them), more runs than the merge takes (sorted by the radix),
 * and keys that differ only below the low bit.
 *
 * usage: fsck_sort        prints one line per case; exit 0 when all hold
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check/extref_fsck_int.h"

static __u64 state = 88172645463325252ULL;

static __u64 rnd(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Sorted on bits [low, 64) and a permutation of in. */
static int check(const char *name, const __u64 *in, size_t n, int low)
{
	__u64 *got = malloc(n * sizeof(*got) + 1);
	__u64 *want = malloc(n * sizeof(*want) + 1);
	size_t i;
	int ok = 1;

	if (!got || !want) {
		printf("FAIL %s: no memory\n", name);
		return 0;
	}
	memcpy(got, in, n * sizeof(*got));
	memcpy(want, in, n * sizeof(*want));
	xr_sort_keys(got, n, low);
	for (i = 1; ok && i < n; i++)
		if (got[i] >> low < got[i - 1] >> low) {
			printf("FAIL %s (n=%zu): out of order at %zu\n", name,
			       n, i);
			ok = 0;
		}
	qsort(got, n, sizeof(*got), cmp_u64);
	qsort(want, n, sizeof(*want), cmp_u64);
	if (ok && memcmp(got, want, n * sizeof(*got))) {
		printf("FAIL %s (n=%zu): not a permutation of the input\n",
		       name, n);
		ok = 0;
	}
	if (ok)
		printf("ok %s (n=%zu)\n", name, n);
	free(got);
	free(want);
	return ok;
}

/* nrun ascending runs of random keys below range, lengths from len(). */
static void runs(__u64 *v, size_t n, size_t nrun, __u64 range, int low)
{
	size_t r, i, at = 0;

	for (r = 0; r < nrun; r++) {
		size_t len = r + 1 == nrun ? n - at : (n / nrun);

		for (i = 0; i < len; i++)
			v[at + i] = (rnd() % range) << low;
		qsort(v + at, len, sizeof(*v), cmp_u64);
		at += len;
	}
}

int main(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 17, 64, 65, 1000, 70000,
					300000 };
	const int low = XR_LEAN_PBLK_SHIFT;
	size_t si, i, n;
	__u64 *v;
	int ok = 1;

	v = malloc(300000 * sizeof(*v));
	if (!v)
		return 1;
	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		n = sizes[si];
		for (i = 0; i < n; i++)
			v[i] = rnd();
		ok &= check("random, whole keys", v, n, low);
		for (i = 0; i < n; i++)
			v[i] = rnd() % 5000 << low | (rnd() & 0x7fffffff);
		ok &= check("random, narrow range", v, n, low);
		for (i = 0; i < n; i++)
			v[i] = 12345ULL << low | (rnd() & 0x7fffffff);
		ok &= check("equal above the low bit", v, n, low);
		for (i = 0; i < n; i++)
			v[i] = (__u64)i << low;
		ok &= check("ascending", v, n, low);
		for (i = 0; i < n; i++)
			v[i] = (__u64)(n - i) << low;
		ok &= check("descending", v, n, low);
		runs(v, n, 2, 1ULL << 30, low);
		ok &= check("two equal runs", v, n, low);
		runs(v, n, 16, 1000, low);
		ok &= check("16 runs, many equal keys", v, n, low);
		runs(v, n, 17, 1ULL << 30, low);
		ok &= check("17 runs (radix)", v, n, low);
		for (i = 0; i < n; i++)	/* two runs, interleaved finely */
			v[i] = (i < n / 2 ? 2 * i : 2 * (i - n / 2) + 1) << low;
		ok &= check("interleaved runs", v, n, low);
		for (i = 0; i < n; i++)	/* a short run before a long one */
			v[i] = (i < 31 ? 1000000 + 7 * i : i - 31) << low;
		ok &= check("short run, long run", v, n, low);
		for (i = 0; i < n; i++)	/* a long run before a short one */
			v[i] = (i + 31 < n ? 5 * i : (n - i) * 3) << low;
		ok &= check("long run, short run", v, n, low);
	}
	free(v);
	return ok ? 0 : 1;
}
