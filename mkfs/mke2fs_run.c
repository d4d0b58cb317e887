/*
 * mke2fs_run.c --- lay out the ext4 filesystem with the stock mke2fs:
 * the options as the library's extref_build_mke2fs_run takes them (it
 * makes the argv and gives mke2fs our configuration, so the result does
 * not depend on the host's /etc/mke2fs.conf; libfs/builder/mke2fs.c,
 * mke2fs_run.c), the child registered with cleanup.c, and the report
 * (-v, -n) or the one line that says why it failed printed.  -n, once
 * target_probe has checked everything, runs it alone, as mke2fs -n: on
 * an image that does not exist yet, the library's memory file.
 * MKFS_EXTREF_MKE2FS names another mke2fs than the one found at build
 * time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extref_builder.h"
#include "mkfs.h"

#ifndef MKE2FS_PATH
#define MKE2FS_PATH "/sbin/mke2fs"
#endif

/* o and t as the library's mke2fs call takes them
 * (extref_build_mke2fs_of), and what the run derived from -d. */
static void mke2fs_of(const struct extref_build_args *o,
		      const struct extref_build_target *t,
		      struct extref_build_mke2fs *m)
{
	extref_build_mke2fs_of(o, t, m);
	if (!o->inodes)
		m->inodes = plan.inodes;
	if (!o->journal_given)
		m->journal_opt = plan.journal_opt;
	m->reserved_zero = plan.reserved_zero && !o->reserved_given;
	m->source_digest = plan.source_digest;
	if (plan.archive)
		m->need_for = plan.archive;
	m->need = o->source ? plan.source_need : 0;
}

const char *mke2fs_path(void)
{
	return MKE2FS_PATH;
}

int run_mke2fs(const struct extref_build_args *o, const struct extref_build_target *t)
{
	struct extref_build_tool tool = {
		.name = "mke2fs", .path = MKE2FS_PATH,
		.env_var = "MKFS_EXTREF_MKE2FS", .child = extref_build_guard_child,
	};
	struct extref_build_mke2fs m;
	struct extref_build_opts b;
	char why[8192];
	sigset_t sigs;
	errcode_t err;

	mke2fs_of(o, t, &m);
	cleanup_signals(&sigs);
	tool.signals = &sigs;
	build_opts_of(o, &b);
	err = extref_build_mke2fs_run(&m, &b, &tool, why, sizeof(why));
	if (err)
		error_line("%s", why);
	else if (o->verbose)
		fputs(tool.output, stdout);
	free(tool.output);
	return err ? -1 : 0;
}
