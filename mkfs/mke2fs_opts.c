/*
 * mke2fs_opts.c --- the mke2fs options mkfs.extref passes on as given.
 *
 * mkfs.extref lays the filesystem out with the stock mke2fs, so every
 * mke2fs option that means something for an extref image is handed to
 * it unchanged, with mke2fs's meaning (a pipeline written for mkfs.ext4,
 * systemd-repart's, mkosi's, wic's, runs as it is).  The few that do
 * not fit an extref image are refused here, with the reason, before
 * anything is touched; -z is mkfs.extref's own.  The table below is the
 * list: the man page's
 * table of them is checked against it (tests/test_mkfs_pipelines.py).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs.h"

struct pass_opt {
	char		opt;
	int		has_arg;
	const char	*refused;	/* why, or NULL: passed on */
};

static const struct pass_opt pass_opts[] = {
	{ 'c', 0, NULL },	/* check the device for bad blocks */
	{ 'C', 1, "a cluster size is bigalloc, which the extref toolkit "
		  "does not support" },
	{ 'D', 0, NULL },	/* direct I/O */
	{ 'e', 1, NULL },	/* errors behaviour */
	{ 'g', 1, NULL },	/* blocks per group */
	{ 'G', 1, NULL },	/* groups per flex group */
	{ 'j', 0, NULL },	/* a journal (ext4 has one anyway) */
	{ 'J', 1, NULL },	/* journal options */
	{ 'K', 0, NULL },	/* old spelling of -E nodiscard */
	{ 'l', 1, NULL },	/* bad blocks list */
	{ 'm', 1, NULL },	/* reserved blocks percentage */
	{ 'M', 1, NULL },	/* last mounted directory */
	{ 'n', 0, NULL },	/* dry run: mke2fs -n's report (mke2fs_run.c) */
	{ 'o', 1, NULL },	/* creator OS */
	{ 'r', 1, NULL },	/* revision (1: 0 is refused below) */
	{ 'S', 0, "-S rewrites the superblocks of an existing filesystem; "
		  "run mke2fs -S on it, then fsck.extref" },
	{ 't', 1, NULL },	/* filesystem type, from mke2fs.conf */
	{ 'T', 1, NULL },	/* usage types, from mke2fs.conf */
	{ 'v', 0, NULL },	/* verbose: mke2fs's report printed */
	{ 'z', 1, NULL },	/* undo file: mkfs.extref's own (extref_build_undo) */
};

#define N_PASS	(sizeof(pass_opts) / sizeof(pass_opts[0]))

const char mke2fs_pass_optstring[] = "cC:De:g:G:jJ:Kl:m:M:no:r:St:T:vz:";

static const struct pass_opt *find(int c)
{
	for (size_t i = 0; i < N_PASS; i++)
		if (pass_opts[i].opt == c)
			return &pass_opts[i];
	return NULL;
}

int mke2fs_opt_needs_arg(int c)
{
	const struct pass_opt *p = find(c);

	return p && p->has_arg;
}

static void push(struct mkfs_opts *o, const char *a)
{
	if (o->npass >= MKFS_PASS_MAX)
		fatal("too many mke2fs options (at most %d)",
		      MKFS_PASS_MAX / 2);
	o->pass[o->npass++] = a;
}

/* -t: the type's features must include extents. */
static void check_type(const char *arg)
{
	if (!strcmp(arg, "ext2") || !strcmp(arg, "ext3"))
		fatal("filesystem type '%s' has no extents, which the extref "
		      "toolkit requires (use -t ext4)", arg);
}

/* -J: the journal is the image's own: the library writes through it. */
static void check_journal(const char *arg)
{
	if (strstr(arg, "device="))
		fatal("invalid journal options '%s': an external journal "
		      "device is not supported (the extref library writes "
		      "its transactions through the image's own journal)",
		      arg);
}

int mke2fs_opt_take(struct mkfs_opts *o, int c, const char *arg)
{
	static char flag[N_PASS][3];
	const struct pass_opt *p = find(c);
	size_t i;

	if (!p || c == ':' || c == '?')
		return 0;
	if (p->refused)
		fatal("option -%c is not supported: %s", c, p->refused);
	switch (c) {
	case 't':
		check_type(arg);
		o->fs_type = arg;
		o->host_conf = 1;
		return 1;		/* given to mke2fs in -t's place */
	case 'T':
		o->host_conf = 1;
		break;
	case 'J':
		check_journal(arg);
		o->journal_given = 1;
		break;
	case 'm':
		o->reserved_given = 1;
		break;
	case 'r':
		if (strcmp(arg, "1"))
			fatal("invalid revision '%s': an extref image is "
			      "revision 1 (revision 0 has no features)", arg);
		break;
	case 'v':
		o->verbose = 1;
		break;
	case 'n':
		o->noaction = 1;
		o->verbose = 1;		/* the report is the point */
		break;
	case 'z':
		/* mke2fs's would miss the build: one for the whole run */
		o->undo = arg;
		return 1;
	}
	i = (size_t)(p - pass_opts);
	flag[i][0] = '-';
	flag[i][1] = (char)c;
	push(o, flag[i]);
	if (p->has_arg)
		push(o, arg);
	return 1;
}
