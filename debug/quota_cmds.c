/*
 * quota_cmds.c --- set_quota and list_quota: the limits and usage in the
 * image's quota files (extref_quota_get / _set / _iterate).  Block
 * limits are shown and given in 1 KiB units and space in bytes, as stock
 * debugfs's list_quota and setquota(8) do.
 */
#include <string.h>
#include "debugfs.h"

static const char *const type_names[] = { "user", "group", "project" };

static int quota_type(struct cmd_args *a, const char *s, int *type)
{
	for (int t = 0; t < 3; t++)
		if (!strcmp(s, type_names[t])) {
			*type = t;
			if (!extref_quota_inum(sh.fs, t))
				return cmd_fail(a, "%s: no %s quota", sh.image,
						s);
			return 0;
		}
	return cmd_fail(a, "bad quota type: %s (user, group or project)", s);
}

static void print_header(int type)
{
	printf("%7s %2s   %8s %8s %8s    %8s %8s %8s\n", type_names[type],
	       "id", "space", "quota", "limit", "inodes", "quota", "limit");
}

static void print_quota(__u32 id, const struct extref_quota *q)
{
	printf("%10u   %8llu %8llu %8llu    %8llu %8llu %8llu\n", id,
	       (unsigned long long)q->space,
	       (unsigned long long)q->bsoft / 1024,
	       (unsigned long long)q->bhard / 1024,
	       (unsigned long long)q->inodes,
	       (unsigned long long)q->isoft, (unsigned long long)q->ihard);
}

static errcode_t print_one(int type, __u32 id, const struct extref_quota *q,
			   void *priv)
{
	(void) type;
	(void) priv;
	print_quota(id, q);
	return 0;
}

int impl_list_quota(struct cmd_args *a)
{
	errcode_t err;
	int type = 0;

	if (quota_type(a, a->argv[0], &type))
		return 1;
	print_header(type);
	err = extref_quota_iterate(sh.xfs, type, print_one, NULL);
	if (err)
		return cmd_err(a, err, "%s quota", type_names[type]);
	return 0;
}

/* set_quota TYPE ID [BSOFT BHARD ISOFT IHARD]; without limits, show. */
int impl_set_quota(struct cmd_args *a)
{
	struct extref_quota q;
	__u64 id, v[4];
	errcode_t err;
	int type = 0;

	if (quota_type(a, a->argv[0], &type))
		return 1;
	if (parse_u64(a->argv[1], &id) || id > 0xffffffffULL)
		return cmd_fail(a, "bad id: %s", a->argv[1]);
	if (a->argc != 2 && a->argc != 6)
		return cmd_fail(a, "usage: set_quota TYPE ID [BSOFT BHARD ISOFT "
				"IHARD]");
	for (int i = 0; i + 2 < a->argc; i++)
		if (parse_u64(a->argv[i + 2], &v[i]) ||
		    (i < 2 && v[i] > (~0ULL >> 10)))
			return cmd_fail(a, "bad limit: %s", a->argv[i + 2]);
	err = extref_quota_get(sh.xfs, type, id, &q);
	if (!err && a->argc == 6) {
		if (!sh.rw)
			return cmd_err(a, EXT2_ET_RO_FILSYS, "set_quota");
		q.bsoft = v[0] * 1024;
		q.bhard = v[1] * 1024;
		q.isoft = v[2];
		q.ihard = v[3];
		err = extref_quota_set(sh.xfs, type, id, &q);
		if (!err)
			err = extref_quota_get(sh.xfs, type, id, &q);
	}
	if (err)
		return cmd_err(a, err, "%s quota of %llu", type_names[type],
			       (unsigned long long)id);
	print_header(type);
	print_quota(id, &q);
	return 0;
}
