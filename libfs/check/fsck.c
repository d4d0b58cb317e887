/*
 * fsck.c --- the checker's driver: passes in order, then the repairs.
 */
#include <stdlib.h>
#include <string.h>
#include "extref_fsck_int.h"

/* Pass 0: what the image says it is. */
static void setup(struct xr_fsck *c)
{
	struct ext2_inode inode;

	c->had_feature = ext2fs_has_feature_shared_blocks(c->fs->super);
	c->plain = !extref_fsck_is_extref(c->fs);
	c->tree_present = !ext2fs_read_inode(c->fs, EXTREF_INO, &inode) &&
			  inode.i_mode != 0;
	/* The structure check needs the feature; set it in memory only. */
	ext2fs_set_feature_shared_blocks(c->fs->super);
}

static errcode_t fix_feature(struct xr_fsck *c)
{
	int want = c->tree_present;	/* records alone: cross-links */

	if (c->had_feature || !want) {
		if (!c->had_feature)
			ext2fs_clear_feature_shared_blocks(c->fs->super);
		return 0;
	}
	if (xr_problem(c, PR_X_FEATURE_MISSING, "%s",
		       c->res->records ? "blocks are shared" :
		       "inode 5 holds a tree")) {
		ext2fs_mark_super_dirty(c->fs);
		c->fs->flags &= ~EXT2_FLAG_MASTER_SB_ONLY;
		c->res->changed = 1;
		c->had_feature = 1;
	} else {
		ext2fs_clear_feature_shared_blocks(c->fs->super);
	}
	return 0;
}

static void progress(struct xr_fsck *c, int pass)
{
	xr_fsck_progress(c, pass, 1, 1);
}

/* After copies were made: the mappings again, for the rebuild. */
static errcode_t rescan(struct xr_fsck *c)
{
	struct extref_fsck_result keep = *c->res;
	errcode_t err;

	c->nmap = c->nmeta = c->nnodes = c->nbad = c->ndirs = 0;
	err = xr_fsck_scan(c);
	if (!err)
		xr_fsck_sort(c);
	*c->res = keep;		/* the figures describe the first look */
	return err;
}

/* The rebuild: one transaction, whole or not at all (fsck_txn.c). */
static errcode_t rebuild_atomic(struct xr_fsck *c)
{
	errcode_t err = xr_fsck_tx_begin(c, 1);

	if (err)
		return err;
	return xr_fsck_tx_end(c, xr_fsck_rebuild(c));
}

static errcode_t run_passes(struct xr_fsck *c)
{
	errcode_t err;

	setup(c);
	progress(c, 0);
	if (c->plain)
		return 0;	/* e2fsck's alone: nothing of ours here */
	err = xr_fsck_scan(c);
	if (err || c->probe_dirty)
		return err;
	xr_fsck_sort(c);
	xr_fsck_check_metadata(c);
	xr_fsck_check_special(c);
	err = c->err;
	if (!err)
		err = xr_fsck_check_tree_blocks(c);
	if (!err)
		err = xr_fsck_check_bitmap(c);
	if (!err)
		err = xr_fsck_check_meta_bitmap(c);
	if (err || c->probe_dirty)
		return err;
	progress(c, 1);
	if (!err && c->tree_present)
		err = xr_fsck_structure(c);
	progress(c, 2);
	if (!err)
		err = xr_fsck_compare(c);
	progress(c, 3);
	if (!err)
		err = xr_fsck_foreign(c);	/* fsck_foreign.c */
	if (err || c->probe_dirty)
		return err;
	/* Sharing without any tree: the tree is missing. */
	if (!c->tree_present && c->res->records &&
	    (err = xr_problem_defer(c, PR_X_TREE_MISSING,
				    "%llu blocks are shared",
				    (unsigned long long)c->res->shared_blocks)))
		return err;
	err = fix_feature(c);
	if (c->probe)
		return err;	/* clean unless it met a problem */
	if (!err && c->extents_bad) {
		/*
		 * Mappings below the damage are unknown: rebuilt from what
		 * was read, a count could end up below the real one.  The
		 * tree waits until e2fsck has repaired the extent trees.
		 */
		c->no_fix = 1;
		xr_problems_flush(c);
		c->no_fix = 0;
		return 0;
	}
	/* a rebuild, or copies (0x0102, -E unshare) and then one */
	if (!err && (xr_problems_flush(c) | (c->nuns != 0))) {
		if (c->nuns && (err = xr_fsck_unshare(c)) == 0)
			err = rescan(c);
		if (!err)
			err = xr_fsck_tx_before_rebuild(c);
		if (!err)
			err = rebuild_atomic(c);
	}
	return err;
}

/*
 * One run of the passes; with probe, the silent first look (lean
 * mappings, problems only noted in *dirty, nothing changed), which
 * *calls counts the progress reports of; without, a full run that
 * passes over the first *calls progress reports (the probe made them).
 */
static errcode_t run(ext2_filsys fs, const struct extref_fsck_opts *opts,
		     struct extref_fsck_result *res, int probe,
		     unsigned *calls, int *dirty)
{
	struct xr_fsck c;
	errcode_t err;
	size_t i;
	int saved_flags;

	memset(res, 0, sizeof(*res));
	memset(&c, 0, sizeof(c));
	c.fs = fs;
	c.first_block = fs->super->s_first_data_block;
	c.nblocks = ext2fs_blocks_count(fs->super);
	c.opts = opts;
	c.res = res;
	if (probe && !xr_fsck_lean_fits(&c)) {
		*calls = 0;
		*dirty = 1;
		return 0;
	}
	c.probe = probe;
	if (!probe)
		c.progress_skip = *calls;
	/* Inode and extent-block checksums are e2fsck's to check and fix. */
	saved_flags = fs->flags & EXT2_FLAG_IGNORE_CSUM_ERRORS;
	/* a repair is one transaction of the journal (fsck_txn.c); the
	 * probe changes nothing */
	if (!probe && (err = xr_fsck_tx_begin(&c, 0)))
		return err;
	fs->flags |= EXT2_FLAG_IGNORE_CSUM_ERRORS;
	err = run_passes(&c);
	fs->flags = (fs->flags & ~EXT2_FLAG_IGNORE_CSUM_ERRORS) | saved_flags;
	if (!c.had_feature)
		ext2fs_clear_feature_shared_blocks(fs->super);
	if (!probe)
		err = xr_fsck_tx_end(&c, err);
	/* a rollback puts back the flags of the last commit */
	fs->flags = (fs->flags & ~EXT2_FLAG_IGNORE_CSUM_ERRORS) | saved_flags;
	for (i = 0; i < c.npend; i++)
		ext2fs_free_mem(&c.pend[i].detail);
	ext2fs_free_mem(&c.pend);
	xr_big_free(&c.map, &c.capmap, sizeof(*c.map));
	xr_big_free(&c.lean, &c.caplean, sizeof(*c.lean));
	ext2fs_free_mem(&c.lean_hash);
	ext2fs_free_mem(&c.meta);
	ext2fs_free_mem(&c.nodes);
	ext2fs_free_mem(&c.bad);
	xr_fsck_names_free(&c);
	ext2fs_free_mem(&c.uns);
	if (probe) {
		*calls = c.progress_calls;
		*dirty = c.probe_dirty;
	}
	return err;
}

/*
 * Test builds: EXTREF_FSCK_FULL=1 runs the full passes only, so that
 * tests can compare the probe's answers with theirs; =probe the probe
 * only, a problem it meets then failing the check with
 * EXT2_ET_OP_NOT_SUPPORTED, so that tests can see it answer alone.
 */
#define PROBE_NO	0
#define PROBE_FIRST	1
#define PROBE_ONLY	2

static int probe_wanted(void)
{
#ifdef EXTREF_FAULT_INJECTION
	const char *full = getenv("EXTREF_FSCK_FULL");

	if (full && !strcmp(full, "1"))
		return PROBE_NO;
	if (full && !strcmp(full, "probe"))
		return PROBE_ONLY;
#endif
	return PROBE_FIRST;
}

/*
 * The probe first (fsck_lean.c): when it meets no problem, its result is
 * the check's; when it meets one, the passes run again in full, which
 * report and repair.  An error of the probe before any problem is the
 * check's error: the full passes make the same calls in the same order
 * up to there, and would fail alike.
 */
errcode_t extref_fsck(ext2_filsys fs, const struct extref_fsck_opts *opts,
		      struct extref_fsck_result *res)
{
	unsigned calls = 0;
	int dirty = 1, want = probe_wanted();
	errcode_t err = 0;

	memset(res, 0, sizeof(*res));
	if (opts->mode != EXTREF_FSCK_NO && !(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	if (want != PROBE_NO)
		err = run(fs, opts, res, 1, &calls, &dirty);
	if (dirty && want == PROBE_ONLY)
		err = err ? err : EXT2_ET_OP_NOT_SUPPORTED;
	else if (dirty)
		err = run(fs, opts, res, 0, &calls, &dirty);
	return err;
}
