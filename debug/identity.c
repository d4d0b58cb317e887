/*
 * identity.c --- who the shell acts as: --as UID[:GID[,GID...]] and
 * --cap CAP,... on the command line, the "as" command in a session.
 * Without an identity (the default) the library checks nothing, as for
 * root; with one, every command checks what the kernel would check for
 * that user (the library's perm.c).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "debugfs.h"

static const struct {
	const char	*name;		/* the kernel's, without "CAP_" */
	__u32		cap;
} cap_names[] = {
	{ "chown",		EXTREF_CAP_CHOWN },
	{ "dac_override",	EXTREF_CAP_DAC_OVERRIDE },
	{ "dac_read_search",	EXTREF_CAP_DAC_READ_SEARCH },
	{ "fowner",		EXTREF_CAP_FOWNER },
	{ "fsetid",		EXTREF_CAP_FSETID },
	{ "linux_immutable",	EXTREF_CAP_LINUX_IMMUTABLE },
	{ "sys_admin",		EXTREF_CAP_SYS_ADMIN },
	{ "sys_resource",	EXTREF_CAP_SYS_RESOURCE },
	{ "setfcap",		EXTREF_CAP_SETFCAP },
	{ "mknod",		EXTREF_CAP_MKNOD },
};
#define NCAPS	(sizeof(cap_names) / sizeof(cap_names[0]))

/* One id: a decimal number below 2^32 - 1 (that one means "unchanged"). */
static int parse_id(const char *s, size_t len, __u32 *id)
{
	char buf[16];
	__u64 v;

	if (len == 0 || len >= sizeof(buf))
		return 1;
	memcpy(buf, s, len);
	buf[len] = 0;
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)buf[i]))
			return 1;
	if (parse_u64(buf, &v) || v >= 0xffffffffULL)
		return 1;
	*id = (__u32)v;
	return 0;
}

int parse_identity(const char *spec, struct extref_cred *cred)
{
	const char *p = spec;
	size_t n;
	__u32 id;

	extref_cred_current(cred);	/* the umask */
	cred->ngroups = 0;
	cred->caps = 0;
	n = strcspn(p, ":");
	if (parse_id(p, n, &cred->uid))
		return 1;
	cred->gid = cred->uid;
	if (!p[n])
		return 0;
	p += n + 1;
	n = strcspn(p, ",");
	if (parse_id(p, n, &cred->gid))
		return 1;
	while (p[n]) {
		p += n + 1;
		n = strcspn(p, ",");
		if (parse_id(p, n, &id) || cred->ngroups == EXTREF_NGROUPS_MAX)
			return 1;
		cred->groups[cred->ngroups++] = id;
	}
	return 0;
}

int parse_caps(const char *list, __u32 *caps)
{
	const char *p = list;
	size_t n, i;

	*caps = 0;
	while (*p) {
		n = strcspn(p, ",");
		if (n > 4 && !strncasecmp(p, "cap_", 4)) {
			p += 4;
			n -= 4;
		}
		if (n == 3 && !strncasecmp(p, "all", 3)) {
			*caps |= EXTREF_CAP_ALL;
		} else if (!(n == 4 && !strncasecmp(p, "none", 4))) {
			for (i = 0; i < NCAPS; i++)
				if (strlen(cap_names[i].name) == n &&
				    !strncasecmp(p, cap_names[i].name, n))
					break;
			if (i == NCAPS)
				return 1;
			*caps |= cap_names[i].cap;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The shell's identity onto the open image (none: NULL). */
int shell_apply_identity(const char *who)
{
	errcode_t err;

	if (!sh.xfs)
		return 0;
	err = extref_set_identity(sh.xfs, sh.have_ident ? &sh.ident : NULL);
	if (err) {
		com_err(who, err, "while setting the identity");
		return 1;
	}
	return 0;
}

static void print_identity(void)
{
	const struct extref_cred *c = &sh.ident;
	const char *sep = "";
	__u32 i;

	if (!sh.have_ident) {
		printf("no identity: nothing is checked (root tools)\n");
		return;
	}
	printf("uid=%u gid=%u groups=", c->uid, c->gid);
	for (i = 0; i < c->ngroups; i++)
		printf("%s%u", i ? "," : "", c->groups[i]);
	printf(" caps=");
	for (i = 0; i < NCAPS; i++)
		if (c->caps & cap_names[i].cap) {
			printf("%scap_%s", sep, cap_names[i].name);
			sep = ",";
		}
	printf("%s umask=%03o\n", *sep ? "" : "none", c->umask);
}

/* as [UID[:GID[,GID...]] [CAP,...] | root] */
int impl_as(struct cmd_args *a)
{
	struct extref_cred cred;

	if (a->argc == 0) {
		print_identity();
		return 0;
	}
	if (!strcmp(a->argv[0], "root")) {
		if (a->argc > 1)
			return cmd_usage(a);
		sh.have_ident = 0;
		return shell_apply_identity(a->name);
	}
	if (parse_identity(a->argv[0], &cred))
		return cmd_fail(a, "bad identity (UID[:GID[,GID...]]): %s",
				a->argv[0]);
	if (a->argc > 1 && parse_caps(a->argv[1], &cred.caps))
		return cmd_fail(a, "bad capability list: %s", a->argv[1]);
	sh.ident = cred;
	sh.have_ident = 1;
	return shell_apply_identity(a->name);
}
