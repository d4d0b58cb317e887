/*
 * tree_model.c --- random raise/lower operations on the reference-count
 * tree, checked against a plain array of counts.
 *
 * usage: tree_model IMAGE [-n OPS] [-s SEED] [-f FANOUT] [-b BATCH]
 *                         [-N BLOCKS] [-B BASE] [-r REOPEN_EVERY] [-c CYCLES]
 *                         [-k]
 *
 * -k keeps the records of the last cycle (no final drain), to leave a
 * populated tree behind for other tests.
 *
 * IMAGE is an empty extref image (made by mkfs.extref).  The model holds,
 * for each block of a window, the count the tree should record (0 = no
 * record).  After every batch the tree is committed and compared record
 * by record with the runs of the model, the on-disk structure is checked
 * in full, and now and then the image is closed and reopened.  Each cycle
 * ends by lowering everything back to an empty tree; later cycles must
 * not grow the tree's file beyond what the first needed.
 *
 * The window of BLOCKS blocks starts at BASE, by default at the top of
 * the filesystem, away from the blocks the tree allocates near its
 * start: the tree refuses to write a block that carries a record (a
 * counted block is a file's), as it would be if the window overlapped
 * the tree's own blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "extref.h"

static unsigned long long rng_state;

static unsigned long long rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

struct ctx {
	const char	*image;
	extref_fs_t	xfs;
	extref_tree_t	tree;
	unsigned int	fanout;
	blk64_t		base, nblk;
	__u32		*model;		/* count per block, 0 = no record */
	/* freed ranges reported by the last lower */
	blk64_t		freed_next;	/* next block expected to be freed */
	blk64_t		lo, hi;		/* range of the current lower */
	int		failed;
	__u32		peak_nodes;	/* most tree nodes seen at a commit */
};

#define FAIL(c, ...) do { fprintf(stderr, "tree_model: " __VA_ARGS__); \
	fputc('\n', stderr); (c)->failed = 1; } while (0)

static void die(const char *what, errcode_t err)
{
	fprintf(stderr, "tree_model: %s: %s\n", what, error_message(err));
	exit(1);
}

static void open_image(struct ctx *c)
{
	errcode_t err = extref_fs_open(c->image, EXTREF_OPEN_RW, &c->xfs, NULL);

	if (err)
		die("open", err);
	c->tree = extref_fs_tree(c->xfs);
	extref_tree_set_fanout(c->tree, c->fanout);
}

static void close_image(struct ctx *c)
{
	errcode_t err = extref_fs_close(c->xfs);

	if (err)
		die("close", err);
	c->xfs = NULL;
	c->tree = NULL;
}

/* Freed ranges must be exactly the blocks of the range with no record. */
static errcode_t on_freed(blk64_t start, blk64_t len, void *priv)
{
	struct ctx *c = priv;
	blk64_t b;

	if (start < c->freed_next || start + len > c->hi) {
		FAIL(c, "freed range %llu+%llu out of order or range",
		     (unsigned long long)start, (unsigned long long)len);
		return 0;
	}
	for (b = c->freed_next; b < start + len; b++) {
		int want = c->model[b - c->base] == 0;
		int got = b >= start;

		if (want != got)
			FAIL(c, "block %llu: freed %d, model says %d",
			     (unsigned long long)b, got, want);
	}
	c->freed_next = start + len;
	return 0;
}

static void op(struct ctx *c, blk64_t start, blk64_t len, int raise)
{
	blk64_t b, i;
	errcode_t err;

	if (raise) {
		err = extref_tree_raise(c->tree, start, len);
		if (err)
			die("raise", err);
		for (b = start; b < start + len; b++) {
			__u32 *m = &c->model[b - c->base];
			*m = *m ? *m + 1 : 2;
		}
		return;
	}
	c->freed_next = c->lo = start;
	c->hi = start + len;
	err = extref_tree_lower(c->tree, start, len, on_freed, c);
	if (err)
		die("lower", err);
	for (b = c->freed_next; b < start + len; b++)
		if (c->model[b - c->base] == 0)
			FAIL(c, "block %llu with no record not reported freed",
			     (unsigned long long)b);
	for (i = start; i < start + len; i++) {
		__u32 *m = &c->model[i - c->base];
		*m = *m == 0 ? 0 : (*m == 2 ? 0 : *m - 1);
	}
}

struct cmp {
	struct ctx	*c;
	blk64_t		pos;		/* next block of the model to match */
	__u64		nrecs;
};

/* The model's next run of equal non-zero counts at or after pos. */
static int next_run(struct ctx *c, blk64_t *pos, struct extref_rec *r)
{
	blk64_t b = *pos, end = c->base + c->nblk;

	while (b < end && c->model[b - c->base] == 0)
		b++;
	if (b == end)
		return 0;
	r->start = b;
	r->count = c->model[b - c->base];
	while (b < end && c->model[b - c->base] == r->count)
		b++;
	r->len = b - r->start;
	*pos = b;
	return 1;
}

static errcode_t cmp_one(const struct extref_rec *got, void *priv)
{
	struct cmp *m = priv;
	struct extref_rec want;

	m->nrecs++;
	if (!next_run(m->c, &m->pos, &want)) {
		FAIL(m->c, "extra record %llu+%llu x%u",
		     (unsigned long long)got->start,
		     (unsigned long long)got->len, got->count);
		return EXTREF_ITER_STOP;
	}
	if (want.start != got->start || want.len != got->len ||
	    want.count != got->count) {
		FAIL(m->c, "record %llu+%llu x%u, model %llu+%llu x%u",
		     (unsigned long long)got->start,
		     (unsigned long long)got->len, got->count,
		     (unsigned long long)want.start,
		     (unsigned long long)want.len, want.count);
		return EXTREF_ITER_STOP;
	}
	return 0;
}

static errcode_t report_problem(errcode_t code, __u32 lblk,
				const char *detail, void *priv)
{
	struct ctx *c = priv;

	FAIL(c, "check: %s: %s (block %u)", error_message(code), detail, lblk);
	return 0;
}

static void verify(struct ctx *c)
{
	struct cmp m = { c, c->base, 0 };
	struct extref_rec extra;
	struct extref_tree_stats st;
	errcode_t err;
	int k;

	err = extref_tree_commit(c->tree);
	if (err)
		die("commit", err);
	err = extref_tree_iterate(c->tree, 0, 0, 0, cmp_one, &m);
	if (err)
		die("iterate", err);
	if (!c->failed && next_run(c, &m.pos, &extra))
		FAIL(c, "missing record %llu+%llu x%u",
		     (unsigned long long)extra.start,
		     (unsigned long long)extra.len, extra.count);
	err = extref_tree_get_stats(c->tree, &st);
	if (err)
		die("stats", err);
	if (st.nodes > c->peak_nodes)
		c->peak_nodes = st.nodes;
	/*
	 * Nodes are reused: a commit needs at most as many new blocks as
	 * the tree has nodes, so the file never exceeds twice the largest
	 * tree plus the header and a path's worth of slack.
	 */
	if (st.file_blocks > 2 * c->peak_nodes + 1 + 2 * EXTREF_MAX_DEPTH)
		FAIL(c, "file of %u blocks for at most %u nodes: not reused",
		     st.file_blocks, c->peak_nodes);
	if (st.records != m.nrecs)
		FAIL(c, "stats: %llu records, iterated %llu",
		     (unsigned long long)st.records,
		     (unsigned long long)m.nrecs);
	err = extref_tree_check(c->tree, report_problem, c);
	if (err && !c->failed)
		die("check", err);
	for (k = 0; k < 64; k++) {
		blk64_t b = c->base + rnd() % c->nblk;
		__u32 got;

		err = extref_tree_get_count(c->tree, b, &got);
		if (err)
			die("get_count", err);
		if (got != c->model[b - c->base])
			FAIL(c, "count of %llu is %u, model %u",
			     (unsigned long long)b, got, c->model[b - c->base]);
	}
}

static void random_op(struct ctx *c)
{
	blk64_t len, start;
	int raise = rnd() % 100 < 55;

	switch (rnd() % 4) {
	case 0: len = 1; break;
	case 1: len = 1 + rnd() % 8; break;
	case 2: len = 1 + rnd() % 64; break;
	default: len = 1 + rnd() % 400; break;
	}
	if (len > c->nblk)
		len = c->nblk;
	start = c->base + rnd() % (c->nblk - len + 1);
	op(c, start, len, raise);
}

/* Lower the whole window until no record is left. */
static void drain(struct ctx *c)
{
	struct extref_tree_stats st;
	int rounds = 0;
	errcode_t err;

	do {
		op(c, c->base, c->nblk, 0);
		err = extref_tree_get_stats(c->tree, &st);
		if (err)
			die("stats", err);
	} while (st.records && ++rounds < 1000000);
	verify(c);
	if (st.records || st.depth)
		FAIL(c, "tree not empty after draining");
}

int main(int argc, char **argv)
{
	struct ctx c = { .fanout = 0, .base = 0, .nblk = 4096 };
	unsigned long ops = 200000, batch = 1000, reopen = 20, cycles = 2;
	unsigned long seed = 1, i, done = 0, cyc;
	int keep = 0;
	__u32 first_cycle_blocks = 0;
	struct extref_tree_stats st;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:f:b:N:B:r:c:k")) != -1) {
		switch (opt) {
		case 'n': ops = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 'f': c.fanout = strtoul(optarg, NULL, 0); break;
		case 'b': batch = strtoul(optarg, NULL, 0); break;
		case 'N': c.nblk = strtoull(optarg, NULL, 0); break;
		case 'B': c.base = strtoull(optarg, NULL, 0); break;
		case 'r': reopen = strtoul(optarg, NULL, 0); break;
		case 'c': cycles = strtoul(optarg, NULL, 0); break;
		case 'k': keep = 1; break;
		default:
			fprintf(stderr, "usage: %s IMAGE [-n ops] [-s seed] "
				"[-f fanout] [-b batch] [-N blocks] [-B base] "
				"[-r reopen] [-c cycles] [-k]\n", argv[0]);
			return 2;
		}
	}
	if (optind != argc - 1 || batch == 0 || cycles == 0 || c.nblk == 0) {
		fprintf(stderr, "tree_model: bad arguments\n");
		return 2;
	}
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	c.image = argv[optind];
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
	c.model = calloc(c.nblk, sizeof(*c.model));
	if (!c.model)
		return 1;
	open_image(&c);
	if (!c.base) {
		blk64_t total = ext2fs_blocks_count(
			extref_fs_ext2(c.xfs)->super);

		if (total < c.nblk + 1024) {
			fprintf(stderr, "tree_model: image too small\n");
			return 2;
		}
		c.base = total - c.nblk;
	}
	for (cyc = 0; cyc < cycles && !c.failed; cyc++) {
		unsigned long n = ops / cycles, batches = 0;

		for (i = 0; i < n && !c.failed; i++) {
			random_op(&c);
			done++;
			if ((i + 1) % batch)
				continue;
			verify(&c);
			if (reopen && ++batches % reopen == 0) {
				close_image(&c);
				open_image(&c);
				/*
				 * Nodes are read lazily after a reopen:
				 * touch the lowest block, below the
				 * smallest key, first.
				 */
				op(&c, c.base, 1, 1);
				op(&c, c.base, 1, 0);
				verify(&c);
			}
		}
		verify(&c);
		if (extref_tree_get_stats(c.tree, &st) == 0)
			printf("cycle %lu: %lu ops, %llu records, depth %u, "
			       "%u nodes, %u free, file %u blocks\n", cyc,
			       n, (unsigned long long)st.records, st.depth,
			       st.nodes, st.free_nodes, st.file_blocks);
		if (keep && cyc + 1 == cycles)
			break;
		drain(&c);
		close_image(&c);
		open_image(&c);
		extref_tree_get_stats(c.tree, &st);
		printf("cycle %lu drained: file %u blocks, %u free\n", cyc,
		       st.file_blocks, st.free_nodes);
		/* Later cycles of the same work reuse the first one's file. */
		if (cyc == 0)
			first_cycle_blocks = st.file_blocks;
		else if (st.file_blocks > first_cycle_blocks +
			 first_cycle_blocks / 10 + 2 * EXTREF_MAX_DEPTH)
			FAIL(&c, "file grew from %u to %u blocks: nodes not reused",
			     first_cycle_blocks, st.file_blocks);
		if (st.free_nodes + 1 != st.file_blocks)
			FAIL(&c, "empty tree: %u free nodes in a %u-block file",
			     st.free_nodes, st.file_blocks);
	}
	close_image(&c);
	free(c.model);
	if (c.failed)
		return 1;
	printf("tree_model: %lu operations, seed %lu, fanout %u: ok\n", done,
	       seed, c.fanout);
	return 0;
}
