/*
 * extref.h --- public interface of libextref.
 *
 * libextref reads and writes the reference-count tree of an extref image
 * (an ext4 filesystem with the shared_blocks feature whose reference counts
 * live in reserved inode 5).  It sits on libext2fs: an extref_fs holds an
 * ext2_filsys, and every error is an errcode_t, either libext2fs's or one
 * from extref's own com_err table (extref_err.h).
 *
 * Names: extref_fs_* for the image, extref_tree_* for the tree,
 * extref_check_* for validators.
 */
#ifndef EXTREF_H
#define EXTREF_H

#include <ext2fs/ext2fs.h>
#include "extref_err.h"
#include "extref_format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported; the rest of the library is not. */
#pragma GCC visibility push(default)

#define EXTREF_LIB_VERSION	"0.1.0"

typedef struct extref_fs *extref_fs_t;
typedef struct extref_tree *extref_tree_t;

/*
 * The errno a kernel filesystem would return where the library returns
 * err (EINVAL for a bad range, EISDIR, EPERM, ENOSPC, EFBIG, ...); a
 * plain errno passes through, anything else (damage, I/O) is EIO.
 */
int extref_errno(errcode_t err);

/* One leaf record in memory: blocks [start, start + len) mapped count times. */
struct extref_rec {
	blk64_t		start;
	blk64_t		len;
	__u32		count;
};

/* Flags for extref_fs_open(). */
#define EXTREF_OPEN_RW		0x0001	/* open for writing */
#define EXTREF_OPEN_NO_TREE	0x0002	/* open the ext4 part only */
#define EXTREF_OPEN_FORCE	0x0004	/* ext4 part only if the tree fails */
/*
 * An image still being built, that nothing reads before the tool is done
 * (mkfs): flushes do nothing, so blocks rewritten at every commit (the
 * tree's header) reach the file once; close writes everything and syncs.
 * Interrupted, the image is unfinished whatever the order of its writes:
 * the write rules of extref_ops.h hold only at close.
 */
#define EXTREF_OPEN_NOSYNC	0x0008
/*
 * Skip the verification of a read-write open (below): only for the
 * repairer, which checks everything itself, and for an image the caller
 * made in this same run (mkfs).
 */
#define EXTREF_OPEN_TRUSTED	0x0010
/*
 * Write as on an image without a journal (the ordered, flushed path of
 * extref_ops.h) even if it has one.  Otherwise a read-write open of an
 * image with a journal makes every operation one transaction of it
 * (extref_tx_begin), and first replays a journal that needs recovery; a
 * read-only open replays it in memory only (the image shows the replayed
 * state; nothing is written).
 */
#define EXTREF_OPEN_NO_JOURNAL	0x0020
/*
 * Prove the counts against every extent mapping at a read-write open
 * even when the tree's stamp says a writer of this library proved them
 * and nothing has allocated or freed since (FORMAT.md, "What a writer
 * trusts", says what the stamp can and cannot see).
 */
#define EXTREF_OPEN_VERIFY	0x0040
/*
 * Use the tree's stamp: a read-write open skips the full proof when the
 * stamp matches, and a clean close of a proving session leaves one
 * (FORMAT.md section 11).  Opt-in for now; without it every read-write
 * open proves in full and no stamp is written.
 */
#define EXTREF_OPEN_STAMP	0x0100
/*
 * With EXTREF_OPEN_RW: an orphan list the open cannot release because it
 * is damaged (EXTREF_ERR_ORPHAN_LIST) is dropped instead
 * (extref_orphan_cut): fsck.extref's repair.  Without it such an open
 * fails with the image unchanged.
 */
#define EXTREF_OPEN_CUT_ORPHANS	0x0200

/* Quota types (extref_ops.h has the quota calls). */
#define EXTREF_QUOTA_USER	0
#define EXTREF_QUOTA_GROUP	1
#define EXTREF_QUOTA_PROJECT	2
/*
 * A read-only open that takes no lock (extref_fs_open only; with
 * EXTREF_OPEN_RW: EXT2_ET_INVALID_ARGUMENT): it opens an image a writer
 * holds, as stock debugfs reads a busy image, and what it reads may
 * change under it, a writer's commit half seen.  Without it a reader
 * waits for no one but is refused (EXTREF_ERR_LOCKED_WRITER): the
 * consistent view.
 */
#define EXTREF_OPEN_NO_LOCK	0x0080

/* Progress of long work: what is done, units done of total; a total of
 * 0 means the library does not know it, and done then counts bytes
 * (of data read, copied or written), or is 0. */
typedef void (*extref_progress_func)(const char *phase, __u64 done,
				     __u64 total, void *priv);

/*
 * Open an image.  Without EXTREF_OPEN_NO_TREE the tree is loaded too, and a
 * missing shared_blocks feature, a missing or unknown tree or a header
 * that fails validation is an error.  With EXTREF_OPEN_FORCE such an error
 * still returns the opened fs (tree NULL) and reports the tree's error in
 * *tree_err: for fsck and the debug shell.
 *
 * Every open takes the image's lock (extref_image_lock below): shared to
 * read, exclusive to write; a busy image is EXTREF_ERR_LOCKED_WRITER or
 * _READER.  A read-write open refuses a mounted image (EXTREF_ERR_MOUNTED)
 * and opens a block device with EXT2_FLAG_EXCLUSIVE.  Unless
 * EXTREF_OPEN_TRUSTED, a read-write open with a tree then verifies the
 * tree against every extent mapping (the fsck core's read-only passes)
 * and refuses with EXTREF_ERR_UNTRUSTED when a count is too low or the
 * tree is damaged (FORCE: the fs opens without its tree, the error in
 * *tree_err).  See FORMAT.md, "What a writer trusts".
 */
errcode_t extref_fs_open(const char *name, int flags, extref_fs_t *ret_fs,
			 errcode_t *tree_err);
/*
 * The io manager extref_fs_open() opens images with: unix_io_manager (in
 * test builds, the fault-injecting one when EXTREF_FAULT is set), for a
 * caller that opens the image itself (as the undo io manager's backing).
 */
io_manager extref_io_manager(void);
/*
 * Wrap an ext2_filsys opened by the caller; the extref_fs then owns it.
 * The lock, mount check and verification are those of extref_fs_open(),
 * on fs->device_name (read-write when fs was opened with EXT2_FLAG_RW).
 */
errcode_t extref_fs_wrap(ext2_filsys fs, int flags, extref_fs_t *ret_fs,
			 errcode_t *tree_err);
/*
 * The image lock alone, for tools that open an image with libext2fs
 * directly (fsck.extref, mkfs.extref --convert): EXTREF_LOCK_WRITE checks
 * the mount (EXTREF_ERR_MOUNTED) and takes flock LOCK_EX, else LOCK_SH;
 * never waits.  Held until extref_image_unlock().
 */
typedef struct extref_image_lock *extref_image_lock_t;
#define EXTREF_LOCK_WRITE	0x0001
errcode_t extref_image_lock(const char *name, int flags,
			    extref_image_lock_t *ret);
void extref_image_unlock(extref_image_lock_t lock);
/* After EXTREF_ERR_LOCKED_*: "held by PROGRAM (pid N)", or "" when the
 * kernel does not say; kept for the calling thread until its next
 * refused lock. */
const char *extref_image_lock_holder(void);
/* name is still the file lock holds (same st_dev and st_ino): 0,
 * EXTREF_ERR_IMAGE_REPLACED, or stat's errno.  A tool that reopens an
 * image by name under its lock asks after each open. */
errcode_t extref_image_lock_same(extref_image_lock_t lock, const char *name);
/* 0, EXTREF_ERR_MOUNTED (mounted, also through a loop device, or swap). */
errcode_t extref_image_check_mount(const char *name);
/* name is a block device (such opens add EXT2_FLAG_EXCLUSIVE to write). */
int extref_image_is_blockdev(const char *name);
/* Commit the tree (read-write images), then close everything. */
errcode_t extref_fs_close(extref_fs_t fs);
/* Close without committing: an abandoned operation. */
void extref_fs_abort(extref_fs_t fs);
ext2_filsys extref_fs_ext2(extref_fs_t fs);
/*
 * How a read-write open came to trust the tree's counts: proven against
 * every extent mapping (EXTREF_PROOF_FULL), taken from the stamp of an
 * earlier proof that the image's state still matches
 * (EXTREF_PROOF_STAMP), or not at all (EXTREF_PROOF_NONE: read-only,
 * EXTREF_OPEN_TRUSTED, no tree).
 */
#define EXTREF_PROOF_NONE	0
#define EXTREF_PROOF_FULL	1
#define EXTREF_PROOF_STAMP	2
int extref_fs_proof(extref_fs_t fs);
/*
 * Foreign writers (FORMAT.md section 11): non-zero when a tool other than
 * this library (stock debugfs -w, fuse2fs, a read-write kernel mount)
 * wrote the image since a writer of this library last closed it, as the
 * superblock's write record in the tree's header says (or an earlier
 * writer met such a write that fsck.extref has not examined yet); then a
 * read-write open proves the counts in full, and the close carries the
 * finding on.  0 also when the image holds no record (older images).
 */
int extref_fs_foreign(extref_fs_t fs);
/*
 * The image as it is now has been examined (fsck.extref -y): the close of
 * this read-write session records it as seen, with no foreign write left
 * to look at.
 */
void extref_fs_accept(extref_fs_t fs);
/*
 * An expert's edit outside the library's operations is about to be made:
 * the tree's stamp is cleared, so that the next read-write open proves
 * the counts in full.  A raw write through the image's channel does this
 * by itself; call it before a change written only at the next commit
 * (a superblock field).
 */
errcode_t extref_fs_raw_edit(extref_fs_t fs);
extref_tree_t extref_fs_tree(extref_fs_t fs);

/*
 * Transactions (images opened read-write with a journal).  Every
 * operation of extref_ops.h is one; between extref_tx_begin and
 * extref_tx_end several are one: extref_tx_end(fs, 0) commits them all
 * (written to the journal, then in place), extref_tx_end(fs, err) with an
 * error rolls all of them back, so that the image and the library's view
 * of it are as they were at extref_tx_begin, and returns err.  Pairs nest;
 * the outermost end commits.  A change bigger than the journal fails with
 * EXTREF_ERR_TXN_TOO_BIG, rolled back.  On an image without a journal
 * (or opened EXTREF_OPEN_NO_JOURNAL) both calls do nothing.
 */
errcode_t extref_tx_begin(extref_fs_t fs);
errcode_t extref_tx_end(extref_fs_t fs, errcode_t err);
/*
 * extref_tx_begin2 with EXTREF_TX_SPLIT: the operations up to the end may
 * be committed in several transactions when they hold more than half the
 * journal, at points where the image is consistent (between two dedupes
 * of extref_dedupe_fs: a crash can then leave part of the sharing done,
 * every file's bytes as they were).  A recursive reflink is never split:
 * the blocks it allocates are written in place early and the rest is one
 * commit, refused up front when the journal cannot hold it (outside a
 * caller's transaction extref_reflink2 grows the journal first).  Without
 * EXTREF_TX_SPLIT (extref_tx_begin) the whole is one transaction or fails
 * with EXTREF_ERR_TXN_TOO_BIG.
 */
#define EXTREF_TX_SPLIT		0x0001
/*
 * EXTREF_TX_BATCH: a batch of operations (a server's requests), each
 * atomic on its own, committed together for speed.  Every begin inside
 * the batch (an operation, or an extref_tx_begin pair) is a step: if it
 * fails, it alone is rolled back and the steps before it stay; if it
 * succeeds, it stays, in memory, until the batch commits: at
 * extref_tx_commit (call it between steps, for fsync), before a step once
 * the batch holds half the journal, and at extref_tx_end (the batch's
 * end).  A crash loses the steps not yet committed, never part of one.
 * A commit that fails drops the uncommitted steps (the image as at the
 * last commit), and every later step fails with EXTREF_ERR_BATCH_LOST
 * until the batch ends.  Not with EXTREF_TX_SPLIT, and only outermost.
 */
#define EXTREF_TX_BATCH		0x0002
errcode_t extref_tx_begin2(extref_fs_t fs, int flags);
errcode_t extref_tx_commit(extref_fs_t fs);
/*
 * A raw edit of blk's bit in the block bitmap (ext2fs_mark_block_bitmap2
 * and the like, without ext2fs_block_alloc_stats2): its group's bitmap
 * goes in the transaction.  The library's own operations need no such
 * call.
 */
void extref_tx_note_block(extref_fs_t fs, blk64_t blk);
/*
 * 1 if blk was freed in the running transaction: it stays marked in use
 * in the bitmap until the commit (no allocation takes it before), but is
 * free for the commit.  Marking it in use again (ext2fs_block_alloc_stats2,
 * or by hand and extref_tx_note_block) keeps it in use.
 */
int extref_tx_freed(extref_fs_t fs, blk64_t blk);
/* 1 inside extref_tx_begin ... extref_tx_end when an end with an error
 * would have something to undo (a refusal found before any change: 0). */
int extref_tx_pending(extref_fs_t fs);
/* 1 if operations on fs are journal transactions. */
int extref_fs_journaled(extref_fs_t fs);
/* Transactions the open replayed from the journal (0: none needed). */
unsigned extref_fs_replayed(extref_fs_t fs);
/* Why a read-only open could not replay a journal that needs recovery
 * (the image is then shown as it is on disk), or 0. */
errcode_t extref_fs_replay_error(extref_fs_t fs);
/* The last journal error of this thread in words ("transaction 7: ...
 * at journal block 12"), or "": the transaction or block it names. */
const char *extref_journal_detail(void);
/* Load the tree of an fs opened with EXTREF_OPEN_NO_TREE (read-write:
 * verified as by extref_fs_open, EXTREF_ERR_UNTRUSTED). */
errcode_t extref_fs_load_tree(extref_fs_t fs);

/*
 * Make an empty tree in inode 5 and set shared_blocks.  Inode 5 must hold
 * no blocks.  The time written into inode 5 is fs->now when set, else the
 * current time.
 */
errcode_t extref_format(ext2_filsys fs);

/*
 * Turn an ext4 filesystem made by any tool into an extref image in place:
 * refuses bigalloc, quota, an image that already is one, and an inode 5
 * that holds data, and an image whose journal needs recovery
 * (EXTREF_ERR_NEEDS_RECOVERY); then extref_format().
 */
errcode_t extref_convert(ext2_filsys fs);

/* The crc32c seed the tree's checksums use for this filesystem. */
__u32 extref_csum_seed(ext2_filsys fs);
/*
 * The checksum a tree block of fs should carry (FORMAT.md): of the header
 * (its first EXTREF_HDR_CSUM_OFFSET bytes), and of a node or free block
 * (the whole block, its checksum field counted as zero).
 */
__u32 extref_header_csum(ext2_filsys fs, const void *block);
__u32 extref_node_csum(ext2_filsys fs, const void *block);
/*
 * The checks the library runs on every tree block it reads, for programs
 * that read the blocks themselves.  Each changes nothing and returns 0 or
 * the EXTREF_ERR_* code of the first check that failed (error_message()
 * names it): the header (block 0 of inode 5; its block count bounded by
 * what inode 5 holds, which is read), a tree node at lblk, a free block
 * at lblk of a tree of nblocks blocks.
 */
errcode_t extref_header_verify(ext2_filsys fs, const void *block);
errcode_t extref_node_verify(ext2_filsys fs, const void *block, __u32 lblk);
errcode_t extref_free_verify(ext2_filsys fs, const void *block, __u32 lblk,
			     __u32 nblocks);

/* ----- The tree ----- */

/* Flags for extref_tree_open(). */
#define EXTREF_TREE_RW		0x0001

errcode_t extref_tree_open(ext2_filsys fs, int flags, extref_tree_t *ret);
/* Commit if dirty, then free.  extref_tree_free() drops changes. */
errcode_t extref_tree_close(extref_tree_t tree);
void extref_tree_free(extref_tree_t tree);

/*
 * Count of one block: the record's count, or 0 when no record covers it
 * (the block has at most one mapping).
 */
errcode_t extref_tree_get_count(extref_tree_t tree, blk64_t blk, __u32 *count);

/*
 * Callbacks (extref_rec_func, extref_problem_func, extref_mapping_func)
 * return an errcode_t: 0 to go on, EXTREF_ITER_STOP to stop early (the
 * call then returns 0), any other code to stop with that error, which
 * the call returns.  An error is never taken for "stop".
 */

/*
 * Call func for each record overlapping [start, start + len), in order,
 * clipped to the range when clip is non-zero (len 0: to the end).
 */
typedef errcode_t (*extref_rec_func)(const struct extref_rec *rec,
				     void *priv);
errcode_t extref_tree_iterate(extref_tree_t tree, blk64_t start, blk64_t len,
			      int clip, extref_rec_func func, void *priv);

/* Raise the count of every block in the range by one (no record = 1). */
errcode_t extref_tree_raise(extref_tree_t tree, blk64_t start, blk64_t len);

/*
 * Lower the count of every block in the range by one.  Blocks with no
 * record lose their last mapping: freed() is called for each such maximal
 * sub-range, in order, after the tree is updated in memory.  The caller
 * frees those blocks.  freed may be NULL.
 */
typedef errcode_t (*extref_freed_func)(blk64_t start, blk64_t len, void *priv);
errcode_t extref_tree_lower(extref_tree_t tree, blk64_t start, blk64_t len,
			    extref_freed_func freed, void *priv);

/*
 * Write every change since the last commit: new nodes first, then (after
 * a flush) the header, the commit point.  See FORMAT.md, "Commit".
 */
errcode_t extref_tree_commit(extref_tree_t tree);

/* Summary figures of the in-memory tree. */
struct extref_tree_stats {
	__u64	records;
	__u32	depth;
	__u32	nodes;		/* tree nodes (all levels) */
	__u32	leaves;
	__u32	free_nodes;
	__u32	file_blocks;	/* h_nblocks */
	__u32	capacity;	/* entries per node */
	__u64	generation;
};
errcode_t extref_tree_get_stats(extref_tree_t tree,
				struct extref_tree_stats *st);

/*
 * Limit entries per node (tests only: makes deep trees with few records).
 * 0 restores the block-size capacity.  Values below 4 are raised to 4.
 */
void extref_tree_set_fanout(extref_tree_t tree, unsigned int max_entries);

/* ----- Validation ----- */

/*
 * Walk the whole tree from its header: every node's magic, checksum,
 * level, own block number, entry count, order, key bounds, records, the
 * free list, nodes reachable twice and blocks of inode 5 accounted for.
 * report() is called once per problem with the lblk concerned (0 for the
 * header) and an EXTREF_ERR_* code; it may return EXTREF_ITER_STOP to stop.
 * The return value is 0 when the tree is sound, else the first problem's
 * code, or the error report() returned.  It checks the tree as committed
 * on disk, not uncommitted changes.
 */
typedef errcode_t (*extref_problem_func)(errcode_t problem, __u32 lblk,
					 const char *detail, void *priv);
errcode_t extref_tree_check(extref_tree_t tree, extref_problem_func report,
			    void *priv);
/* The same check on a filesystem whose tree could not be opened. */
errcode_t extref_check_fs(ext2_filsys fs, extref_problem_func report,
			  void *priv);

/*
 * The tree's header block and a node's header in CPU byte order
 * (FORMAT.md section 3): one field for each of extref_disk_header's and
 * extref_disk_node's, of the same width.  The decoders check nothing
 * (extref_header_verify and extref_node_verify do); tools that show raw
 * blocks decode them with these.
 */
struct extref_tree_hdr {
	__u32	h_magic;
	__u16	h_version;
	__u16	h_depth;
	__u32	h_compat;
	__u32	h_ro_compat;
	__u32	h_incompat;
	__u32	h_blocksize;
	__u8	h_uuid[16];
	__u32	h_root;
	__u32	h_nblocks;
	__u64	h_nrecords;
	__u32	h_free_head;
	__u32	h_free_count;
	__u64	h_generation;
	__u32	h_stamp;
	__u32	h_checksum;
	/* the record of the superblock at the last close (FORMAT.md 11) */
	__u32	h_seen_flags;
	__u32	h_seen_csum;
	__u32	h_seen_nsec;
	__u64	h_seen_time;
	__u64	h_seen_mtime;
	__u16	h_seen_mnt_count;
};

/* The header of a tree or free node, decoded. */
struct extref_node_hdr {
	__u32	n_magic;
	__u16	n_level;
	__u16	n_nr;
	__u32	n_blkno;
	__u32	n_next;
	__u64	n_generation;
	__u32	n_checksum;
};

void extref_tree_hdr_decode(struct extref_tree_hdr *to,
			    const struct extref_disk_header *from);
void extref_node_hdr_decode(struct extref_node_hdr *to,
			    const struct extref_disk_node *from);

/*
 * ext2fs_block_iterate3(fs, ino, flags, NULL, func, priv), stopped with
 * EXTREF_ERR_BLOCK_MAP_LOOP once it has met more blocks, data and
 * mapping blocks together, than the inode has (i_blocks, at most the
 * filesystem's): a map whose index or indirect blocks are named again
 * would otherwise be walked once a path, entries to the power of the
 * depth.  Every walk of a block map in the library and the tools is this
 * one.
 */
errcode_t extref_block_iterate(ext2_filsys fs, ext2_ino_t ino, int flags,
			       int (*func)(ext2_filsys fs, blk64_t *blocknr,
					   e2_blkcnt_t blockcnt,
					   blk64_t ref_blk, int ref_offset,
					   void *priv),
			       void *priv);

/*
 * The image's journal as it is on disk (never an in-memory replay), for
 * tools that show it (debugfs.extref's logdump): the journal
 * superblock's fields in *info, then fn for every record of the log
 * from s_start, in order, ending with one EXTREF_JREC_END (also for an
 * empty journal).  The walk follows the structure only: checksums and a
 * malformed revoke block are reported in the records, not acted on.  fn
 * returns 0 to go on, EXTREF_JWALK_STOP to stop, or an error, which the
 * walk returns (with fn NULL only *info is filled in).  The block types
 * in blocktype are jbd2's: EXTREF_JBLOCK_*.
 */
#define EXTREF_JBLOCK_DESCRIPTOR	1
#define EXTREF_JBLOCK_COMMIT		2
#define EXTREF_JBLOCK_SUPER_V1		3
#define EXTREF_JBLOCK_SUPER_V2		4
#define EXTREF_JBLOCK_REVOKE		5
enum extref_jrec_type {
	EXTREF_JREC_DESC,		/* a descriptor block */
	EXTREF_JREC_BLOCK,		/* a tag: fsblk logged at jblk */
	EXTREF_JREC_REVOKE_HDR,	/* a revoke block */
	EXTREF_JREC_REVOKE,		/* one of its records: fsblk */
	EXTREF_JREC_COMMIT,		/* a commit block */
	EXTREF_JREC_END		/* the walk ends; see end */
};

enum extref_jend {
	EXTREF_JEND_NO_MAGIC,	/* jblk holds no record */
	EXTREF_JEND_SEQ,		/* jblk's record has tid found, not tid */
	EXTREF_JEND_TYPE,		/* jblk's record has an unknown blocktype */
	EXTREF_JEND_LOOPED,		/* the whole log was walked */
	EXTREF_JEND_EMPTY		/* the journal is empty (s_start 0) */
};

/* One record of the log, as extref_journal_walk meets it. */
struct extref_jrec {
	enum extref_jrec_type type;
	__u32		jblk;		/* journal block of the record/copy */
	__u32		tid;		/* transaction it belongs to */
	unsigned	blocktype;	/* h_blocktype of header records */
	blk64_t		fsblk;		/* BLOCK, REVOKE: filesystem block */
	unsigned	flags;		/* BLOCK: tag flags (JBD2_FLAG_*) */
	int		csum_ok;	/* DESC, BLOCK, REVOKE_HDR, COMMIT:
					 * checksum verifies (1 without
					 * checksums) */
	int		malformed;	/* REVOKE_HDR: r_count impossible (no
					 * REVOKE records follow) */
	const void	*data;		/* BLOCK: the copy, unescaped */
	enum extref_jend	end;		/* END: why */
	__u32		found;		/* END, EXTREF_JEND_SEQ: tid found */
};

/* Stop the walk without an error (returned by a callback; the walk
 * returns 0 then), as xfs's visitors use -ECANCELED. */
#define EXTREF_JWALK_STOP	((errcode_t)ECANCELED)

typedef errcode_t (*extref_jwalk_fn)(const struct extref_jrec *r, void *priv);

/* The journal superblock's fields, as the walk starts from them. */
struct extref_jinfo {
	__u32	start, sequence, first, maxlen, blocksize;
	__u32	compat, incompat, ro_compat;
	__u32	errnum;
	__u8	raw[1024];	/* the journal superblock as on disk */
};
errcode_t extref_journal_walk(extref_fs_t fs, struct extref_jinfo *info,
			      extref_jwalk_fn fn, void *priv);
/*
 * The journal inode's blocks are its own: none twice in its map, none in
 * group metadata, none mapped by another inode (inode 5 included).
 * EXTREF_ERR_JNL_OVERLAP when one is; 0 also without a journal, or with
 * one that cannot be opened (e2fsck's to judge first).
 */
errcode_t extref_journal_check_blocks(ext2_filsys fs);
/*
 * The image's journal made blocks long (s_maxlen), crash-safely, between
 * operations of an image opened read-write with an internal journal: the
 * log is emptied; one transaction of the journal as it is allocates free
 * blocks (after the journal's last block where free), maps them at the
 * end of the journal inode, raises its size and zeroes them, and sets
 * the superblock's backup of the inode's map (s_jnl_blocks); then the
 * journal superblock is written with the new length.  A crash leaves
 * the old journal or an inode longer than s_maxlen, which the kernel,
 * e2fsck and this library take at s_maxlen.  0 and nothing done when the
 * journal is that long already; EXTREF_ERR_JNL_NONE without
 * transactions; EXTREF_ERR_JNL_GROW for a journal that is not
 * extent-mapped or a length past 10,240,000 blocks (mke2fs's largest);
 * EXT2_ET_BLOCK_ALLOC_FAIL without room (rolled back).  The journal stays
 * that long.
 */
errcode_t extref_journal_grow(extref_fs_t fs, blk64_t blocks);
/*
 * After an operation or an extref_tx_begin ... extref_tx_end failed with
 * EXTREF_ERR_TXN_TOO_BIG: the journal grown (extref_journal_grow) to
 * hold that transaction's commit and an eighth more, when the free
 * space allows it besides the blocks the transaction had taken (and an
 * eighth more); then run the operation again.  EXTREF_ERR_TXN_TOO_BIG,
 * nothing changed, when it cannot.
 */
errcode_t extref_journal_fit(extref_fs_t fs);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_H */
