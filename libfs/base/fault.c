/*
 * fault.c --- the allocation-failure hook of the tests (xr_fault.h).
 *
 * EXTREF_FAULT_NOMEM=N makes the N-th growth of an array (xr_grow,
 * xr_big_grow in vec.c, counted from 1 in each process) fail with
 * EXT2_ET_NO_MEMORY; N+ makes that one and every later one fail, N-M
 * the N-th to the M-th.  Each failure made is announced on stderr
 * ("EXTREF_FAULT_NOMEM: growth N fails").
 *
 * Built only with configure --enable-fault-injection
 * (EXTREF_FAULT_INJECTION): other builds have no hook, and the variable
 * has no effect.
 */
#include <stdio.h>
#include <stdlib.h>
#include "xr_fault.h"

#ifdef EXTREF_FAULT_INJECTION

int xr_fault_nomem(void)
{
	static int parsed;
	static unsigned long long at, last, seen;
	const char *spec;
	char *end;

	if (!parsed) {
		parsed = 1;
		spec = getenv("EXTREF_FAULT_NOMEM");
		if (spec && *spec) {
			at = last = strtoull(spec, &end, 10);
			if (*end == '+') {
				last = ~0ULL;
				end++;
			} else if (*end == '-') {
				last = strtoull(end + 1, &end, 10);
			}
			if (*end || !at || last < at) {
				fprintf(stderr, "EXTREF_FAULT_NOMEM: cannot "
					"parse \"%s\" (N, N+ or N-M, "
					"1 <= N <= M)\n", spec);
				at = 0;
			}
		}
	}
	if (!at)
		return 0;
	seen++;
	if (seen >= at && seen <= last) {
		fprintf(stderr, "EXTREF_FAULT_NOMEM: growth %llu fails\n",
			seen);
		return 1;
	}
	return 0;
}

#endif /* EXTREF_FAULT_INJECTION */
