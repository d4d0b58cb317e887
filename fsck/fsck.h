/*
 * fsck.h --- fsck.extref front end.
 */
#ifndef FSCK_EXTREF_H
#define FSCK_EXTREF_H

#include "extref_fsck.h"

/* fsck(8) exit codes. */
#define FSCK_OK			0
#define FSCK_NONDESTRUCT	1
#define FSCK_REBOOT		2
#define FSCK_UNCORRECTED	4
#define FSCK_ERROR		8
#define FSCK_USAGE		16
#define FSCK_CANCELED		32

struct fsck_opts {
	const char		*image;
	enum extref_fsck_mode	mode;
	int			force;
	int			verbose;
	int			progress_fd;	/* -C FD, -1 when not given */
	int			no_e2fsck;
	int			stop;		/* a damaged orphan list under -p */
	int			no_replay;	/* -E no_replay (with -n) */
	int			unshare;
	int			e2fsck_clean;	/* e2fsck ran and left no error */
	int			needs_recovery;	/* the superblock said so, as
						   fsck.extref began */
	int			mode_given;	/* -n, -p/-a or -y on the line */
	int			answer_all;	/* ASK: 'a' answered: yes from now */
	blk64_t			backup_sb;	/* opened through this backup */
	unsigned int		backup_bs;	/* of this block size; 0: primary */
	int			foreign;	/* EXTREF_FSCK_FOREIGN_* before
						   anything was written */
};

extern const char *prog;

/* journal_fix.c: a journal inode whose blocks are not its own, said
 * and asked here, is cleared by the library before e2fsck (*recreate:
 * its size) and made again after */
int fix_journal_blocks(struct fsck_opts *o, blk64_t *recreate);
int remake_journal(struct fsck_opts *o, blk64_t nblocks);

/* foreign.c: writes by other tools (FORMAT.md section 11) */
void foreign_before(struct fsck_opts *o);
void foreign_after(const struct fsck_opts *o, extref_fs_t xfs,
		   const struct extref_fsck_result *res);

/* convert_left.c: an interrupted --convert's (or --grow's) undo file
 * beside the image: said (-n), or the repair refused (FSCK_ERROR) */
int convert_left(const struct fsck_opts *o);

/* orphans.c: the orphan list released by the library before e2fsck */
int release_orphans_first(struct fsck_opts *o, extref_image_lock_t *lock);

/* e2fsck_run.c */
int run_e2fsck(const struct fsck_opts *o);
unsigned journal_pending(const struct fsck_opts *o);

/* open_sb.c */
errcode_t open_sb(struct fsck_opts *o, ext2_filsys *fs);

/* report.c */
void print_problem(const struct extref_problem_report *r, void *priv);
void print_progress(int pass, __u64 done, __u64 total, void *priv);
void progress_done(const struct fsck_opts *o);
int ask_problem(const struct extref_problem_report *r, void *priv);
int ask_yes_no(struct fsck_opts *o, const char *question);

#endif
