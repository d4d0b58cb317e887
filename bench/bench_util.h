/*
 * bench_util.h --- what the benchmark programs share: a monotonic clock
 * in seconds and fatal error checks.  Each program defines bench_prog
 * (its name, for messages) before including this.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <et/com_err.h>

static const char *bench_prog;

static inline double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Exit on a library error, naming what failed. */
static inline void check(errcode_t err, const char *what)
{
	if (err) {
		fprintf(stderr, "%s: %s: %s\n", bench_prog, what,
			error_message(err));
		exit(1);
	}
}

/* Exit on a failed system call (errno), naming what failed. */
static inline void die_errno(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", bench_prog, what, strerror(errno));
	exit(1);
}

#endif /* BENCH_UTIL_H */
