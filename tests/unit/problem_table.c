/*
 * problem_table.c --- print the checker's problem table, one problem a
 * line, for tests/test_fsck.py:
 *
 *	0xCODE NAME PREEN_OK DESCRIPTION
 *
 * usage: problem_table
 */
#include <stdio.h>
#include "extref_fsck.h"

int main(void)
{
	const struct extref_problem_info *t;
	size_t i, n;

	t = extref_problem_table(&n);
	for (i = 0; i < n; i++)
		printf("0x%04x %s %d %s\n", t[i].code, t[i].name,
		       t[i].preen_ok, t[i].description);
	return 0;
}
