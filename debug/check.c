/*
 * check.c --- "check": the fsck.extref core, read-only (-n), on the open
 * image.  Each problem prints as fsck.extref prints it.
 */
#include "debugfs.h"
#include "extref_fsck.h"

static void check_report(const struct extref_problem_report *r, void *priv)
{
	(void) priv;
	printf("%s\n", r->message);
}

int impl_check(struct cmd_args *a)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_NO,
				      .report = check_report };
	struct extref_fsck_result res;
	errcode_t err;

	err = extref_fsck(sh.fs, &o, &res);
	if (err)
		return cmd_err(a, err, "checking the reference counts");
	printf("%llu inodes, %llu extent mappings, %llu shared blocks in "
	       "%llu records: ", (unsigned long long)res.inodes,
	       (unsigned long long)res.mappings,
	       (unsigned long long)res.shared_blocks,
	       (unsigned long long)res.records);
	if (res.problems) {
		printf("%d problem%s\n", res.problems,
		       res.problems == 1 ? "" : "s");
		return cmd_fail(a, "the reference counts are inconsistent");
	}
	printf("no problems\n");
	return 0;
}
