/*
 * tree_bench.c --- throughput of raising and lowering reference counts,
 * and on-disk bytes per record.
 *
 * usage: tree_bench IMAGE RECORDS [COMMIT_EVERY]
 *
 * Raises RECORDS one-block ranges two blocks apart (so no two merge) in a
 * shuffled order, committing every COMMIT_EVERY operations (default
 * 1000), then lowers them all in another shuffled order.  Prints one line
 * of figures.  IMAGE must be an empty extref image with at least
 * 2 * RECORDS + 1024 blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "extref.h"
#include "bench_util.h"

static unsigned long long rng = 88172645463325252ULL;

static unsigned long long rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void shuffle(blk64_t *v, size_t n)
{
	size_t i;

	for (i = n - 1; i > 0; i--) {
		size_t j = rnd() % (i + 1);
		blk64_t t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

int main(int argc, char **argv)
{
	extref_fs_t xfs;
	extref_tree_t t;
	struct extref_tree_stats st;
	unsigned long n, every, i;
	blk64_t *v;
	double t0, t_raise, t_lower;

	bench_prog = "tree_bench";

	if (argc < 3) {
		fprintf(stderr, "usage: %s IMAGE RECORDS [COMMIT_EVERY]\n",
			argv[0]);
		return 2;
	}
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	n = strtoul(argv[2], NULL, 0);
	every = argc > 3 ? strtoul(argv[3], NULL, 0) : 1000;
	if (n == 0 || every == 0)
		return 2;
	v = malloc(n * sizeof(*v));
	if (!v)
		return 1;
	check(extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, NULL), "open");
	t = extref_fs_tree(xfs);
	for (i = 0; i < n; i++)
		v[i] = 1024 + 2 * i;
	shuffle(v, n);
	t0 = now();
	for (i = 0; i < n; i++) {
		check(extref_tree_raise(t, v[i], 1), "raise");
		if ((i + 1) % every == 0)
			check(extref_tree_commit(t), "commit");
	}
	check(extref_tree_commit(t), "commit");
	t_raise = now() - t0;
	check(extref_tree_get_stats(t, &st), "stats");
	printf("records %lu  commit_every %lu  raise %.0f ops/s  ", n, every,
	       n / t_raise);
	printf("depth %u  nodes %u  file %u blocks  bytes/record %.1f  ",
	       st.depth, st.nodes, st.file_blocks,
	       (double)st.nodes * extref_fs_ext2(xfs)->blocksize / n);
	shuffle(v, n);
	t0 = now();
	for (i = 0; i < n; i++) {
		check(extref_tree_lower(t, v[i], 1, NULL, NULL), "lower");
		if ((i + 1) % every == 0)
			check(extref_tree_commit(t), "commit");
	}
	check(extref_tree_commit(t), "commit");
	t_lower = now() - t0;
	printf("lower %.0f ops/s\n", n / t_lower);
	check(extref_fs_close(xfs), "close");
	free(v);
	return 0;
}
