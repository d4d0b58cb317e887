/*
 * open_bench.c --- the cost of a verified read-write open.
 *
 * usage: open_bench IMAGE [REPS]
 *
 * Times extref_fs_open(EXTREF_OPEN_RW), which verifies the tree against
 * every extent mapping, against the same open with EXTREF_OPEN_TRUSTED
 * (no verification), and a read-only open; each followed by
 * extref_fs_abort (nothing is written).  Prints the minimum of REPS runs
 * of each, in seconds, with the image in the page cache (one unmeasured
 * open first).
 */
#include "extref.h"

#define bench_prog_name "open_bench"
#include "bench_util.h"

static double time_open(const char *img, int flags)
{
	extref_fs_t xfs;
	double t0 = now(), t;

	check(extref_fs_open(img, flags, &xfs, NULL), "open");
	t = now() - t0;
	extref_fs_abort(xfs);
	return t;
}

static double best(const char *img, int flags, int reps)
{
	double b = 0, t;
	int i;

	for (i = 0; i < reps; i++) {
		t = time_open(img, flags);
		if (i == 0 || t < b)
			b = t;
	}
	return b;
}

int main(int argc, char **argv)
{
	int reps = argc > 2 ? atoi(argv[2]) : 3;

	bench_prog = bench_prog_name;
	if (argc < 2 || reps < 1) {
		fprintf(stderr, "usage: %s IMAGE [REPS]\n", bench_prog);
		return 1;
	}
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	time_open(argv[1], 0);		/* warm the cache */
	printf("verified_s=%.4f trusted_s=%.4f readonly_s=%.4f\n",
	       best(argv[1], EXTREF_OPEN_RW, reps),
	       best(argv[1], EXTREF_OPEN_RW | EXTREF_OPEN_TRUSTED, reps),
	       best(argv[1], 0, reps));
	return 0;
}
