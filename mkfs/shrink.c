/*
 * shrink.c --- mkfs.extref --convert --shrink: after the conversion (and
 * the dedupe), the image is cut down to the size a fresh build of what
 * it holds would have (shrink_size.c), and the file with it.
 *
 * The steps, each finished before the next starts:
 *   1. the inode tables are laid out again for the inodes per group a
 *      fresh build of that size would have (shrink_itable.c,
 *      shrink_renum.c), through e2fsprogs' undo io manager: every inode
 *      in use then lies in the groups that stay;
 *   2. the stock resize2fs cuts the filesystem to that size (resize_run.c:
 *      the blocks above it move down, shared ones staying shared; the
 *      groups cut off go), in a second run when the first cannot use the
 *      metadata blocks of the groups it cuts off;
 *   3. the reference-count tree, whose records name the blocks' old
 *      places, is rebuilt from the extents by the fsck core (one
 *      transaction of the journal, as fsck.extref repairs);
 *   4. the file is truncated to the filesystem and its free blocks are
 *      punched out.
 * Everything that can refuse (a block device, no resize2fs, an undo file
 * left) is checked by shrink_check() before anything is written; a
 * filesystem stock e2fsck -fn finds damaged by shrink_check_clean(),
 * after the journal's replay and before the conversion (resize2fs moves
 * blocks and rewrites what points at them: it wants a clean filesystem,
 * which its -f would not check).  A crash or a failure after that leaves
 * what docs/mkfs.extref.8 describes: stock e2fsck -fy, then
 * fsck.extref -fy, repair it with every file's bytes.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "extref.h"
#include "extref_fsck.h"
#include "mkfs.h"
#include "shrink_int.h"

#ifdef EXTREF_FAULT_INJECTION
extern io_manager extref_fault_io_manager;
#endif

#ifdef EXTREF_FAULT_INJECTION
/*
 * Crash tests only (configure --enable-fault-injection):
 * EXTREF_FAULT_SHRINK_STEP=STEP ends the run as a kill would (_exit, no
 * clean-up) right after STEP: "itable" (the new layout), "resize" (the
 * cut) or "rebuild"; EXTREF_FAULT_SHRINK=MODE runs the writes of the
 * rebuild under EXTREF_FAULT=MODE (libfs/txn/faultio.c).
 * EXTREF_FAULT_SHRINK_KILL=N kills the run likewise in the middle of the
 * new layout, after its N-th unit: the resize inode dropped, the journal
 * made again (each when it is), then each inode written, then each
 * directory;
 * EXTREF_FAULT_SHRINK_FAIL=N makes the N-th fail instead (EIO).  Crashes inside
 * resize2fs come from its own TEST_IO_WRITE_ABORT (e2fsprogs' test_io
 * manager).
 */
static int fault_step(const char *step)
{
	const char *s = getenv("EXTREF_FAULT_SHRINK_STEP");

	return s && !strcmp(s, step);
}

static void fault_enter(const char *step)
{
	const char *mode = getenv("EXTREF_FAULT_SHRINK");

	if (fault_step(step) && mode)
		setenv("EXTREF_FAULT", mode, 1);
}

static void fault_leave(const char *step)
{
	if (!fault_step(step))
		return;
	fprintf(stderr, "EXTREF_FAULT_SHRINK_STEP: killed after %s\n", step);
	_exit(137);
}

errcode_t shrink_tick(void)
{
	static unsigned long n;
	const char *kill = getenv("EXTREF_FAULT_SHRINK_KILL");
	const char *fail = getenv("EXTREF_FAULT_SHRINK_FAIL");

	n++;
	if (kill && n == strtoul(kill, NULL, 10)) {
		fprintf(stderr, "EXTREF_FAULT_SHRINK_KILL: killed after %lu\n",
			n);
		_exit(137);
	}
	if (fail && n == strtoul(fail, NULL, 10)) {
		fprintf(stderr, "EXTREF_FAULT_SHRINK_FAIL: %lu fails\n", n);
		return EIO;
	}
	return 0;
}
#else
#define fault_enter(step)	do { } while (0)
#define fault_leave(step)	do { } while (0)
errcode_t shrink_tick(void)
{
	return 0;
}
#endif

/* unix_io, or (test builds, EXTREF_FAULT set) the fault injector */
static io_manager shrink_io(void)
{
#ifdef EXTREF_FAULT_INJECTION
	const char *fault = getenv("EXTREF_FAULT");

	if (fault && *fault)
		return extref_fault_io_manager;
#endif
	return unix_io_manager;
}

/*
 * The undo files left, in the order e2undo must take them (the newest
 * first: the cut's, the tail it saved, the new layout's), as one line
 * of advice in buf; 0 when none is left.  After an e2undo that says
 * "Incomplete undo record" (a killed run), it has marked the superblock
 * for a check, and the next ones need -f.
 */
static int undo_order(const struct mkfs_opts *o, char *buf, size_t len)
{
	size_t at = 0;
	int n = 0;

	buf[0] = 0;
	for (int k = UNDO_CUT; k <= UNDO_LAYOUT && at < len; k++) {
		const char *f = undo_file(o, (enum undo_kind)k);

		if (access(f, F_OK))
			continue;
		at += (size_t)snprintf(buf + at, len - at, "%se2undo %s %s",
				       n ? ", then " : "run ", f, o->image);
		n++;
	}
	if (n && at < len)
		snprintf(buf + at, len - at, "%s, then e2fsck -fy %s",
			 n > 1 ? " (after one that says \"Incomplete undo "
			 "record\", the next with e2undo -f)" : "", o->image);
	return n;
}

void shrink_check_clean(const struct mkfs_opts *o)
{
	ext2_filsys fs;

	if (ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			 unix_io_manager, &fs) == 0) {
		int stable = ext2fs_has_feature_stable_inodes(fs->super);

		ext2fs_close_free(&fs);
		if (stable)
			fatal("%s: --shrink: the filesystem has stable_inodes "
			      "(inode numbers must not change; resize2fs will "
			      "not shrink it either); nothing was changed",
			      o->image);
	}
	if (run_e2fsck_fn(o))
		fatal("%s: e2fsck -fn finds it damaged (above): --shrink runs "
		      "only on a clean filesystem; run e2fsck -fy %s first; "
		      "nothing was changed", o->image, o->image);
}

void shrink_check(const struct mkfs_opts *o)
{
	char order[8 * PATH_MAX];

	/* a journal that needs recovery is replayed next (convert.c) */
	if (extref_image_is_blockdev(o->image))
		fatal("%s: --shrink cuts an image file; %s is a block device",
		      o->image, o->image);
	if (undo_order(o, order, sizeof(order)))
		fatal("%s: undo files of an interrupted shrink are left: %s; "
		      "nothing was changed", o->image, order);
	if (access("/sbin/resize2fs", X_OK) && !getenv("MKFS_EXTREF_RESIZE2FS")
	    && system("command -v resize2fs >/dev/null 2>&1"))
		fatal("%s: --shrink needs the stock resize2fs (e2fsprogs): "
		      "not found; nothing was changed", o->image);
}

/* The filesystem's size and the size to cut it to, in blocks (with
 * stuck, what one run of resize2fs can reach). */
static errcode_t measure(const struct mkfs_opts *o, blk64_t *blocks,
			 blk64_t *target, unsigned int *bs, blk64_t *stuck)
{
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	*blocks = ext2fs_blocks_count(fs->super);
	*target = shrink_target_as_is(fs, o->headroom);
	*bs = fs->blocksize;
	/* the new end moves up by what is stuck below it, which may
	 * then hold more of it */
	for (int i = 0; stuck && i < 64; i++) {
		blk64_t s = shrink_stuck(fs, *target + (i ? *stuck : 0));

		if (i && s == *stuck)
			break;
		*stuck = s;
	}
	ext2fs_close_free(&fs);
	return 0;
}

/* After the first cut: the new layout stays (its undo file goes); or,
 * the cut rolled back, the new layout is taken back too; or, the cut's
 * rollback failed, its undo file is kept for the user too. */
static int layout_settle(const struct mkfs_opts *o, int cut_rc)
{
	sigset_t old;
	int rc = cut_rc;

	cleanup_block(&old);
	if (cut_rc == -1) {
		/* kept: the end of the run names the order (undo_order) */
	} else if (cut_rc != -2) {
		unlink(undo_file(o, UNDO_LAYOUT));
	} else if (run_e2undo(o, undo_file(o, UNDO_LAYOUT))) {
		rc = -1;
	} else {
		error_line("%s: rolled back the new layout too: the image is "
			   "as before the shrink", o->image);
	}
	cleanup_unblock(&old);
	return rc;
}

/*
 * Step 2: resize2fs down to the target, if smaller;
 * in two runs when the first cannot use the metadata blocks of the
 * groups it cuts off.  0, or run_resize2fs's -1 or -2 (rolled back).
 */
static int cut_blocks(const struct mkfs_opts *o, int layout)
{
	blk64_t blocks, target, stuck;
	unsigned int bs;
	errcode_t err;
	int run;

	for (run = 0; run < 2; run++) {
		err = measure(o, &blocks, &target, &bs, &stuck);
		if (err) {
			error_line("%s: %s while measuring", o->image,
				   error_message(err));
			if (run == 0 && layout)
				layout_settle(o, 0);
			return -1;
		}
		if (target >= blocks)
			return run == 0 && layout ? layout_settle(o, 0) : 0;
		if (target + stuck >= blocks)
			stuck = 0;
		progress_update("shrinking", 0, 0);
		err = run_resize2fs(o, target + stuck, undo_file(o, UNDO_CUT));
		if (run == 0 && layout)
			err = layout_settle(o, (int)err);
		if (err)
			return (int)err;
		if (!stuck)
			break;
	}
	return 0;
}

/* What step 1 does to fs: its journal's new size (0: kept), and the
 * inodes per group (0: kept) with the groups and size they are for. */
struct layout_plan {
	int		resize_inode;	/* drop it */
	blk64_t		jblocks;
	__u32		ipg;
	dgrp_t		groups;
	blk64_t		target;
};

static void plan_layout(ext2_filsys fs, const struct mkfs_opts *o,
			struct layout_plan *p)
{
	p->ipg = shrink_ipg(fs, o->headroom, &p->target);
	p->groups = (dgrp_t)((p->target - fs->super->s_first_data_block +
			      fs->super->s_blocks_per_group - 1) /
			     fs->super->s_blocks_per_group);
	if (p->ipg == fs->super->s_inodes_per_group)
		p->ipg = 0;
}

/* Whether step 1 has anything to do (read-only). */
static errcode_t plan_first(const struct mkfs_opts *o, struct layout_plan *p)
{
	ext2_filsys fs;
	errcode_t err;

	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	p->resize_inode = shrink_drop_resize_inode_wanted(fs);
	p->jblocks = shrink_journal_want(fs);
	plan_layout(fs, o, p);
	ext2fs_close_free(&fs);
	return err;
}

/* Step 1 through e2fsprogs' undo io manager; *wrote once a write may
 * have gone out (before, a failure left the image as it was). */
static errcode_t relayout_undo(const struct mkfs_opts *o,
			       struct layout_plan *p, int *wrote)
{
	ext2_filsys fs;
	errcode_t err;

	err = set_undo_io_backing_manager(shrink_io());
	if (!err)
		err = undo_file_set(undo_file(o, UNDO_LAYOUT));
	if (!err)
		err = ext2fs_open2(o->image, NULL,
				   EXT2_FLAG_64BITS | EXT2_FLAG_RW, 0, 0,
				   undo_io_manager, &fs);
	if (err)
		return err;
	if (o->have_epoch)
		fs->now = o->epoch;
	err = undo_first_write(fs);
	if (!err && p->resize_inode) {
		*wrote = 1;
		err = shrink_drop_resize_inode(fs);
		if (!err)
			err = shrink_tick();
		/* the plan, without the reserved descriptor blocks */
		if (!err && !p->jblocks)
			plan_layout(fs, o, p);
	}
	if (!err && p->jblocks) {
		*wrote = 1;
		err = shrink_journal(fs, p->jblocks);
		if (!err)
			err = shrink_tick();
		/* the inodes' plan, for the journal's new size */
		if (!err)
			plan_layout(fs, o, p);
	}
	if (!err && p->ipg)
		err = shrink_itable(fs, p->ipg, p->groups, p->target, wrote);
	if (err) {
		ext2fs_free(fs);	/* nothing more written */
		return err;
	}
	*wrote = 1;
	return ext2fs_close_free(&fs);
}

/*
 * Step 1: the resize inode of a 1 KiB-block image dropped
 * (shrink_resize_inode.c), the journal cut to a fresh build's
 * (shrink_journal.c), and the
 * inode tables laid out for the inodes a fresh build would have
 * (shrink_itable.c), before the cut.  0: nothing to do; 1: done, its
 * undo file kept (layout_settle); -2 when it failed and the image is as
 * it was (put back by e2undo, or never written); -1 otherwise (errors
 * printed).
 */
static int relayout(const struct mkfs_opts *o)
{
	struct layout_plan p;
	sigset_t old;
	errcode_t err;
	int rc = 0, wrote = 0;

	memset(&p, 0, sizeof(p));
	err = plan_first(o, &p);
	if (err) {
		error_line("%s: %s while measuring", o->image,
			   error_message(err));
		return -1;
	}
	if (!p.resize_inode && !p.jblocks && !p.ipg)
		return 0;
	progress_update("laying out the journal and inode tables", 0, 0);
	unlink(undo_file(o, UNDO_LAYOUT));
	cleanup_block(&old);	/* a signal waits for the undo file */
	err = relayout_undo(o, &p, &wrote);
	if (!err && run_e2fsck_fn(o)) {
		error_line("%s: e2fsck -fn finds the image damaged after the "
			   "new layout (above)", o->image);
		err = EXT2_ET_FILESYSTEM_CORRUPTED;
	}
	if (err) {
		error_line("%s: %s while laying out the journal and inode "
			   "tables", o->image, error_message(err));
		if (!wrote) {
			unlink(undo_file(o, UNDO_LAYOUT));
			rc = -2;
		} else {
			rc = run_e2undo(o, undo_file(o, UNDO_LAYOUT)) ? -1 : -2;
		}
		if (rc == -2)
			error_line("%s: rolled back: the image is as before the "
				   "new layout; cut with its own", o->image);
	} else {
		rc = 1;		/* done, its undo file kept */
	}
	cleanup_unblock(&old);
	return rc;
}


/* Step 3: the tree's records follow their blocks (the fsck core's
 * rebuild, quietly); anything it cannot fix is an error. */
static errcode_t rebuild_tree(const struct mkfs_opts *o)
{
	struct extref_fsck_opts fo;
	struct extref_fsck_result res;
	extref_fs_t xfs;
	errcode_t err;

	memset(&fo, 0, sizeof(fo));
	memset(&res, 0, sizeof(res));
	fo.mode = EXTREF_FSCK_YES;
	err = extref_fs_open(o->image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			     &xfs, NULL);
	if (err)
		return err;
	if (o->have_epoch)
		extref_fs_ext2(xfs)->now = o->epoch;
	progress_update("rebuilding the reference counts", 0, 0);
	err = extref_fsck(extref_fs_ext2(xfs), &fo, &res);
	if (!err && res.unfixed)
		err = EXTREF_ERR_UNTRUSTED;
	if (err) {
		extref_fs_abort(xfs);
		return err;
	}
	return extref_fs_close(xfs);
}

/*
 * The blocks of each inode table past its last inode in use
 * (itable_unused: nothing reads them) count as free for the punch, as a
 * fresh build never writes them.  fs is open read-only: only the
 * in-memory bitmap changes.
 */
static void unused_itable_free(ext2_filsys fs)
{
	__u32 ipb = EXT2_INODES_PER_BLOCK(fs->super);

	if (!ext2fs_has_group_desc_csum(fs))
		return;
	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		__u32 used = fs->super->s_inodes_per_group -
			     ext2fs_bg_itable_unused(fs, g);
		blk64_t keep = (used + ipb - 1) / ipb;

		if (keep < fs->inode_blocks_per_group)
			ext2fs_unmark_block_bitmap_range2(fs->block_map,
				ext2fs_inode_table_loc(fs, g) + keep,
				(unsigned int)(fs->inode_blocks_per_group -
					       keep));
	}
}

/* Step 5: the file as long as the filesystem, its free blocks holes. */
static errcode_t cut_file(const struct mkfs_opts *o, blk64_t *blocks)
{
	struct punch_list pl = { NULL, 0, 0, 0 };
	ext2fs_block_bitmap all = NULL;
	struct stat st;
	ext2_filsys fs;
	uint64_t bytes, punched;
	errcode_t err;

	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	*blocks = ext2fs_blocks_count(fs->super);
	bytes = *blocks * fs->blocksize;
	err = punch_snapshot(fs, &all);
	if (!err) {
		ext2fs_mark_block_bitmap_range2(all,
				fs->super->s_first_data_block,
				*blocks - fs->super->s_first_data_block);
		unused_itable_free(fs);
		err = punch_plan(fs, all, &pl);	/* every free block */
	}
	ext2fs_close_free(&fs);
	if (!err && stat(o->image, &st) == 0 && (uint64_t)st.st_size > bytes &&
	    truncate(o->image, (off_t)bytes) < 0)
		err = errno;
	if (!err)
		err = punch_apply(o->image, &pl, &punched);
	punch_free(&pl);
	return err;
}

static void set_note(const struct mkfs_opts *o)
{
	char text[2 * 4096 + 160];

	snprintf(text, sizeof(text), "%s: %s: interrupted while shrinking: "
		 "run e2fsck -fy %s, then fsck.extref -fy %s", prog, o->image,
		 o->image, o->image);
	cleanup_set_note(text);
}

int shrink_image(const struct mkfs_opts *o)
{
	extref_image_lock_t lock;
	blk64_t before, target, after;
	unsigned int bs;
	errcode_t err;
	int rc, layout;

	err = measure(o, &before, &target, &bs, NULL);
	if (!err)
		err = extref_image_lock(o->image, EXTREF_LOCK_WRITE, &lock);
	if (err) {
		error_line("%s: %s", o->image, error_message(err));
		return 1;
	}
	set_note(o);
	layout = relayout(o);
	fault_leave("itable");
	rc = layout == -1 ? -1 : cut_blocks(o, layout == 1);
	if (!rc && layout == -2)
		rc = -2;		/* cut, but with its own layout */
	fault_leave("resize");
	extref_image_unlock(lock);
	/* rolled back (-2): the image is sound, the counts follow what the
	 * runs before moved */
	if (!rc || rc == -2) {
		fault_enter("rebuild");
		err = rebuild_tree(o);
		fault_leave("rebuild");
		if (err)
			error_line("%s: %s while rebuilding the reference "
				   "counts", o->image, error_message(err));
	}
	if ((!rc || rc == -2) && !err) {
		err = cut_file(o, &after);
		if (err)
			error_line("%s: %s while cutting the file", o->image,
				   error_message(err));
	}
	progress_end();
	if (rc == -2 && !err) {
		cleanup_set_note(NULL);
		error_line("%s: sound, with every file, but %llu blocks "
			   "long, not shrunk as far as planned", o->image,
			   (unsigned long long)after);
		return 1;
	}
	if (rc || err) {
		char order[8 * PATH_MAX];

		if (undo_order(o, order, sizeof(order)))
			error_line("%s: not shrunk to the end: to put it "
				   "back, %s", o->image, order);
		else
			error_line("%s: not shrunk to the end: run e2fsck "
				   "-fy %s, then fsck.extref -fy %s", o->image,
				   o->image, o->image);
		return 1;
	}
	cleanup_set_note(NULL);
	if (!o->quiet)
		printf("%s: shrunk from %llu to %llu blocks (%.1f MiB)\n",
		       o->image, (unsigned long long)before,
		       (unsigned long long)after,
		       (double)after * bs / 1048576.0);
	return 0;
}
