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
 * Why fs is no extref image a writer can open, for a tool to say the
 * next step: EXTREF_ERR_PLAIN_IMAGE for a plain image (as
 * extref_fsck_is_extref), EXTREF_ERR_TREE_UNBUILT for one with
 * extents, shared_blocks set and an inode 5 that holds nothing (Android's
 * e2fsdroid shares identical blocks between files so, without a tree);
 * 0 otherwise.
 */
errcode_t extref_fsck_unbuilt(ext2_filsys fs);

/*
 * Adopting an image of the second kind above (EXTREF_ERR_TREE_UNBUILT):
 * its tree is built from the counted extent mappings, as extref_fsck's
 * repair of a missing tree (0x0002) builds it, every shared block kept
 * shared.  extref_fsck_adoptable runs the checker read-only and returns
 * 0 when the missing tree is all it finds; EXTREF_ERR_ALREADY when inode
 * 5 holds a tree of ours, EXTREF_ERR_INO5_BUSY when it holds anything
 * else, EXTREF_ERR_NO_FEATURE without shared_blocks, the refusals of
 * extref_convert (bigalloc, no extents, a journal that needs recovery),
 * EXTREF_ERR_ADOPT_PROBLEMS when it finds anything more (*first, when not
 * NULL, gets the first such problem's code), or an operational error;
 * nothing is changed.  extref_fsck_adopt, on fs open read-write (through
 * the journal's transactions when the transaction layer holds it, as
 * extref_fsck repairs), checks so again and builds the tree (an empty one
 * when no block is shared).
 */
errcode_t extref_fsck_adoptable(ext2_filsys fs, int *first);
errcode_t extref_fsck_adopt(ext2_filsys fs, int *first);

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

/*
 * Repairs fsck.extref makes around the stock e2fsck it runs, each on the
 * image by name (the caller holds the image's lock, extref_image_lock).
 *
 * shared_blocks lost on an extref image (PR_X_FEATURE_MISSING), set
 * before e2fsck, which would otherwise take every shared block for a
 * cross-link: extref_fsck_set_feature on an image opened read-write by
 * extref_fs_open (one transaction of its journal, the backups written at
 * the close), extref_fsck_set_feature_image straight to the superblocks
 * (backups first, the primary last; O_EXCL on a block device) when the
 * library cannot open the image (a journal it cannot replay).  A plain
 * image is refused (EXTREF_ERR_NO_TREE, EXTREF_ERR_NO_EXTENTS): blocks it
 * maps twice are cross-links.
 */
errcode_t extref_fsck_set_feature(extref_fs_t fs);
errcode_t extref_fsck_set_feature_image(const char *image);

/*
 * A journal inode whose blocks are not its own (PR_X_JOURNAL_OVERLAP,
 * extref_journal_check_blocks) is cleared before e2fsck, as e2fsck
 * treats a journal inode it finds invalid (the log it holds is lost):
 * extref_fsck_journal_clear opens image (read-write with write set), and
 * on an extref image whose journal overlaps sets found and calls
 * confirm(priv) (also without write, to report it); when that returns
 * non-zero and write is set, the journal inode is zeroed, has_journal and
 * needs_recovery cleared, and cleared and nblocks (the old journal's
 * size) set.  0 also when the image does not open (e2fsck's to repair);
 * an error with found 0 is the check's, with found 1 the clear's (the
 * image then as it was but for what the write reached).  After e2fsck,
 * extref_fsck_journal_remake makes a new journal of e2fsck's size for
 * the filesystem, or of nblocks when smaller (and at least 1024),
 * telling note (may be NULL) EXTREF_FSCK_JOURNAL_CREATING (blocks: its
 * size) just before it is written, then _MADE or _FAILED (the image's
 * close, which writes the superblocks, follows _MADE).
 */
struct extref_fsck_journal_fix {
	int		write;		/* in: open read-write, clear if asked */
	int		(*confirm)(void *priv);	/* in: non-zero: clear */
	void		*priv;		/* in */
	int		found;		/* out: the journal overlaps */
	int		cleared;	/* out: its inode was cleared */
	blk64_t		nblocks;	/* out: its size, in blocks */
};
#define EXTREF_FSCK_JOURNAL_CREATING	0
#define EXTREF_FSCK_JOURNAL_MADE	1
#define EXTREF_FSCK_JOURNAL_FAILED	2
typedef void (*extref_fsck_journal_func)(int what, unsigned int blocks,
					 void *priv);
errcode_t extref_fsck_journal_clear(const char *image,
				    struct extref_fsck_journal_fix *jf);
errcode_t extref_fsck_journal_remake(const char *image, blk64_t nblocks,
				     extref_fsck_journal_func note,
				     void *priv);

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
