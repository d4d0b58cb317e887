/*
 * extref_fsck.h --- the checker core shared by fsck.extref and the debug
 * shell's "check": verify reference counts against every extent mapping
 * and repair them.
 *
 * Passes (problem codes are grouped by pass, 0xPPNN):
 *   0  set-up: the feature bit, inode 5, the tree header;
 *   1  scan: every in-use inode's extent mappings and the filesystem's
 *      metadata blocks;
 *   2  tree structure: every node and the free list;
 *   3  compare: expected counts (sorted sweep of the mappings) against
 *      the tree's records.
 * Repairs: set the feature, mark mapped blocks in use, rebuild the tree
 * from the expected counts.  A block mapped several times with no record
 * is recorded (kept shared, nothing lost) unless unshare is asked for.
 */
#ifndef EXTREF_FSCK_H
#define EXTREF_FSCK_H

#include "extref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported; the rest of the library is not. */
#pragma GCC visibility push(default)

/* Problem codes: stable, never reused. */
#define PR_X_FEATURE_MISSING	0x0001	/* blocks shared, feature off */
#define PR_X_TREE_MISSING	0x0002	/* feature on, no tree */
#define PR_X_TREE_UNREADABLE	0x0003	/* header fails validation */
#define PR_X_INO5_BAD		0x0004	/* inode 5 not a regular extent file */
#define PR_X_JOURNAL_OVERLAP	0x0005	/* journal's blocks not its own */
#define PR_X_EXTENT_CORRUPT	0x0101	/* an inode's extent tree unreadable */
#define PR_X_DATA_IS_METADATA	0x0102	/* a data block is also metadata */
#define PR_X_MAPPED_BLOCK_FREE	0x0103	/* mapped block free in the bitmap */
#define PR_X_META_BLOCK_FREE	0x0104	/* extent or xattr block free */
#define PR_X_TREE_NODE		0x0201	/* a node fails validation */
#define PR_X_TREE_FREE_LIST	0x0202	/* free list damaged */
#define PR_X_TREE_LOST_BLOCK	0x0203	/* block of inode 5 unaccounted */
#define PR_X_TREE_HEADER_COUNT	0x0204	/* header record count wrong */
#define PR_X_TREE_BLOCK_METADATA 0x0205	/* block of inode 5 is metadata */
#define PR_X_TREE_BLOCK_SHARED	0x0206	/* another inode maps it too */
#define PR_X_COUNT_TOO_LOW	0x0301	/* the dangerous case */
#define PR_X_COUNT_TOO_HIGH	0x0302	/* leaked space */
#define PR_X_RECORD_UNSHARED	0x0303	/* record for a block mapped <= once */
#define PR_X_SHARED_NO_RECORD	0x0304	/* mapped >= twice, no record */
#define PR_X_FOREIGN_WRITE	0x0305	/* another tool wrote a sharer */

/* How to answer the problems (fsck(8) modes). */
enum extref_fsck_mode {
	EXTREF_FSCK_NO,		/* -n: report, change nothing */
	EXTREF_FSCK_PREEN,	/* -p: fix what is safe, stop at the rest */
	EXTREF_FSCK_YES,	/* -y: fix everything */
	EXTREF_FSCK_ASK,	/* no option on a terminal: ask before each fix */
};

/* One problem as found: code, message (with "would ..." under -n). */
struct extref_problem_report {
	int		code;
	const char	*message;	/* complete, one line, no newline */
	int		fixed;		/* the repair was made */
	int		preen_ok;	/* safe to fix under -p */
	const char	*fix_text;	/* what the fix does; NULL: none */
};

typedef void (*extref_fsck_report_func)(
	const struct extref_problem_report *r, void *priv);
/* Progress: pass (0-3), done and total units; total 0 when unknown. */
typedef void (*extref_fsck_progress_func)(int pass, __u64 done, __u64 total,
					  void *priv);

struct extref_fsck_opts {
	enum extref_fsck_mode		mode;
	int				unshare;	/* -E unshare */
	int				verbose;
	extref_fsck_report_func		report;
	extref_fsck_progress_func	progress;
	void				*priv;
	/*
	 * EXTREF_FSCK_ASK: called instead of report() for each problem that
	 * has a fix, with the message without the fix and r->fix_text
	 * saying what the fix does; returns non-zero to make it.  Tree
	 * problems share one fix (the rebuild): the first answer holds for
	 * the rest, which are then passed to report() as decided.
	 */
	int (*ask)(const struct extref_problem_report *r, void *priv);
	/*
	 * Foreign writers (FORMAT.md section 11): 0 looks at the image's
	 * record; EXTREF_FSCK_FOREIGN_NONE or _SEEN say what the caller
	 * found before writing the image itself (fsck.extref, before the
	 * e2fsck it runs), where the image records one.
	 */
	int				foreign;
};
#define EXTREF_FSCK_FOREIGN_NONE	1	/* none since the last close */
#define EXTREF_FSCK_FOREIGN_SEEN	2	/* another tool wrote since */

struct extref_fsck_result {
	__u64	inodes;		/* in-use inodes scanned */
	__u64	mappings;	/* extent mappings scanned */
	__u64	shared_blocks;	/* blocks with an expected count >= 2 */
	__u64	records;	/* expected records */
	int	problems;	/* found */
	int	fixed;		/* repaired */
	int	unfixed;	/* left (answered no, or not preen-safe) */
	int	changed;	/* the filesystem was modified */
	int	foreign;	/* EXTREF_FSCK_FOREIGN_SEEN: another tool wrote */
	__u64	foreign_files;	/* files it may have changed (0x0305) */
};

/*
 * Check (and with mode != NO, repair) fs, which must be open read-write
 * for repairs.  The tree is opened by the checker itself; fs must not
 * have an extref tree open elsewhere.  Returns an operational error only
 * (I/O, memory); problems are counted in res.
 */
errcode_t extref_fsck(ext2_filsys fs, const struct extref_fsck_opts *opts,
		      struct extref_fsck_result *res);

/*
 * What a writer may trust (FORMAT.md, "What a writer trusts"): run the
 * passes of extref_fsck() read-only on fs and return 0 when no count is
 * below the number of mappings and the tree is sound, EXTREF_ERR_UNTRUSTED
 * when one is (first, when not NULL, gets that problem's code), or an
 * operational error.  Counts too high, records of blocks mapped once or
 * less and blocks of inode 5 outside the tree are what a crash leaves;
 * they only leak space, and are allowed.  extref_fs_open() calls this for
 * every read-write open without EXTREF_OPEN_TRUSTED.
 */
errcode_t extref_fsck_verify_write(ext2_filsys fs, int *first);

/*
 * Whether fs is an extref image: it has extents, and shared_blocks is
 * set or inode 5 holds a tree of ours (a regular extent file whose first
 * block has the header's magic) whose feature was lost.  Any other image
 * is plain, stock e2fsck's alone:
 * extref_fsck() checks nothing on it and never makes it an extref image.
 */
int extref_fsck_is_extref(ext2_filsys fs);

/*
 * Foreign writers (FORMAT.md section 11): EXTREF_FSCK_FOREIGN_SEEN when
 * the tree's header records the superblock as a writer of this library
 * left it and fs's now differs (another tool wrote since), or records a
 * foreign write not yet examined; EXTREF_FSCK_FOREIGN_NONE when it
 * agrees; 0 when there is no record (older images) or no readable tree.
 */
int extref_fsck_foreign(ext2_filsys fs);

/*
 * Run the stock e2fsck (found on PATH) as "e2fsck ARGS... IMAGE", sharing
 * the caller's standard streams (standard output discarded with
 * EXTREF_E2FSCK_QUIET); *status gets its exit status (fsck(8) bits).
 * EXTREF_ERR_E2FSCK when it could not be run or was killed.
 */
#define EXTREF_E2FSCK_QUIET	0x0001
errcode_t extref_run_e2fsck(const char *image, const char *const *args,
			    int flags, int *status);

/* The problem table, for tests and documentation. */
struct extref_problem_info {
	int		code;
	const char	*name;		/* e.g. "COUNT_TOO_LOW" */
	const char	*description;
	int		preen_ok;
};
const struct extref_problem_info *extref_problem_table(size_t *n);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_FSCK_H */
