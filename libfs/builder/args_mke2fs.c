/*
 * args_mke2fs.c --- the mke2fs options a build passes on as given.
 *
 * A build lays the filesystem out with the stock mke2fs, so every
 * mke2fs option that means something for an extref image is handed to
 * it unchanged, with mke2fs's meaning (a pipeline written for mkfs.ext4,
 * systemd-repart's, mkosi's, wic's, runs as it is).  The few that do
 * not fit an extref image are refused here, with the reason, before
 * anything is touched; -z is the build's own.  The table below is the
 * list: mkfs.extref(8)'s table of them is checked against it
 * (tests/test_mkfs_pipelines.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extref.h"
#include "args_int.h"

struct pass_opt {
	char		opt;
	const char	*flag;		/* as passed on */
	int		has_arg;
	const char	*refused;	/* why, or NULL: passed on */
};

static const struct pass_opt pass_opts[] = {
	{ 'c', "-c", 0, NULL },	/* check the device for bad blocks */
	{ 'C', "-C", 1, "a cluster size is bigalloc, which the extref "
			"toolkit does not support" },
	{ 'D', "-D", 0, NULL },	/* direct I/O */
	{ 'e', "-e", 1, NULL },	/* errors behaviour */
	{ 'g', "-g", 1, NULL },	/* blocks per group */
	{ 'G', "-G", 1, NULL },	/* groups per flex group */
	{ 'j', "-j", 0, NULL },	/* a journal (ext4 has one anyway) */
	{ 'J', "-J", 1, NULL },	/* journal options */
	{ 'K', "-K", 0, NULL },	/* old spelling of -E nodiscard */
	{ 'l', "-l", 1, NULL },	/* bad blocks list */
	{ 'm', "-m", 1, NULL },	/* reserved blocks percentage */
	{ 'M', "-M", 1, NULL },	/* last mounted directory */
	{ 'n', "-n", 0, NULL },	/* dry run: mke2fs -n's report */
	{ 'o', "-o", 1, NULL },	/* creator OS */
	{ 'r', "-r", 1, NULL },	/* revision (1: 0 is refused below) */
	{ 'S', "-S", 0, "-S rewrites the superblocks of an existing "
			"filesystem; run mke2fs -S on it, then fsck.extref" },
	{ 't', "-t", 1, NULL },	/* filesystem type, from mke2fs.conf */
	{ 'T', "-T", 1, NULL },	/* usage types, from mke2fs.conf */
	{ 'v', "-v", 0, NULL },	/* verbose: mke2fs's report printed */
	{ 'z', "-z", 1, NULL },	/* undo file: the build's own (extref_build_undo) */
};

#define N_PASS	(sizeof(pass_opts) / sizeof(pass_opts[0]))

const char xr_mke2fs_pass_optstring[] = "cC:De:g:G:jJ:Kl:m:M:no:r:St:T:vz:";

static const struct pass_opt *find(int c)
{
	for (size_t i = 0; i < N_PASS; i++)
		if (pass_opts[i].opt == c)
			return &pass_opts[i];
	return NULL;
}

int xr_args_mke2fs_needs_arg(int c)
{
	const struct pass_opt *p = find(c);

	return p && p->has_arg;
}

static errcode_t push(struct extref_build_args *a, const char *w,
		      char *why, size_t len)
{
	if (a->npass >= EXTREF_BUILD_PASS_MAX)
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG, "too many "
				   "mke2fs options (at most %d)",
				   EXTREF_BUILD_PASS_MAX / 2);
	a->pass[a->npass++] = w;
	return 0;
}

/* -J's size=MB among its comma-separated options (0: none given). */
static errcode_t journal_size(const char *arg, unsigned int *mib)
{
	unsigned long long v;
	char num[16];
	size_t n;

	*mib = 0;
	for (; *arg; arg += n + (arg[n] == ',')) {
		n = strcspn(arg, ",");
		if (n < 5 || strncmp(arg, "size=", 5))
			continue;
		if (n - 5 >= sizeof(num))
			return EXTREF_ERR_BUILD_ARG;
		memcpy(num, arg + 5, n - 5);
		num[n - 5] = '\0';
		if (extref_build_parse_uint(num, 10240000, &v))
			return EXTREF_ERR_BUILD_ARG;
		*mib = (unsigned int)v;
	}
	return 0;
}

/* What each option means to the build beside mke2fs; 1: passed on. */
static errcode_t note(struct extref_build_args *a, int c, const char *arg,
		      char *why, size_t len, int *pass)
{
	*pass = 1;
	switch (c) {
	case 't':	/* the type's features must include extents */
		if (!strcmp(arg, "ext2") || !strcmp(arg, "ext3"))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				"filesystem type '%s' has no extents, which "
				"the extref toolkit requires (use -t ext4)", arg);
		a->fs_type = arg;
		a->host_conf = 1;
		*pass = 0;		/* given to mke2fs in -t's place */
		break;
	case 'T':
		a->host_conf = 1;
		break;
	case 'J':	/* the journal is the image's own: we write through it */
		if (strstr(arg, "device="))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				"invalid journal options '%s': an external "
				"journal device is not supported (the extref "
				"library writes its transactions through the "
				"image's own journal)", arg);
		a->journal_given = 1;
		if (journal_size(arg, &a->journal_mib))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
				"invalid journal options '%s': size= takes "
				"a number of megabytes", arg);
		break;
	case 'm':
		a->reserved_given = 1;
		break;
	case 'r':
		if (strcmp(arg, "1"))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				"invalid revision '%s': an extref image is "
				"revision 1 (revision 0 has no features)", arg);
		break;
	case 'v':
		a->verbose = 1;
		break;
	case 'n':
		a->noaction = 1;
		a->verbose = 1;		/* the report is the point */
		break;
	case 'z':	/* mke2fs's would miss the build: one for the run */
		a->undo = arg;
		*pass = 0;
		break;
	}
	return 0;
}

errcode_t xr_args_mke2fs(struct extref_build_args *a, int c, const char *arg,
			 char *why, size_t len, int *taken)
{
	const struct pass_opt *p = find(c);
	errcode_t err;
	int pass;

	*taken = p && c != ':' && c != '?';
	if (!*taken)
		return 0;
	if (p->refused)
		return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				   "option -%c is not supported: %s", c,
				   p->refused);
	err = note(a, c, arg, why, len, &pass);
	if (!err && pass)
		err = push(a, p->flag, why, len);
	if (!err && pass && p->has_arg)
		err = push(a, arg, why, len);
	return err;
}
