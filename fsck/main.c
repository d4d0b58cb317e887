/*
 * main.c --- fsck.extref: verify and repair the reference counts of an
 * extref image, after the stock e2fsck has checked the ext4 structure.
 *
 * fsck.extref [-n|-p|-a|-y] [-f] [-v] [-C FD] [-E OPTS] IMAGE
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fsck.h"

const char *prog = "fsck.extref";

static void usage(FILE *f, int status)
{
	fprintf(f,
"Usage: %s [-n|-p|-a|-y] [-f] [-v] [-C FD] [-E OPTIONS] IMAGE\n"
"\n"
"Check the reference counts of an extref image against every extent\n"
"mapping, after running e2fsck in the same mode.\n"
"\n"
"  (none)      on a terminal, ask before each repair, as e2fsck does;\n"
"              otherwise check only, as -n\n"
"  -n          check only, change nothing\n"
"  -p, -a      repair what is safe without asking (preen)\n"
"  -y          repair everything\n"
"  -f          force checking (accepted for e2fsck compatibility)\n"
"  -v          verbose: name the passes, name every owner of a block\n"
"  -C FD       progress: to file descriptor FD, or 0 for a terminal bar\n"
"  -E OPTS     extended options, comma separated:\n"
"                no_e2fsck  skip running e2fsck\n"
"                no_replay  with -n, check an image whose journal needs\n"
"                           recovery as it is on disk (as e2fsck -n does),\n"
"                           not as the journal's replay leaves it\n"
"                unshare    give each extra mapping of blocks mapped several\n"
"                           times without a record its own copy, instead\n"
"                           of recording them as shared\n"
"  -V          print the version\n"
"  -h, --help  this help\n"
"\n"
"Exit status (bits combined, as fsck(8)): 0 clean, 1 errors corrected,\n"
"4 errors left uncorrected, 8 operational error, 16 usage error.\n",
		prog);
	exit(status);
}

static void set_mode(struct fsck_opts *o, enum extref_fsck_mode m, int *seen)
{
	if (*seen && o->mode != m) {
		fprintf(stderr, "%s: only one of -n, -p/-a and -y may be "
			"given\n", prog);
		exit(FSCK_USAGE);
	}
	o->mode = m;
	*seen = 1;
}

static void parse_ext(struct fsck_opts *o, char *arg)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "no_e2fsck"))
			o->no_e2fsck = 1;
		else if (!strcmp(tok, "no_replay"))
			o->no_replay = 1;
		else if (!strcmp(tok, "unshare"))
			o->unshare = 1;
		else {
			fprintf(stderr, "%s: unknown extended option '%s'\n",
				prog, tok);
			exit(FSCK_USAGE);
		}
	}
}

static void parse_args(int argc, char **argv, struct fsck_opts *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c, seen = 0;
	char *end;

	o->mode = EXTREF_FSCK_NO;
	o->progress_fd = -1;
	while ((c = getopt_long(argc, argv, "npayfvC:E:Vh", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'n': set_mode(o, EXTREF_FSCK_NO, &seen); break;
		case 'p':
		case 'a': set_mode(o, EXTREF_FSCK_PREEN, &seen); break;
		case 'y': set_mode(o, EXTREF_FSCK_YES, &seen); break;
		case 'f': o->force = 1; break;
		case 'v': o->verbose = 1; break;
		case 'C':
			o->progress_fd = strtol(optarg, &end, 10);
			if (*end || o->progress_fd < 0) {
				fprintf(stderr, "%s: invalid progress file "
					"descriptor '%s'\n", prog, optarg);
				exit(FSCK_USAGE);
			}
			break;
		case 'E': parse_ext(o, optarg); break;
		case 'V':
			printf("%s %s\n", prog, EXTREF_LIB_VERSION);
			exit(FSCK_OK);
		case 'h': usage(stdout, FSCK_OK); break;
		default: usage(stderr, FSCK_USAGE);
		}
	}
	if (optind != argc - 1)
		usage(stderr, FSCK_USAGE);
	o->image = argv[optind];
	o->mode_given = seen;
	if (o->no_replay && o->mode != EXTREF_FSCK_NO) {
		fprintf(stderr, "%s: -E no_replay needs -n (a repair replays "
			"the journal first)\n", prog);
		exit(FSCK_USAGE);
	}
	if (!seen && isatty(0) && isatty(1))
		o->mode = EXTREF_FSCK_ASK;
}

/*
 * The library opens the image for prepare_feature (and takes the image's
 * lock itself, so the caller's is given up first and taken back after).
 * A read-write open replays a journal that needs recovery, and on an
 * image with a journal fn's change is one transaction of it.  *opened
 * tells whether the open succeeded (a journal it cannot replay fails it).
 */
static errcode_t with_library(struct fsck_opts *o, extref_image_lock_t *lock,
			      errcode_t (*fn)(extref_fs_t), int *opened)
{
	extref_fs_t xfs;
	errcode_t err, err2;
	unsigned n;

	extref_image_unlock(*lock);
	*lock = NULL;
	err = extref_fs_open(o->image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			     &xfs, NULL);
	*opened = !err;
	if (!err) {
		n = extref_fs_replayed(xfs);
		if (n)
			printf("%s: journal recovered by %s (%u "
			       "transaction%s replayed)\n", o->image, prog, n,
			       n == 1 ? "" : "s");
		err = fn ? fn(xfs) : 0;
		if (err)
			extref_fs_abort(xfs);
		else
			err = extref_fs_close(xfs);
	}
	err2 = extref_image_lock(o->image, EXTREF_LOCK_WRITE, lock);
	if (err2)
		*opened = 1;	/* no fallback without the lock */
	return err ? err : err2;
}

/* A journal that needs recovery is replayed before the look at the
 * feature; one the library cannot replay is left to e2fsck. */
static int replay_first(struct fsck_opts *o, extref_image_lock_t *lock)
{
	int opened;
	errcode_t err = with_library(o, lock, NULL, &opened);

	if (err && opened) {
		com_err(prog, err, "while replaying the journal of %s",
			o->image);
		return FSCK_ERROR;
	}
	if (err)
		printf("%s: journal not replayed by %s (%s%s%s): left to "
		       "e2fsck\n", o->image, prog, error_message(err),
		       *extref_journal_detail() ? ": " : "",
		       extref_journal_detail());
	return 0;
}

/*
 * Set shared_blocks before e2fsck runs, on the replayed image and, with
 * a journal, as one transaction of it (the primary superblock is
 * journaled; the backups are written at close, after the checkpoint).
 * Written straight over a journal that still needs recovery, the bit
 * would be undone by e2fsck's replay of a superblock without it, and
 * e2fsck would then clone every shared block.  A crash before the commit
 * leaves the feature unset (the next run sets it again); after it, the
 * replay sets it; backups that differ from the primary are rewritten by
 * e2fsck, which copies the primary's features to them.  Only an image
 * the library cannot open (a journal it cannot replay, which e2fsck will
 * then clear rather than replay) gets the bit written straight
 * (extref_fsck_set_feature_image).
 */
static int set_feature(struct fsck_opts *o, extref_image_lock_t *lock)
{
	int opened;
	errcode_t err = with_library(o, lock, extref_fsck_set_feature, &opened);

	if (err && !opened)
		err = extref_fsck_set_feature_image(o->image);
	if (err) {
		com_err(prog, err, "while setting shared_blocks on %s",
			o->image);
		return FSCK_ERROR;
	}
	return 0;
}

/* Why fs is no extref image (PLAIN_*), 0 when it is one. */
#define PLAIN_NO_TREE		1
#define PLAIN_NO_EXTENTS	2
static int plain_kind(ext2_filsys fs)
{
	if (extref_fsck_is_extref(fs))
		return 0;
	return ext2fs_has_feature_shared_blocks(fs->super) ?
	       PLAIN_NO_EXTENTS : PLAIN_NO_TREE;
}

/*
 * Before e2fsck: without shared_blocks, e2fsck treats every shared block
 * as multiply claimed (slow, and under -y it clones them all).  Set the
 * feature first when inode 5 holds a tree of ours (an extref image that
 * lost it; a plain image is left to e2fsck alone); under -n, skip
 * e2fsck instead; on a terminal without a mode, ask.  Returns exit bits;
 * *skip tells whether to skip e2fsck, *plain why the image is plain
 * ext2/3/4 (PLAIN_*: no feature and no tree of ours, or no extents):
 * nothing for fsck.extref to do.
 */
static int prepare_feature(struct fsck_opts *o, extref_image_lock_t *lock,
			   int *skip, int *plain)
{
	struct extref_fsck_opts probe = { .mode = EXTREF_FSCK_NO };
	struct extref_fsck_result res;
	ext2_filsys fs;
	int st;
	errcode_t err;

	*skip = *plain = 0;
	if (open_sb(o, &fs))
		return 0;	/* e2fsck says why */
	o->needs_recovery = ext2fs_has_feature_journal_needs_recovery(
					fs->super);
	/*
	 * A primary superblock that does not open (torn by a crash) is
	 * e2fsck's to repair from a backup, which carries the feature; the
	 * backup tells whether the image is ours.
	 */
	if (o->backup_sb) {
		*plain = plain_kind(fs);
		ext2fs_close_free(&fs);
		return 0;
	}
	if (o->mode != EXTREF_FSCK_NO &&
	    ext2fs_has_feature_journal_needs_recovery(fs->super)) {
		/* look at (and set the feature on) the replayed image */
		ext2fs_close_free(&fs);
		if ((st = replay_first(o, lock)))
			return st;
		if (open_sb(o, &fs))
			return 0;
	}
	/*
	 * No feature and no tree of ours (or no extents): a plain image,
	 * stock e2fsck's alone.  Blocks it maps twice are cross-links
	 * (e2fsck clones them), never shares: the feature is not set.
	 */
	if ((*plain = plain_kind(fs)) ||
	    ext2fs_has_feature_shared_blocks(fs->super)) {
		ext2fs_close_free(&fs);
		return 0;
	}
	err = extref_fsck(fs, &probe, &res);
	ext2fs_close_free(&fs);
	if (err) {
		com_err(prog, err, "while scanning %s", o->image);
		return FSCK_ERROR;
	}
	if (o->mode == EXTREF_FSCK_ASK) {
		printf("0x%04x shared_blocks feature is not set but %s\n",
		       PR_X_FEATURE_MISSING, res.records ?
		       "blocks are shared" : "inode 5 holds a tree");
		if (!ask_yes_no(o, "Set the feature")) {
			*skip = 1;	/* as -n: e2fsck would clone them all */
			return 0;
		}
	}
	if (o->mode == EXTREF_FSCK_NO) {
		printf("%s: shared_blocks is not set but %s; e2fsck skipped "
		       "(it would take every shared block for a cross-link)\n",
		       o->image, res.records ? "blocks are shared" :
		       "inode 5 holds a tree");
		*skip = 1;
		return 0;	/* the checker reports it again, unfixed */
	}
	if ((st = set_feature(o, lock)))
		return st;
	if (o->mode != EXTREF_FSCK_ASK)
		printf("0x%04x shared_blocks feature is not set but blocks "
		       "are shared or a tree exists (set the feature)\n",
		       PR_X_FEATURE_MISSING);
	return FSCK_NONDESTRUCT;
}

/*
 * The image opened by the library: a journal that needs recovery is
 * replayed first, as e2fsck would have (-n: in memory only, the check
 * sees the replayed image and nothing is written), and on an image with
 * a journal a repair is the journal's transactions.  The library takes
 * the image's lock itself: to write, the caller's is given up first
 * (flock locks of one process on two descriptors exclude each other).
 */
static int open_checked(const struct fsck_opts *o, extref_image_lock_t *lock,
			extref_fs_t *xfs)
{
	int rw = o->mode != EXTREF_FSCK_NO;
	int flags = EXTREF_OPEN_NO_TREE | (rw ? EXTREF_OPEN_RW : 0);
	errcode_t err;
	unsigned n;

	/* e2fsck has just verified every metadata checksum: skip them. */
	if (o->e2fsck_clean)
		flags |= EXTREF_OPEN_FORCE;
	if (o->no_replay)
		flags |= EXTREF_OPEN_NO_JOURNAL;	/* as on disk */
	if (rw) {
		extref_image_unlock(*lock);
		*lock = NULL;
	}
	err = extref_fs_open(o->image, flags, xfs, NULL);
	if (err) {
		com_err(prog, err, "while opening %s", o->image);
		return FSCK_ERROR;
	}
	n = extref_fs_replayed(*xfs);
	if (n && rw)
		printf("%s: journal recovered by %s (%u transaction%s "
		       "replayed)\n", o->image, prog, n, n == 1 ? "" : "s");
	else if (n)
		printf("%s: journal needs recovery: a change was interrupted "
		       "after its commit (%u transaction%s not yet replayed): "
		       "%s -p %s, e2fsck -p or the next extref writer replays "
		       "it; checked as %s's verified replay of it leaves it, in "
		       "memory only, nothing written (-E no_replay: as on "
		       "disk)\n", o->image, n, n == 1 ? "" : "s", prog,
		       o->image, prog);
	else if (!rw && !o->no_replay && !extref_fs_replay_error(*xfs) &&
		 o->needs_recovery)
		printf("%s: journal needs recovery but holds no committed "
		       "transaction: the image is as the last change that "
		       "completed left it; %s -p %s or the next extref writer "
		       "clears the flag\n", o->image, prog, o->image);
	if (o->no_replay && ext2fs_has_feature_journal_needs_recovery(
				extref_fs_ext2(*xfs)->super))
		printf("%s: journal needs recovery: checked as it is on "
		       "disk, unreplayed (-E no_replay)\n", o->image);
	if (extref_fs_replay_error(*xfs))
		printf("%s: journal needs recovery but cannot be replayed "
		       "(%s%s%s): checked as it is on disk\n", o->image,
		       error_message(extref_fs_replay_error(*xfs)),
		       *extref_journal_detail() ? ": " : "",
		       extref_journal_detail());
	return 0;
}

/* Close what check_counts opened: after an error the image stays as
 * the last commit left it. */
static errcode_t close_checked(extref_fs_t xfs, errcode_t err)
{
	if (err) {
		extref_fs_abort(xfs);
		return 0;
	}
	return extref_fs_close(xfs);
}

/*
 * -n on an image whose primary superblock does not open: e2fsck -n
 * checked it through a backup and wrote nothing; so are the counts
 * checked (no journal replay: e2fsck -n does not replay one either).
 */
static errcode_t check_backup(const struct fsck_opts *o,
			      const struct extref_fsck_opts *eo,
			      struct extref_fsck_result *res)
{
	ext2_filsys fs;
	errcode_t err;

	printf("%s: primary superblock damaged: counts checked through the "
	       "backup at block %llu, as e2fsck -n does\n", o->image,
	       (unsigned long long)o->backup_sb);
	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, o->backup_sb,
			   o->backup_bs, unix_io_manager, &fs);
	if (err)
		return err;
	err = extref_fsck(fs, eo, res);
	ext2fs_close_free(&fs);
	return err;
}

static int check_counts(struct fsck_opts *o, extref_image_lock_t *lock)
{
	struct extref_fsck_opts eo = {
		.mode = o->mode, .unshare = o->unshare, .verbose = o->verbose,
		.report = print_problem,
		.progress = o->progress_fd >= 0 || o->verbose ?
			    print_progress : NULL,
		.priv = o,
		.ask = ask_problem,
		.foreign = o->foreign,
	};
	struct extref_fsck_result res;
	extref_fs_t xfs;
	errcode_t err, cerr;
	int st, bad_journal;

	bad_journal = 0;
	if (o->backup_sb && o->mode == EXTREF_FSCK_NO) {
		err = check_backup(o, &eo, &res);
		progress_done(o);
		cerr = 0;
	} else {
		if ((st = open_checked(o, lock, &xfs)))
			return st;
		bad_journal = extref_fs_replay_error(xfs) != 0;
		err = extref_fsck(extref_fs_ext2(xfs), &eo, &res);
		progress_done(o);
		if (!err)
			foreign_after(o, bad_journal ? NULL : xfs, &res);
		cerr = close_checked(xfs, err);
	}
	if (err || cerr) {
		com_err(prog, err ? err : cerr, "while checking %s", o->image);
		return FSCK_ERROR;
	}
	/* one line for the passes, as e2fsck's last line for its own */
	printf("%s: %llu inodes, %llu extent mappings, %llu shared "
	       "blocks in %llu records; %d problems, %d fixed\n",
	       o->image, (unsigned long long)res.inodes,
	       (unsigned long long)res.mappings,
	       (unsigned long long)res.shared_blocks,
	       (unsigned long long)res.records, res.problems, res.fixed);
	if (res.unfixed && o->mode == EXTREF_FSCK_PREEN)
		printf("\n%s: UNEXPECTED INCONSISTENCY; RUN %s MANUALLY.\n"
		       "\t(i.e., without -a or -p options)\n", o->image, prog);
	/* a journal that needs recovery and does not verify: left as is */
	return (res.fixed ? FSCK_NONDESTRUCT : 0) |
	       (res.unfixed || bad_journal ? FSCK_UNCORRECTED : 0);
}

/*
 * e2fsck's rules for a mounted filesystem: -n checks it with a warning
 * (the answers may be wrong while the kernel changes it); a repair is
 * refused (e2fsck -p and -y abort; on a terminal e2fsck would ask
 * whether to go on, and fsck.extref refuses).  Then the image's lock, held until exit and
 * across e2fsck (which takes no flock): exclusive to repair, shared for
 * -n.  Returns exit bits.
 */
static int guard(const struct fsck_opts *o, extref_image_lock_t *lock)
{
	int write = o->mode != EXTREF_FSCK_NO, mflags = 0;
	errcode_t err;

	err = ext2fs_check_if_mounted(o->image, &mflags);
	if (err) {
		com_err(prog, err, "while determining whether %s is mounted",
			o->image);
		return FSCK_ERROR;
	}
	if (mflags & EXT2_MF_MOUNTED) {
		if (!write) {
			printf("Warning!  %s is mounted.\n", o->image);
		} else {
			printf("%s is mounted.\n%s: cannot repair a mounted "
			       "filesystem, aborting (unmount it, or check "
			       "with -n).\n", o->image, prog);
			return FSCK_ERROR;
		}
	}
	err = extref_image_lock(o->image, write ? EXTREF_LOCK_WRITE : 0, lock);
	if (err) {
		com_err(prog, err, "while opening %s", o->image);
		if (*extref_image_lock_holder())
			fprintf(stderr, "%s: %s: the lock is %s\n", prog,
				o->image, extref_image_lock_holder());
		return FSCK_ERROR;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct fsck_opts o;
	extref_image_lock_t lock = NULL;
	int status, skip, plain, st;
	blk64_t new_journal;

	memset(&o, 0, sizeof(o));
	add_error_table(&et_ext2_error_table);
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv, &o);
	if ((status = convert_left(&o)))
		return status;
	if ((status = guard(&o, &lock)))
		return status;
	foreign_before(&o);	/* before anything here writes */
	status = fix_journal_blocks(&o, &new_journal);
	if (status & FSCK_ERROR)
		goto out;
	status |= prepare_feature(&o, &lock, &skip, &plain);
	if (!(status & FSCK_ERROR) && !plain)
		status |= release_orphans_first(&o, &lock);
	if ((status & FSCK_ERROR) || o.stop)
		goto out;
	if (!o.no_e2fsck && !skip && !journal_pending(&o)) {
		st = run_e2fsck(&o);
		if (st & FSCK_ERROR) {
			fprintf(stderr, "%s: e2fsck could not check %s "
				"(exit %d)\n", prog, o.image, st);
			status |= st;
			goto out;
		}
		status |= st;
		o.e2fsck_clean = !(st & (FSCK_UNCORRECTED | FSCK_ERROR));
	}
	if (new_journal)
		status |= remake_journal(&o, new_journal);
	if (plain)
		printf("%s: not an extref image (%s): e2fsck's check is the "
		       "whole check\n", o.image, plain == PLAIN_NO_EXTENTS ?
		       "shared_blocks without the extent feature" :
		       "no shared_blocks feature, no tree in inode 5");
	else
		status |= check_counts(&o, &lock);
out:
	extref_image_unlock(lock);
	return status;
}
