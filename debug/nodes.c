/*
 * nodes.c --- commands that name and stamp inodes: link (a hard link),
 * rename (renameat2's flags), mknod (any type but a symlink) and
 * set_times (utimensat).  cmds.c has already checked -w and the tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "debugfs.h"

/* ----- link PATH NEWPATH ----- */

int impl_link(struct cmd_args *a)
{
	ext2_ino_t ino, dir;
	char *name = NULL;
	errcode_t err;
	int ret = 1;

	if (resolve_path(a, a->argv[0], &ino) ||
	    resolve_parent(a, a->argv[1], &dir, &name))
		goto out;
	err = extref_link(sh.xfs, ino, dir, name);
	if (err) {
		cmd_err_class(a, err, "%s -> %s", a->argv[0], a->argv[1]);
		goto out;
	}
	ret = 0;
out:
	free(name);
	return ret;
}

/* ----- rename [-n] [-x] PATH NEWPATH ----- */

int impl_rename(struct cmd_args *a)
{
	ext2_ino_t odir, ndir, src = 0, victim = 0;
	char *oname = NULL, *nname = NULL;
	int flags = 0, ret = 1;
	errcode_t err;

	if (a->opts['n'])
		flags |= EXTREF_RENAME_NOREPLACE;
	if (a->opts['x'])
		flags |= EXTREF_RENAME_EXCHANGE;
	if (resolve_parent(a, a->argv[0], &odir, &oname) ||
	    resolve_parent(a, a->argv[1], &ndir, &nname))
		goto out;
	if (extref_lookup(sh.xfs, odir, oname, &src))
		src = 0;
	if (extref_lookup(sh.xfs, ndir, nname, &victim))
		victim = 0;
	err = extref_rename(sh.xfs, odir, oname, ndir, nname, flags);
	if (err) {
		cmd_err_class(a, err, "%s -> %s", a->argv[0], a->argv[1]);
		goto out;
	}
	/* a directory replaced is gone: the shell leaves it as rmdir does */
	if (victim && victim == sh.cwd && victim != src &&
	    !(flags & EXTREF_RENAME_EXCHANGE))
		sh.cwd = EXT2_ROOT_INO;
	ret = 0;
out:
	free(oname);
	free(nname);
	return ret;
}

/* ----- mknod [-m MODE] PATH TYPE [MAJOR MINOR] ----- */

static const struct {
	char	letter;
	__u32	type;
	int	dev;		/* takes MAJOR MINOR */
} node_types[] = {
	{ 'p', LINUX_S_IFIFO, 0 },
	{ 's', LINUX_S_IFSOCK, 0 },
	{ 'f', LINUX_S_IFREG, 0 },
	{ 'd', LINUX_S_IFDIR, 0 },
	{ 'c', LINUX_S_IFCHR, 1 },
	{ 'b', LINUX_S_IFBLK, 1 },
};
#define NTYPES	(sizeof(node_types) / sizeof(node_types[0]))

/* MAJOR MINOR: decimal or 0x hex, no suffix. */
static int dev_arg(struct cmd_args *a, __u64 *rdev)
{
	__u64 ma, mi;
	char *end;

	errno = 0;
	ma = strtoull(a->argv[2], &end, 0);
	if (errno || end == a->argv[2] || *end || ma > 0xffffffffULL)
		return cmd_fail(a, "bad major number: %s", a->argv[2]);
	mi = strtoull(a->argv[3], &end, 0);
	if (errno || end == a->argv[3] || *end || mi > 0xffffffffULL)
		return cmd_fail(a, "bad minor number: %s", a->argv[3]);
	*rdev = makedev((unsigned)ma, (unsigned)mi);
	return 0;
}

/* -m MODE (octal, exact) or 0666 (0777 for a directory) less the umask. */
static int node_mode(struct cmd_args *a, __u32 type,
		     struct extref_cred *cred, __u32 *mode)
{
	unsigned long m;
	char *end;

	extref_cred_current(cred);
	*mode = type | (type == LINUX_S_IFDIR ? 0777 : 0666);
	if (!a->opts['m'])
		return 0;
	errno = 0;
	m = strtoul(a->optarg['m'], &end, 8);
	if (errno || end == a->optarg['m'] || *end || m > 07777)
		return cmd_fail(a, "bad mode (octal, at most 7777): %s",
				a->optarg['m']);
	cred->umask = 0;
	*mode = type | m;
	return 0;
}

int impl_mknod(struct cmd_args *a)
{
	struct extref_cred cred;
	ext2_ino_t dir;
	char *name = NULL;
	__u64 rdev = 0;
	__u32 mode;
	size_t i;
	errcode_t err;
	int ret = 1;

	for (i = 0; i < NTYPES; i++)
		if (a->argv[1][0] == node_types[i].letter && !a->argv[1][1])
			break;
	if (i == NTYPES)
		return cmd_fail(a, "bad type (p, s, f, d, c or b): %s",
				a->argv[1]);
	if (a->argc != (node_types[i].dev ? 4 : 2))
		return cmd_usage(a);
	if ((node_types[i].dev && dev_arg(a, &rdev)) ||
	    node_mode(a, node_types[i].type, &cred, &mode) ||
	    resolve_parent(a, a->argv[0], &dir, &name))
		goto out;
	err = extref_mknod(sh.xfs, dir, name, mode, rdev, &cred, NULL);
	if (err) {
		cmd_err_class(a, err, "%s", a->argv[0]);
		goto out;
	}
	ret = 0;
out:
	free(name);
	return ret;
}

/* ----- set_times PATH ATIME MTIME ----- */

/* "now", "omit", or SECONDS[.FRACTION] (negative allowed; at most nine
 * digits of fraction). */
static int time_arg(struct cmd_args *a, const char *s, struct timespec *t)
{
	long long sec;
	long nsec = 0, scale = 100000000L;
	const char *p;
	char *end;

	if (!strcmp(s, "now") || !strcmp(s, "omit")) {
		t->tv_sec = 0;
		t->tv_nsec = s[0] == 'n' ? EXTREF_UTIME_NOW : EXTREF_UTIME_OMIT;
		return 0;
	}
	errno = 0;
	sec = strtoll(s, &end, 10);
	if (errno || end == s || (*end && *end != '.'))
		return cmd_fail(a, "bad time (SECONDS[.NANOSECONDS], now or "
				"omit): %s", s);
	for (p = *end ? end + 1 : end; *p; p++, scale /= 10) {
		if (*p < '0' || *p > '9' || !scale)
			return cmd_fail(a, "bad time (SECONDS[.NANOSECONDS], "
					"now or omit): %s", s);
		nsec += (*p - '0') * scale;
	}
	if (*end && (sec < 0 || s[0] == '-') && nsec) {
		/* -1.25 is 1.25 s before the epoch: -2 s + 0.75 s */
		sec -= 1;
		nsec = 1000000000L - nsec;
	}
	t->tv_sec = sec;
	t->tv_nsec = nsec;
	return 0;
}

int impl_set_times(struct cmd_args *a)
{
	struct timespec at, mt;
	ext2_ino_t ino;
	errcode_t err;

	if (time_arg(a, a->argv[1], &at) || time_arg(a, a->argv[2], &mt) ||
	    resolve_path(a, a->argv[0], &ino))
		return 1;
	err = extref_set_times(sh.xfs, ino, &at, &mt);
	if (err)
		return cmd_err_class(a, err, "%s", a->argv[0]);
	return 0;
}
