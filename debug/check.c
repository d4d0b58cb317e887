/*
 * check.c --- "check": validate the reference-count tree read-only and
 * print each problem.  (To be replaced by the fsck core.)
 */
#include "debugfs.h"

struct check_ctx {
	unsigned long	problems;
};

static int check_report(errcode_t problem, __u32 lblk, const char *detail,
			void *priv)
{
	struct check_ctx *c = priv;

	c->problems++;
	if (detail && *detail)
		printf("lblk %u: %s: %s\n", lblk, error_message(problem), detail);
	else
		printf("lblk %u: %s\n", lblk, error_message(problem));
	return 0;
}

int impl_check(struct cmd_args *a)
{
	struct check_ctx c = { 0 };
	errcode_t err;

	if (sh_tree())
		err = extref_tree_check(sh_tree(), check_report, &c);
	else
		err = extref_check_fs(sh.fs, check_report, &c);
	if (err && !c.problems) {
		/* Failed before reporting anything: no tree, I/O error, ... */
		return cmd_err(a, err, "checking the tree");
	}
	if (c.problems) {
		printf("%lu problem%s found in the reference-count tree\n",
		       c.problems, c.problems == 1 ? "" : "s");
		return cmd_fail(a, "the reference-count tree is damaged");
	}
	printf("reference-count tree: no problems found\n");
	return 0;
}
