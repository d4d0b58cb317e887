/*
 * extref_builder.h --- the image builder: an image populated from a
 * source (a host directory, an archive, layers, another image), the
 * data already in an image deduplicated, an image updated in place, and
 * a source measured before the image is made.  Built on extref_ops.h.
 */
#ifndef EXTREF_BUILDER_H
#define EXTREF_BUILDER_H

#include <signal.h>
#include <sys/types.h>

#include "extref_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported; the rest of the library is not. */
#pragma GCC visibility push(default)

/* Deduplication of the data already in an image. */
enum extref_dedupe_mode {
	EXTREF_DEDUPE_NONE,
	EXTREF_DEDUPE_FILE,	/* identical files share all their blocks */
	EXTREF_DEDUPE_BLOCK,	/* every identical block is shared */
};
struct extref_dedupe_stats {
	__u64	logical_bytes;	/* bytes of data blocks the files map */
	__u64	stored_before;	/* bytes in use in the filesystem, before */
	__u64	stored_after;	/* and after */
	__u64	ranges;		/* ranges deduplicated */
};
/*
 * Share identical data of the regular files: candidates come from a
 * hash of every written block (or file), and are confirmed byte for
 * byte (extref_dedupe_range compares again before sharing).
 */
errcode_t extref_dedupe_fs(extref_fs_t fs, enum extref_dedupe_mode mode,
			   struct extref_dedupe_stats *st);
/* The same, reporting progress (progress may be NULL). */
errcode_t extref_dedupe_fs2(extref_fs_t fs, enum extref_dedupe_mode mode,
			    extref_progress_func progress, void *priv,
			    struct extref_dedupe_stats *st);

/*
 * Populating a new image from a source: a host directory (walked in
 * sorted order, so the host's order does not matter) or an archive
 * (tar, pax, cpio; compressed or not) read entry by entry, nothing
 * unpacked on the host.  Every file type, owner, mode, nanosecond time,
 * extended attribute (all namespaces, POSIX ACLs), hard link and sparse
 * file; zero blocks of a file become holes.  The image is opened with
 * EXTREF_OPEN_NO_TREE (nothing is shared yet); quotas are the caller's
 * (extref_quota_recompute).  On error, where names the source's entry
 * ("" for its root) and why, for an archive, what the reader said; both
 * malloc'd, freed by extref_populate_free.
 */
#define EXTREF_POP_ALL_ROOT	0x0001	/* every inode root's */
#define EXTREF_POP_EPOCH	0x0002	/* no time later than epoch */
#define EXTREF_POP_KEEP_ROOT_OWNER 0x0004 /* the source's root keeps the
					      owner the image's root has */
#define EXTREF_POP_NO_XATTRS	0x0008	/* no extended attribute (nor ACL)
					   copied, as mke2fs -E no_copy_xattrs */
struct extref_populate {
	unsigned int	flags;		/* EXTREF_POP_* */
	long long	epoch;		/* with EXTREF_POP_EPOCH */
	/* progress of the copy, or NULL: done is the bytes of file data
	 * written so far (total 0: the library does not know it) */
	extref_progress_func progress;
	void		*priv;
	/*
	 * EXTREF_DEDUPE_BLOCK: each distinct non-zero block is written
	 * once, in the order met, every copy maps it (confirmed byte for
	 * byte); EXTREF_DEDUPE_FILE: a file identical to an earlier one
	 * (compared block by block) maps its blocks.  The tree gets the
	 * counts in one bulk load at the end.  dedupe_hint: distinct
	 * blocks expected (0: unknown), to size the table.  The image's
	 * tree must be empty (a new image: EXTREF_ERR_INO5_BUSY
	 * otherwise).  EXTREF_DEDUPE_NONE writes every block.
	 */
	int		dedupe;		/* enum extref_dedupe_mode */
	__u64		dedupe_hint;
	/* out */
	__u64		inodes;		/* inodes made */
	__u64		data_bytes;	/* bytes of file data written */
	char		*where;
	char		*why;
	size_t		layer;		/* extref_populate_layers: the
					   archive where the error is */
};
errcode_t extref_populate_dir(extref_fs_t fs, const char *dir,
			      struct extref_populate *p);
/* The archive on fd (read to its end; a pipe will do). */
errcode_t extref_populate_archive(extref_fs_t fs, int fd,
				  struct extref_populate *p);
/*
 * The n archives on fds as layers, in order: each later one written over
 * what the ones before left (a later entry replaces an earlier one; a
 * directory stays for a directory, anything else goes, a directory with
 * everything below it; a hard link may name a file of a layer below).
 * With EXTREF_LAYERS_OCI, the OCI image-spec's whiteouts: ".wh.NAME"
 * removes NAME as the layers below left it, ".wh..wh..opq" in a directory
 * removes what the layers below put there; neither touches its own
 * layer's entries nor is written itself.  With p->dedupe, blocks equal
 * across layers are stored once.  On error p->layer is the archive's
 * index.
 */
#define EXTREF_LAYERS_OCI	0x0001
errcode_t extref_populate_layers(extref_fs_t fs, const int *fds, size_t n,
				 unsigned int flags,
				 struct extref_populate *p);

/*
 * The tree of an ext4 or extref image (a file or a block device), read
 * through libext2fs: opened read-only, never written, its journal never
 * replayed (one that needs recovery is EXTREF_ERR_SOURCE_RECOVERY).
 * Every file type, owner, mode, nanosecond time, extended attribute,
 * hard link and device, as extref_populate_dir copies them, and the
 * flags chattr sets (immutable, append-only, nodump...); the root's
 * owner too unless EXTREF_POP_KEEP_ROOT_OWNER.  Blocks the source's files
 * share (reflinks) are shared the same way in the new image, read off
 * the source's block numbers, not hashed, and counted in its tree; other
 * zero blocks become holes.  The new image may have another block size,
 * inode size or size.  p->dedupe is ignored (deduplicate afterwards,
 * extref_dedupe_fs); where names the source's entry.
 */
errcode_t extref_populate_image(extref_fs_t fs, const char *image,
				struct extref_populate *p);
/*
 * What the archive on fd holds, for sizing an image: entries and bytes
 * of data rounded up to 4 KiB blocks.  On error *why (malloc'd, may be
 * NULL) is the reader's message.
 */
errcode_t extref_archive_measure(int fd, __u64 *entries, __u64 *bytes,
				 char **why);
void extref_populate_free(struct extref_populate *p);
/*
 * What the host directory dir will take in an image of blocksize-byte
 * blocks, read before the image is made: entries (inodes, the root
 * too), the non-zero blocks of its regular files (each inode once, a
 * partial last block zero-padded; mode EXTREF_DEDUPE_NONE counts the
 * blocks the host has data in, without reading them), how many are
 * distinct (EXTREF_DEDUPE_BLOCK: by a 64-bit hash of each block;
 * EXTREF_DEDUPE_FILE: the blocks of one file of each content, by a hash
 * of the file; NONE: all of them), and blocks of directories, long
 * symlinks, extended attributes and extent trees (an estimate from
 * above).  progress may be NULL.
 */
struct extref_source_size {
	__u64	entries;
	__u64	data_blocks;
	__u64	distinct_blocks;
	__u64	meta_blocks;
	__u64	dir_blocks;	/* of meta_blocks, the directories' */
};
errcode_t extref_source_measure(const char *dir, unsigned int blocksize,
				int mode, extref_progress_func progress,
				void *priv, struct extref_source_size *s);
/*
 * The same for the archive on fd (read to its end, data included unless
 * mode is EXTREF_DEDUPE_NONE); on error *why (malloc'd, may be NULL) is
 * the reader's message.
 */
errcode_t extref_archive_measure2(int fd, unsigned int blocksize, int mode,
				  extref_progress_func progress, void *priv,
				  struct extref_source_size *s, char **why);
/* What an image's tree (extref_populate_image's source) takes in an
 * image of blocksize-byte blocks, as extref_source_measure counts it;
 * blocks its files share are counted once. */
errcode_t extref_image_measure(const char *image, unsigned int blocksize,
			       struct extref_source_size *s);

/*
 * Update an existing image from a host directory: DIR's tree is written
 * into the image at the directory at (NULL: "/"; a missing last
 * component is made, with DIR's owner, mode and times).  New names are
 * added;
 * a name in both is replaced by DIR's version (a directory stays and is
 * updated in turn; a directory in the image where DIR has another kind
 * is refused, EXTREF_ERR_IS_DIR); names only in the image stay.  File
 * data is shared with the image wherever it is equal: a file equal to
 * one in the image is a reflink of it (a whole-file hash, confirmed byte
 * for byte), a changed file shares every block equal to one the image
 * holds (block hashes, confirmed) and only new blocks are written.  An
 * unchanged regular file, symlink or device keeps its inode (its
 * metadata is set again).  Metadata as extref_populate_dir gives it
 * (flags EXTREF_POP_ALL_ROOT, EXTREF_POP_EPOCH).  The image is opened
 * read-write with its tree; the whole is one transaction whatever its
 * size: the journal is grown first when an estimate of its in-use
 * blocks says it will not hold them; when they outgrow it still, it is
 * rolled back,
 * the journal grown to hold it (extref_journal_fit: it stays so; unless
 * EXTREF_UPDATE_KEEP_JOURNAL) and the update run again from the start;
 * without the room to grow the journal, EXTREF_ERR_TXN_TOO_BIG, the
 * image as it was (docs/TRANSACTIONS.md).  On error, where names the
 * entry.  With
 * EXTREF_UPDATE_DELETE, as rsync --delete, the names the source lacks
 * in a directory it has leave the image (directories with all below
 * them; the root's lost+found stays), and a directory in the image
 * where the source has another kind is removed and replaced.
 */
#define EXTREF_UPDATE_DELETE	0x0100
/* An update too big for one commit of the journal is refused
 * (EXTREF_ERR_TXN_TOO_BIG, rolled back) rather than the journal grown. */
#define EXTREF_UPDATE_KEEP_JOURNAL	0x0400
struct extref_update {
	unsigned int	flags;		/* EXTREF_POP_ALL_ROOT, _EPOCH,
					   EXTREF_UPDATE_DELETE, _KEEP_JOURNAL */
	long long	epoch;		/* with EXTREF_POP_EPOCH */
	const char	*at;		/* a directory of the image, or NULL */
	extref_progress_func progress;	/* or NULL */
	void		*priv;
	/* or NULL: told EXTREF_NOTE_WRITING as the journal's growth (n 2)
	 * or the update's commit (n 1) begins, EXTREF_NOTE_WRITTEN as it
	 * ends (n 1: the update committed, the new version in place; n 0:
	 * nothing of the update is).  A caller may hold its terminating
	 * signals in between, so that a signal finds the image before the
	 * update or after it, never inside a commit. */
	void		(*note)(int what, unsigned int n, void *priv);
	/* out */
	__u64		entries;	/* entries of DIR written */
	__u64		files_kept;	/* regular files kept as they were */
	__u64		files_linked;	/* made reflinks of an image file */
	__u64		blocks_shared;	/* blocks shared with the image */
	__u64		blocks_written;	/* new blocks written */
	__u64		removed;	/* names removed (EXTREF_UPDATE_DELETE) */
	__u64		journal_grown;	/* blocks the journal grew by to
					   hold the update (it stays so) */
	char		*where;
	char		*why;
};
errcode_t extref_update_dir(extref_fs_t fs, const char *dir,
			    struct extref_update *u);
/*
 * The archive on fd applied to the image as one more OCI layer, in
 * place, as extref_populate_layers applies a later layer (entries
 * replace, whiteouts delete, ".wh..wh..opq" empties a directory of what
 * was there), sharing every block the image already holds, in the
 * journal's transactions as extref_update_dir.  Not with u->at nor
 * EXTREF_UPDATE_DELETE (EXT2_ET_INVALID_ARGUMENT).
 */
errcode_t extref_update_layer(extref_fs_t fs, int fd,
			      struct extref_update *u);
void extref_update_free(struct extref_update *u);

/*
 * Building an image file, step by step, as mkfs.extref does: each call
 * takes the image's path and what the caller asked (struct
 * extref_build_opts and the call's own options: never a caller's run
 * state), opens the image itself and leaves it closed.  On error, where
 * a step argument is given, *step says which part failed (EXTREF_STEP_*)
 * so that the caller can say what it was doing.
 */
#define EXTREF_BUILD_EPOCH	0x0001	/* the image's clock is epoch
					   (SOURCE_DATE_EPOCH) */
/* EXTREF_BUILD_VERIFY 0x0002: extref_build_update, below */
struct extref_build_opts {
	unsigned int	flags;		/* EXTREF_BUILD_* */
	long long	epoch;		/* with EXTREF_BUILD_EPOCH */
	extref_progress_func progress;	/* of long work, or NULL */
	void		*priv;
};
#define EXTREF_STEP_OPEN	1	/* opening the image */
#define EXTREF_STEP_WORK	2	/* the call's own work */
#define EXTREF_STEP_WRITE	3	/* writing it out: the close, the sync */
#define EXTREF_STEP_PUNCH	4	/* punching freed blocks out of the file */

/* A filesystem's figures, from its superblock. */
struct extref_image_info {
	__u64		blocks;
	unsigned int	blocksize;
	unsigned int	inodes;
	unsigned int	inode_size;
	int		journal;	/* has_journal */
	unsigned char	uuid[16];
	char		label[17];	/* NUL-ended */
};

/*
 * The empty tree added to the filesystem mke2fs has just made in image.
 * The image is new: it is written with no flush until one fsync at the
 * end, and only the block bitmap of the group the tree's block comes
 * from is read and written (the close then writes the superblocks).
 * Refuses a filesystem without extents (EXTREF_ERR_NO_EXTENTS) or with
 * bigalloc (EXTREF_ERR_BIGALLOC), as mke2fs's own configuration (-t, -T)
 * can make.  info (may be NULL) gets the new image's figures.
 */
errcode_t extref_build_format(const char *image,
			      const struct extref_build_opts *o,
			      struct extref_image_info *info, int *step);

/*
 * The size of an image for what a source holds (extref_source_measure
 * and its kin), computed, not guessed: the data (distinct blocks only
 * when measured so), the metadata, lost+found, the root, the tree's
 * nodes, the journal (4 MiB, or 1/1024 of the content above 4 GiB, at
 * most 128 MiB; none with no_journal) and the group metadata of a
 * filesystem of that many blocks and inodes, as libext2fs lays it out;
 * then headroom percent more, in blocks and inodes alike.  No blocks
 * are reserved for root.
 */
struct extref_build_plan {
	/* in */
	unsigned int	blocksize;
	unsigned int	inode_size;	/* 0: 256 */
	unsigned int	headroom;	/* percent */
	int		no_journal;
	/* out */
	__u64		bytes;		/* the filesystem's size */
	__u64		inodes;		/* as mke2fs keeps them (-N) */
	unsigned int	journal_mib;	/* in: -J size= (0: computed); out: the
					 * journal's size in MiB */
};
errcode_t extref_build_plan_size(const struct extref_source_size *s,
				 struct extref_build_plan *p);

/*
 * SELinux labels for every inode of image reached from its root (the
 * root and lost+found included): security.selinux is the context its
 * path in the image ("/", "/etc/passwd") and its mode look up to in
 * the file_contexts file (extref_labels_open); a path that looks up to
 * <<none>> or to nothing keeps what it has.  A hard link is labeled by
 * the first of its paths met.  Each context is checked
 * (extref_label_check).  On error path is where the walk was, bad_ctx
 * the context that failed its check (or NULL), why libselinux's
 * absence (EXTREF_ERR_SELINUX_LIB); path and bad_ctx are malloc'd,
 * freed by extref_build_labels_free.
 */
struct extref_build_labels {
	const char	*file_contexts;	/* in */
	/* out */
	char		*path;
	char		*bad_ctx;
	const char	*why;
};
errcode_t extref_build_label(const char *image,
			     const struct extref_build_opts *o,
			     struct extref_build_labels *l);
void extref_build_labels_free(struct extref_build_labels *l);

/*
 * What image holds, read from it: the data blocks its regular files map
 * (holes and inline data not counted; a block counted once per file),
 * the distinct blocks among them (a shared block once), and its size;
 * and, for an image in a regular file, the bytes the host allocated to
 * the file (host_bytes, from stat(2); -1 for a block device).
 */
struct extref_image_usage {
	__u64		file_blocks;
	__u64		stored_blocks;
	__u64		blocks;
	unsigned int	blocksize;
	long long	host_bytes;
};
errcode_t extref_image_usage(const char *image, struct extref_image_usage *u);

/*
 * A new image just populated (by this program: it is trusted, and
 * written without journal nor flushes) deduplicated with mode; then the
 * blocks that frees leave the image file (fallocate PUNCH_HOLE, those
 * only that the image read back from the disk has free).  st (may be
 * NULL) gets the dedupe's figures, *punched (may be NULL) the bytes
 * punched out.
 */
errcode_t extref_build_dedupe(const char *image, int mode,
			      const struct extref_build_opts *o,
			      struct extref_dedupe_stats *st,
			      __u64 *punched, int *step);

/*
 * An existing ext4 image made an extref image in place (mkfs.extref
 * --convert), in one walk that takes the image's write lock first and
 * holds it to the end: a journal that needs recovery is replayed (as
 * e2fsck does: the conversion starts from the state the journal gives);
 * the caller's check runs (stock e2fsck -fn, say: its error is returned
 * as it is, step EXTREF_STEP_CHECK); a group descriptor with a wrong
 * checksum is refused (EXTREF_ERR_DESC_CSUM, its group in bad_group);
 * nothing has been written until then.  Then extref_convert, and with
 * dedupe the sharing of identical data (the tree loaded and verified
 * first), in the journal's transactions, the first holding the
 * conversion; the blocks that frees are punched out of the file once
 * the image is closed.  An image file's every write goes through
 * e2fsprogs' undo io manager into undo_file first (opened: the caller
 * puts back what it holds with stock e2undo when the call fails at
 * EXTREF_STEP_WORK or _WRITE); a block device's (undo_file NULL) not.
 * note (may be NULL) is told, as it happens: EXTREF_NOTE_REPLAYING (a
 * journal that needs recovery is about to be replayed),
 * EXTREF_NOTE_REPLAYED (n transactions), EXTREF_NOTE_NO_JOURNAL (dedupe on an image without
 * one: each range flushed on its own), EXTREF_NOTE_WRITING (writing
 * begins; n is 1 when through the journal: a crash leaves an image to
 * replay, 0: one to repair), EXTREF_NOTE_WRITTEN (writing ended, or was
 * abandoned), EXTREF_NOTE_CONVERTED (on disk, before the punch).
 * An image with shared_blocks whose tree was never built (Android's
 * e2fsdroid leaves its deduplicated images so: extref_fsck_unbuilt) is
 * adopted instead: its tree built from the blocks its files share, as
 * fsck.extref -y builds a missing tree (extref_fsck_adopt), when the
 * checker finds nothing else wrong (else EXTREF_ERR_ADOPT_PROBLEMS at
 * EXTREF_STEP_CHECK), and EXTREF_NOTE_CONVERTED says n 1.  Every
 * refusal of the conversion (EXTREF_ERR_ALREADY for an extref image) is
 * made at EXTREF_STEP_CHECK, before any write.
 */
#define EXTREF_STEP_LOCK	5	/* taking the image's write lock */
#define EXTREF_STEP_REPLAY	6	/* replaying its journal */
#define EXTREF_STEP_CHECK	7	/* the checks before any write */
#define EXTREF_NOTE_REPLAYED	1
#define EXTREF_NOTE_NO_JOURNAL	2
#define EXTREF_NOTE_WRITING	3
#define EXTREF_NOTE_WRITTEN	4
#define EXTREF_NOTE_CONVERTED	5
#define EXTREF_NOTE_REPLAYING	6
typedef void (*extref_note_func)(int what, unsigned int n, void *priv);
struct extref_build_convert {
	/* in */
	int		dedupe;		/* enum extref_dedupe_mode */
	const char	*undo_file;	/* or NULL (a block device) */
	errcode_t	(*check)(const char *image, void *priv); /* or NULL */
	extref_note_func note;		/* or NULL */
	void		*priv;		/* check's and note's */
	/* out */
	int		bad_group;	/* a descriptor's checksum failed
					   (-1: none) */
	int		undo_made;	/* undo_file holds what to put back */
	__u64		punched;	/* bytes punched out of the file */
};
errcode_t extref_build_convert(const char *image,
			       const struct extref_build_opts *o,
			       struct extref_build_convert *c, int *step);

/*
 * The undo file of extref_build_convert beside an image file, as
 * mkfs.extref names it: IMAGE.convert.e2undo, put in name (len bytes;
 * EXT2_ET_INVALID_ARGUMENT when it does not fit).  An interrupted run
 * (killed, a crash) leaves it; while it is there, extref_build_convert
 * refuses (EXTREF_ERR_CONVERT_LEFT, step EXTREF_STEP_CHECK, nothing
 * written, the file kept).  extref_build_convert_left returns 1 when it
 * is there, holding an undo record (a run stopped before its first write
 * leaves none), and no writer holds the image (its write lock is tried,
 * and given back, unless flags has EXTREF_LEFT_LOCKED: the caller holds
 * it, or is the run that writes the file); else 0.  A writer asks before
 * it opens the image: the open could replay its journal.
 * extref_build_convert_left_note says what to do then, one line without
 * a newline (in a buffer of the calling thread, until its next call):
 * put the image back with stock e2undo, or delete the file and repair
 * the image with fsck.extref -fy.
 */
errcode_t extref_build_convert_undo_name(const char *image, char *name,
					 size_t len);
#define EXTREF_LEFT_LOCKED	0x0001	/* the caller holds the image */
int extref_build_convert_left(const char *image, int flags);
const char *extref_build_convert_left_note(const char *image);

/*
 * The undo file of extref_build_grow beside an image file:
 * IMAGE.grow.e2undo (as extref_build_convert_undo_name).  A run killed
 * during resize2fs, or a crash then, leaves it (undo_left.c says what
 * the image is then).  extref_build_left: either undo file left, as
 * extref_build_convert_left says it of its own (flags the same):
 * EXTREF_ERR_CONVERT_LEFT or EXTREF_ERR_GROW_LEFT, else 0; a writer asks
 * before it opens the image, and refuses while one is there.
 * extref_build_left_note: what to do about the one left (the error
 * extref_build_left returned), as extref_build_convert_left_note says
 * it: for --grow's, put the image back with stock e2undo, or keep the
 * grown image when stock e2fsck -fn finds it clean.
 */
errcode_t extref_build_grow_undo_name(const char *image, char *name,
				      size_t len);
errcode_t extref_build_left(const char *image, int flags);
const char *extref_build_left_note(const char *image, errcode_t left);

/*
 * The image file a build makes its filesystem in (mkfs.extref IMAGE
 * [SIZE]), looked at before anything is written.  The probe: an
 * existing image must be a regular file or a block device
 * (EXTREF_ERR_TARGET_KIND) that may be opened for writing and, unless
 * force, holds no filesystem nor partition table libblkid finds
 * (EXTREF_ERR_TARGET_IN_USE; EXTREF_ERR_TARGET_PROBE when it cannot
 * look); its size (a device's by BLKGETSIZE64) is the filesystem's
 * unless size_arg gives one (a device's not larger: EXTREF_ERR_TARGET_
 * SIZE); a missing image needs size_arg.  Then the geometry: the block
 * size is blocksize, else mke2fs's for that size (1024 below 512 MiB,
 * else 4096), the size whole blocks, at least 64 of them (need_for and
 * need, when set, name what it is too small for and the bytes it needs)
 * and below 2^48 (EXTREF_ERR_TARGET_SIZE), an inode size no larger than
 * a block (EXTREF_ERR_TARGET_INODE_SIZE).  On error t->why is the line
 * to print; else t says what is there and what to make.
 * extref_build_target_size only looks: an existing regular file's or
 * device's size (t->exists, t->is_blockdev, t->orig_size), nothing for
 * anything else (the probe says why); an error only when a device's
 * size cannot be read.
 */
struct extref_build_target_opts {
	const char	*image;
	const char	*size_arg;	/* SIZE as given, or NULL */
	__u64		size_bytes;	/* SIZE, with size_arg */
	unsigned int	blocksize;	/* 0: mke2fs's for the size */
	const char	*inode_size;	/* as given, or NULL */
	int		force;		/* what is there is overwritten */
	const char	*need_for;	/* or NULL */
	__u64		need;
};
struct extref_build_target {
	int		exists;
	int		is_blockdev;
	__u64		orig_size;	/* its size as it is */
	__u64		fs_bytes;	/* the filesystem's, whole blocks */
	unsigned int	blocksize;
	int		created;	/* extref_build_target_create made it */
	int		extended;	/* or grew it */
	char		why[8192];
};
errcode_t extref_build_target_probe(const struct extref_build_target_opts *o,
				    struct extref_build_target *t);
errcode_t extref_build_target_size(const char *image,
				   struct extref_build_target *t);
/*
 * extref_build_target_create makes the file t (a probe's) describes
 * the filesystem's size: creates it (O_EXCL), or extends a smaller
 * regular file to t->fs_bytes (a block device, or a file large enough,
 * is left alone), registered to be put back (extref_build_guard_image:
 * removed, or cut back to t->orig_size) with signals (the caller's
 * terminating ones; may be NULL) blocked in between.  t->created and
 * t->extended say what it did; on error (an errno value) t->why is the
 * line to print.
 */
errcode_t extref_build_target_create(const char *image,
				     const sigset_t *signals,
				     struct extref_build_target *t);

/*
 * What a build leaves behind when it fails or is stopped: nothing.  One
 * registry per process, for a tool's signal handlers and its exit: the
 * build's temporary tree (extref_build_guard_tree: a private directory,
 * as extref_build_shrink's hidden callback is told it), the child tool
 * running (extref_build_guard_child: extref_build_tool's and the
 * shrink's child callback), the image file the build created or grew
 * (extref_build_guard_image: removed, or cut back to orig_size; its
 * name kept absolute).  Register with the terminating signals blocked,
 * so that a thing is either registered or does not exist yet; a name
 * longer than PATH_MAX is -1 (errno ENAMETOOLONG).
 * extref_build_guard_run undoes everything registered (the child killed
 * and reaped, the tree removed, the image put back) by system calls
 * only: async-signal-safe, for a handler of a terminating signal and
 * for the exit of a failed run; -1 when the image's size could not be
 * put back.  extref_build_guard_keep forgets the image (the build
 * succeeded); extref_build_guard_undo puts it back now (0, or -1 with
 * errno).
 */
int extref_build_guard_tree(const char *path);
int extref_build_guard_image(const char *path, int created, __u64 orig_size);
void extref_build_guard_child(pid_t pid, void *priv);
void extref_build_guard_keep(void);
int extref_build_guard_undo(void);
int extref_build_guard_run(void);

/*
 * An image file replaced by a fresh build of what it holds, of a
 * build's size (mkfs.extref --shrink, and --convert --shrink), in one
 * walk that takes the image's write lock first and holds it to the end:
 *
 *   1. the refusals: a symbolic link (EXTREF_ERR_SHRINK_SYMLINK: the
 *      copy renamed over it would replace the link), a block device
 *      (EXTREF_ERR_SHRINK_BLOCKDEV); the image opened, read-only, once
 *      for the whole walk; a journal that needs recovery replayed first
 *      (notes EXTREF_NOTE_REPLAYING, _REPLAYED; then opened again); the
 *      caller's check on it (stock e2fsck -fn, say: its error returned
 *      as it is); without EXTREF_SHRINK_CONVERT, an image that is not an
 *      extref image (EXTREF_ERR_NO_FEATURE) or whose counts the checker
 *      core finds wrong (EXTREF_ERR_UNTRUSTED, res->problems; the
 *      core's own failure at EXTREF_STEP_WORK); stable_inodes
 *      (EXT2_ET_UNSUPP_FEATURE, res->stable_inodes: the copy renumbers
 *      inodes).  Steps EXTREF_STEP_LOCK, _REPLAY, _CHECK; nothing is
 *      written but the replay.  After every open by name the name must
 *      still be the locked file (same st_dev, st_ino), else
 *      EXTREF_ERR_IMAGE_REPLACED.
 *   2. the copy (EXTREF_STEP_COPY), in a hidden directory beside the
 *      image, DIR/.NAME.shrink-PID (0700; hidden is told its name with
 *      signals blocked, to remove it on a signal): a file made by the
 *      stock mke2fs (mke2fs, else the program mke2fs_env names, else
 *      /sbin/mke2fs, else mke2fs on PATH; our configuration) with the
 *      image's block size, inode size, UUID, label, hash seed, journal
 *      or none, and features, sized as extref_build_plan_size sizes a
 *      build of what the image holds (headroom percent more), its tree
 *      added, then populated from the open image as
 *      extref_populate_image does (every file, its sharing kept, the
 *      files' own times); with dedupe, deduplicated, and then copied
 *      once more into a file sized for what it holds now.  The caller's
 *      check on the copy (EXTREF_STEP_COPY_CHECK).
 *   3. the copy given the image's mode and owner (as far as we may),
 *      synced, renamed over the image (signals blocked), the directory
 *      synced (EXTREF_STEP_REPLACE; res->replaced tells whether the
 *      rename was done).
 *
 * Until the rename the image is not written (the replay aside); a
 * failure removes the hidden directory and what it holds.  note (may be
 * NULL) is told EXTREF_NOTE_SHRINK as each part is over, n one of
 * EXTREF_SHRINK_*: COPYING (the checks passed), FORMATTED (a copy's
 * empty filesystem made), FIRST (with dedupe, the first copy made),
 * BUILT (the copy made and checked), SYNCED (the copy on disk), RENAMED
 * (in the image's place: told with signals blocked).  mke2fs runs as
 * extref_build_run_tool runs it (signals, child).  progress reports the
 * copy.  On error res->step says which part failed, and for the copy
 * and the replacement res->why is the line to print ("FILE: ...").
 */
#define EXTREF_STEP_COPY	8	/* building the copy */
#define EXTREF_STEP_COPY_CHECK	9	/* the caller's check of the copy */
#define EXTREF_STEP_REPLACE	10	/* the copy put in the image's place */
#define EXTREF_NOTE_SHRINK	7
#define EXTREF_SHRINK_COPYING	1
#define EXTREF_SHRINK_FORMATTED	2
#define EXTREF_SHRINK_FIRST	3
#define EXTREF_SHRINK_BUILT	4
#define EXTREF_SHRINK_SYNCED	5
#define EXTREF_SHRINK_RENAMED	6
#define EXTREF_SHRINK_CONVERT	0x0001	/* an ext4 image, converted by the
					   copy (not an extref image yet) */
struct extref_build_shrink_opts {
	unsigned int	flags;		/* EXTREF_SHRINK_* */
	int		dedupe;		/* enum extref_dedupe_mode */
	unsigned int	headroom;	/* percent */
	struct extref_build_opts build;	/* clock, progress */
	const char	*mke2fs;	/* or NULL */
	const char	*mke2fs_env;	/* or NULL */
	const sigset_t	*signals;	/* the caller's terminating ones */
	/* the callbacks (each may be NULL), with priv */
	errcode_t	(*check)(const char *image, void *priv);
	extref_note_func note;
	int		(*hidden)(const char *dir, void *priv);	/* 0: ok */
	void		(*child)(pid_t pid, void *priv);
	void		*priv;
};
struct extref_build_shrink_result {
	int		step;		/* EXTREF_STEP_* of a failure */
	int		problems;
	int		stable_inodes;
	int		replaced;	/* the copy is in the image's place */
	__u64		blocks_before;	/* the image's */
	__u64		blocks_after;	/* the copy's */
	unsigned int	blocksize;
	char		why[8192];	/* a failure of the copy, "" */
};
errcode_t extref_build_shrink(const char *image,
			      const struct extref_build_shrink_opts *o,
			      struct extref_build_shrink_result *res);

/*
 * One undo file for a whole build into an existing image (mkfs.extref
 * -z UNDO_FILE), mke2fs's layout and the build written after it alike:
 * before mke2fs runs, every block of the image that holds data (a
 * file's data runs, as SEEK_DATA finds them; every block of a device)
 * is written back as it is through e2fsprogs' undo io manager, which
 * saves its old contents in undo_file first (size: the image's bytes
 * before the run; a failure to replace an old undo_file is
 * EXTREF_STEP_OPEN).  The channel stays open until the end of the run:
 * extref_build_undo_end closes it, recording the finished filesystem's
 * superblock, which is what stock e2undo checks before it puts the saved
 * blocks back.  A run that fails calls extref_build_undo_abort: the
 * channel closed, put_back (the caller's stock e2undo: 0 when it put the
 * blocks back) run, and then the file's old holes punched again: the
 * file as it was, byte for byte.  Both free u.
 */
/*
 * The directory root removed with everything below it, by system calls
 * only (no memory allocated, no stdio, no recursion): async-signal-safe,
 * for a build's temporary directory from a signal handler.  root must be
 * private (mode 0700, made by the caller), so that ".." is where the
 * walk came from; a directory it cannot empty stays, and so does root.
 */
void extref_build_remove_tree(const char *root);

typedef struct extref_build_undo *extref_build_undo_t;
errcode_t extref_build_undo_begin(const char *image, const char *undo_file,
				  __u64 size, extref_build_undo_t *u,
				  int *step);
errcode_t extref_build_undo_end(extref_build_undo_t u);
int extref_build_undo_abort(extref_build_undo_t u,
			    int (*put_back)(void *priv), void *priv);

/*
 * A new image, just formatted (extref_build_format), populated from one
 * source: the n archives of layer_fds as layers (extref_populate_layers,
 * layer_flags), else the image at path image (extref_populate_image),
 * else the archive on archive_fd (>= 0), else the host directory dir.
 * The image is opened without its tree (the dedupe's, after this) and
 * without journal transactions (a new image, interrupted, is unfinished
 * whatever was written), its clock o's; quotas recomputed, closed.  p is
 * the caller's, as for extref_populate_dir (freed by
 * extref_populate_free).
 */
struct extref_build_source {
	const char	*dir;
	int		archive_fd;	/* -1: none */
	const char	*image;
	const int	*layer_fds;
	size_t		n_layers;
	unsigned int	layer_flags;	/* EXTREF_LAYERS_OCI */
};
errcode_t extref_build_populate(const char *image,
				const struct extref_build_source *src,
				const struct extref_build_opts *o,
				struct extref_populate *p);

/*
 * The input of a build, before the image is made (mkfs.extref -d): the
 * source the options name opened, checked and measured, in, ready for
 * extref_build_populate (in->src).  The source is one of:
 *
 * - args: n_args arguments as mkfs.extref's -d takes them: one is a
 *   path, "-" (an archive on standard input, which must not be a
 *   directory), "oci:DIR[:TAG]" (oci_dir and oci_tag: the tag follows
 *   the last ':' after the last '/') or "layers:LIST" (layer_list);
 *   several are layers, none of them prefixed so;
 * - path: a host directory, an archive (tar, pax, cpio; compressed or
 *   not; a file, a FIFO or a character device, opened as it is: a pipe
 *   on purpose waits for its writer) or an ext2/3/4 image (a regular
 *   file or a block device with the superblock's magic; never the image
 *   being made: EXTREF_ERR_SOURCE_IS_TARGET), told apart by what is
 *   there; with EXTREF_SOURCE_ON_FD, the archive on fd (read from a
 *   duplicate), path only naming it;
 * - layers: n_layers archive files, applied in order as the layers of
 *   an OCI container image (extref_populate_layers with
 *   EXTREF_LAYERS_OCI);
 * - layer_list: a file naming such archives, one a line (empty lines
 *   and lines starting with # skipped; a relative name is taken from
 *   the current directory);
 * - oci_dir: the layers of an OCI image layout on disk (as skopeo copy
 *   ... oci:DIR or umoci leave it; nothing is fetched): its oci-layout
 *   names its version, its index.json the manifests, of which the one
 *   annotated org.opencontainers.image.ref.name oci_tag is taken
 *   (oci_tag NULL: the only one); the manifest and the config are read
 *   from oci_dir/blobs/ALG/HEX, and each layer blob (tar, gzip or zstd
 *   compressed) opened there.  Every blob's size and digest (sha256 or
 *   sha512) is checked against its descriptor before anything is
 *   built, the size before the bytes are read; JSON is parsed strictly.
 *   The config changes nothing of the image (its User is the container
 *   process's, which no file's owner follows), but its rootfs.diff_ids
 *   must count the manifest's layers.
 *
 * Every layer must be a regular file: one that is not (a FIFO: refused
 * without waiting for a writer; a symbolic link, for a blob) is refused.
 * in->names names each layer (as given; a blob by its path).  in->src
 * points at o's path (src.dir, src.image): keep it until the close.
 *
 * The measure, in in->size, is what the source takes in an image of
 * blocksize-byte blocks (extref_source_measure, extref_archive_measure2
 * with dedupe, extref_image_measure; layers: their sum, an upper bound),
 * to size the image from (extref_build_plan_size); progress reports it.
 * An archive on a pipe cannot be read twice: it is first copied, as it
 * comes, to an unnamed file in $TMPDIR (else /var/tmp: O_TMPFILE, or a
 * name unlinked at once, signals blocked meanwhile (may be NULL)).
 * With EXTREF_SOURCE_SIZED (the image's size is the caller's) a
 * directory or an archive is only counted, not read (a pipe not at
 * all: it is read once, into the image); in->size stays zero for them,
 * and in->need is an estimate of the bytes the source needs (its
 * blocks, inode tables at 256 bytes and 32 MiB for the journal and
 * group metadata; 0: not known), for the message when the size is too
 * small.  in->entries and in->bytes (its data, in bytes) count a source
 * of one path, for a progress total and messages (0 for layers).
 *
 * With EXTREF_SOURCE_DIGEST, in->digest is a SHA-256 of what the source
 * holds (has_digest set), from which a build under SOURCE_DATE_EPOCH
 * derives the image's UUID (extref_build_mke2fs_argv): of a directory,
 * its entries in byte order of their names, each as its path from the
 * root, its type and permission bits and a regular file's bytes, a
 * symbolic link's target, a device's numbers (not owners, times nor
 * extended attributes: the same checkout by another user or on another
 * host digests alike); of an archive (a pipe is spooled first, SIZED
 * or not), its bytes as they are; of layers, each layer's bytes in
 * order; of an image, its non-zero 4 KiB blocks and their offsets.  It
 * reads the whole source once more.
 *
 * On error, in->why is what to tell the user (malloc'd; NULL when even
 * that could not be allocated): the file and what is wrong with it;
 * image (may be NULL) is named in it when the fault is not the
 * source's.  Either way extref_build_input_close frees what in holds
 * (the descriptors too; never call it on an in this did not fill).
 * Errors: EXTREF_ERR_OCI_LAYOUT (a layout this does not read),
 * EXTREF_ERR_OCI_BLOB (a blob differs from its descriptor),
 * EXTREF_ERR_SOURCE_TYPE (neither a directory, an archive nor an image;
 * a layer not a regular file), EXTREF_ERR_LAYER_LIST (a list of none),
 * EXTREF_ERR_SOURCE_IS_TARGET, the measures' errors, an errno value (a
 * file that cannot be read), EXT2_ET_NO_MEMORY.
 */
#define EXTREF_SOURCE_SIZED	0x0001	/* the image's size is the caller's */
#define EXTREF_SOURCE_ON_FD	0x0002	/* path's archive is on fd */
#define EXTREF_SOURCE_DIGEST	0x0004	/* in->digest: what it holds */
struct extref_build_input_opts {
	/* the source: one of */
	const char *const *args;	/* mkfs.extref's -d arguments */
	size_t		n_args;
	const char	*path;
	const char *const *layers;
	size_t		n_layers;
	const char	*layer_list;
	const char	*oci_dir;
	const char	*oci_tag;	/* or NULL */
	int		fd;		/* with EXTREF_SOURCE_ON_FD */
	/* the build */
	unsigned int	flags;		/* EXTREF_SOURCE_* */
	const char	*image;		/* the image to be made */
	unsigned int	blocksize;	/* its blocks' size */
	int		dedupe;		/* enum extref_dedupe_mode */
	const sigset_t	*signals;	/* the caller's terminating ones */
	extref_progress_func progress;	/* of the measure, or NULL */
	void		*priv;
};
struct extref_build_input {
	struct extref_build_source src;	/* for extref_build_populate */
	char		**names;	/* src.n_layers: each layer named */
	struct extref_source_size size;	/* measured */
	__u64		need;		/* EXTREF_SOURCE_SIZED: bytes, about */
	__u64		entries;	/* one path's entries */
	__u64		bytes;		/* and data */
	unsigned char	digest[32];	/* EXTREF_SOURCE_DIGEST: SHA-256 */
	int		has_digest;
	char		*why;		/* on error */
};
errcode_t extref_build_input_open(const struct extref_build_input_opts *o,
				  struct extref_build_input *in);
void extref_build_input_close(struct extref_build_input *in);

/*
 * image updated in place (mkfs.extref --update): from the host directory
 * dir (extref_update_dir), or, when layer_fd >= 0, from the archive on
 * it as one more OCI layer (extref_update_layer).  The image is opened
 * read-write with its tree, trusted from its stamp unless
 * EXTREF_BUILD_VERIFY asks for the proof against every extent (a
 * journal that needs recovery replayed first), its clock o's; a failure
 * rolls back what was not committed.  u is the caller's, as for
 * extref_update_dir, but u->progress is told the copy's ("updating")
 * total: the bytes of dir's regular files (a layer: the archive's
 * size), at least what is done.  st (may be NULL) gets the image's
 * blocks in use before and after, its free blocks before and its block
 * size.
 */
#define EXTREF_BUILD_VERIFY	0x0002
struct extref_build_update_stats {
	__u64		used_before;
	__u64		used_after;
	__u64		free_before;
	unsigned int	blocksize;
};
errcode_t extref_build_update(const char *image, const char *dir,
			      int layer_fd, const struct extref_build_opts *o,
			      struct extref_update *u,
			      struct extref_build_update_stats *st);

/*
 * What an update of image (extref_build_update's dir or layer_fd, u's
 * flags and at) will take of its free blocks and inodes, found by a
 * dry run on the image opened read-only: the image's data indexed as
 * the update indexes it, the source walked and every file counted as
 * the update would put it (kept, a reflink, or block by block: only
 * the blocks the image does not hold are written; equality by hash),
 * with the extent-tree nodes, directory blocks, slow symlinks and tree
 * records that come with them.  The blocks of files the update
 * replaces are not subtracted (it keeps them until it commits): blocks
 * is what the update needs free, about.  A layer (layer_fd, a regular
 * file) is read from its start as the update applies it, entry by
 * entry against the image as the entries before it left it (whiteouts
 * and opaque directories too), each file's data hashed as it streams;
 * fd back where it was.  free_blocks and free_inodes are the image's.
 */
struct extref_update_need {
	__u64		blocks;
	__u64		inodes;
	__u64		free_blocks;
	__u64		free_inodes;
	unsigned int	blocksize;
};
errcode_t extref_build_update_need(const char *image, const char *dir,
				   int layer_fd,
				   const struct extref_update *u,
				   struct extref_update_need *n);

/*
 * Grow the image file image (mkfs.extref --update --grow) until it has
 * need_blocks free blocks and need_inodes free inodes, with headroom
 * percent more of the whole, as extref_build_plan_size adds it (the
 * blocks in use plus what is needed, the new groups' metadata, then
 * headroom percent of that; inodes come in whole groups).  A block
 * device is never grown (EXTREF_ERR_GROW_DEVICE, nothing opened).
 * Under the image's write lock: a journal that needs recovery is
 * replayed first (note told, as extref_build_shrink tells it);
 * the stock resize2fs grows the filesystem and the file (EXTREF_RESIZE2FS
 * names another program: tests; else /sbin/resize2fs, else PATH), with
 * the undo file IMAGE.grow.e2undo beside it (extref_build_grow_undo_name;
 * while an interrupted run's is there, the grow is refused:
 * EXTREF_ERR_GROW_LEFT or EXTREF_ERR_CONVERT_LEFT, nothing written,
 * step EXTREF_STEP_CHECK; removed after a grow); then the grown
 * image is proven as a writer's open proves it (every count against
 * every mapping: EXTREF_ERR_UNTRUSTED) and recorded as this library's
 * write (a foreign write met before is kept for fsck.extref).  A
 * growth that would need more group descriptor blocks than the image
 * reserved (resize2fs would move blocks) is refused
 * (EXTREF_ERR_GROW_TOO_BIG).  When resize2fs fails
 * (EXTREF_ERR_GROW_FAILED, output: what it wrote) or the proof does,
 * the undo file is put back with the stock e2undo (EXTREF_E2UNDO: tests)
 * and the file truncated to its old length: the image as it was, byte
 * for byte (undone set; EXTREF_ERR_GROW_UNDO, undo file kept and named
 * in output, when that fails: extref_build_left then says it).  Nothing to grow: 0, blocks_after == blocks_before.
 * signals, child and priv as extref_build_tool's.  output is malloc'd:
 * free it.
 */
struct extref_build_grow {
	/* in */
	__u64		need_blocks;
	__u64		need_inodes;
	unsigned int	headroom;	/* percent */
	const sigset_t	*signals;
	void		(*child)(pid_t pid, void *priv);
	extref_note_func note;		/* or NULL */
	void		*priv;
	/* out */
	__u64		blocks_before;
	__u64		blocks_after;
	unsigned int	blocksize;
	int		undone;		/* a failed grow put back */
	char		*output;
};
errcode_t extref_build_grow(const char *image,
			    const struct extref_build_opts *o,
			    struct extref_build_grow *g, int *step);
/*
 * extref_build_update with g: the need measured first
 * (extref_build_update_need); an image without that room free grown
 * (extref_build_grow, *step set as it sets it; then st->blocksize is
 * 0), then updated; an update that still runs out of room (the
 * estimate short) is measured, grown and run once more.  u, st as for
 * extref_build_update; g->need_* are set here.
 */
errcode_t extref_build_update_grow(const char *image, const char *dir,
				   int layer_fd,
				   const struct extref_build_opts *o,
				   struct extref_update *u,
				   struct extref_build_update_stats *st,
				   struct extref_build_grow *g, int *step);

/*
 * A stock e2fsprogs tool a build runs (mke2fs, e2fsck -fn, e2undo), run
 * to its end: argv[0] is name; the program is the one env_var (may be
 * NULL) names, else path (may be NULL), else name on PATH.  The child
 * gets /dev/null as standard input, a memory file as standard output and
 * error (output: all it wrote, malloc'd; status: waitpid's), the
 * environment less what would change its work (LC_ALL=C; o's epoch as
 * E2FSPROGS_FAKE_TIME; MKE2FS_CONFIG=conf when conf is given, conf_fd
 * kept open for it; without conf, conf_fd (-1: none) is kept open all
 * the same: --grow's image lock, held by resize2fs until it ends), the
 * caller's signal mask (with hold_signals,
 * signals blocked too), its handlers reset by the exec, its ignored
 * signals still ignored.  signals (the caller's
 * terminating ones) are blocked while the child is started and
 * registered (child(pid), may be NULL) and while it is reaped and
 * unregistered (child(0)); with hold_signals, for the whole run (a
 * Ctrl-C neither kills the tool half-way nor leaves it running alone;
 * the signal is taken once it has ended).  An error only when it could
 * not be run (an errno value).
 */
struct extref_build_tool {
	const char	*name;
	const char	*path;
	const char	*env_var;
	const char	*conf;
	int		conf_fd;
	const sigset_t	*signals;
	int		hold_signals;
	void		(*child)(pid_t pid, void *priv);
	void		*priv;
	/* out */
	char		*output;
	int		status;
};
errcode_t extref_build_run_tool(const char *const *argv,
				const struct extref_build_opts *o,
				struct extref_build_tool *t);
/*
 * Stock e2fsck -fn on image, and stock e2undo putting image back from
 * undo_file (which is removed once it did), run by extref_build_run_tool
 * holding t->signals (t: the caller's env_var, signals and child; path
 * NULL: /sbin/NAME; this sets the rest).  0 when the tool exited 0; else
 * an errno value (it could not be run) or EXTREF_ERR_TOOL_FAILED (it ran
 * and failed: e2fsck found the filesystem damaged, or e2undo could not
 * put it back), why (len bytes) the line that says so ("IMAGE: cannot
 * run e2undo: ...", "IMAGE: e2fsck failed (exit status 4)").
 * t->output (all the tool wrote, malloc'd) is the caller's to free.
 */
errcode_t extref_build_e2fsck_fn(const char *image,
				 const struct extref_build_opts *o,
				 struct extref_build_tool *t,
				 char *why, size_t len);
errcode_t extref_build_e2undo(const char *undo_file, const char *image,
			      const struct extref_build_opts *o,
			      struct extref_build_tool *t,
			      char *why, size_t len);

/*
 * The stock mke2fs as a build runs it (with extref_build_run_tool).
 * extref_build_mke2fs_conf: our configuration's text (Debian's
 * mke2fs.conf less the types a build never asks for), for MKE2FS_CONFIG,
 * so the result does not depend on the host's /etc/mke2fs.conf.
 * extref_build_mke2fs_argv fills argv (and the buffers it points into)
 * from the fields before it: "mke2fs", -q unless verbose, -F, -t fs_type
 * (NULL: ext4), -b blocksize with give_blocksize, -N -i -I -L -U -E -O -J
 * when set (-E with lazy_journal_init=1 added for a build with
 * has_source into a regular file that reads back as zeros: created, or
 * not nodiscard), -m 0 with reserved_zero, pass (npass words, as given),
 * image and fs_bytes in KiB; EXT2_ET_INVALID_ARGUMENT when they do not
 * fit.  extref_build_mke2fs_why, after a failed run (output: what it
 * wrote, changed in place; status: waitpid's), writes into why the one
 * line that says why ("IMAGE: ..."), from mke2fs's first meaningful
 * message (a size problem first; need_for and need, when set, name what
 * the image is too small for and the bytes it needs).
 *
 * Reproducible builds: with have_epoch (SOURCE_DATE_EPOCH, also what
 * the run's E2FSPROGS_FAKE_TIME is), a build with no uuid gets -U and
 * one whose ext_opts hold no hash_seed= gets -E hash_seed=, derived,
 * not random (an explicit -U or hash_seed= wins, "-U random" too): the
 * UUID is the name-based (version 5, SHA-1) UUID in extref's namespace
 * dc2221d4-187f-42a9-a5a0-0cf29434ec41 of the bytes "uuid" NUL EPOCH
 * NUL LABEL NUL DIGEST (EPOCH in decimal; LABEL the label's first 16
 * bytes, empty without one; DIGEST source_digest's 32 bytes in
 * lowercase hex, the source's digest (extref_build_input's with
 * EXTREF_SOURCE_DIGEST), empty when NULL), so that two builds of
 * different sources or labels at one epoch get two UUIDs and a rebuild
 * of the same the same one; the hash seed is the name-based UUID of
 * "hash_seed" NUL EPOCH in the namespace of the filesystem's UUID (the
 * given one when it is a UUID).  Everything else mke2fs and the build
 * write already follows from the epoch and the input; uuidbuf and
 * seedbuf hold what was derived.
 */
#define EXTREF_MKE2FS_MAX_ARGS	104
struct extref_build_mke2fs {
	const char	*image;
	__u64		fs_bytes;
	unsigned int	blocksize;
	int		give_blocksize;
	const char	*fs_type;
	const char	*inodes;
	const char	*inode_ratio;
	const char	*inode_size;
	const char	*label;
	const char	*uuid;
	const char	*ext_opts;
	const char	*features;
	const char	*journal_opt;
	int		reserved_zero;
	const char	*const *pass;
	int		npass;
	int		verbose;
	int		has_source;
	int		created;
	int		is_blockdev;
	const char	*need_for;
	__u64		need;
	int		host_conf;	/* mke2fs's own configuration, not
					   ours (extref_build_mke2fs_run) */
	int		scratch;	/* image does not exist: a dry run
					   (-n) on a memory file of fs_bytes */
	int		have_epoch;	/* SOURCE_DATE_EPOCH: derive -U, */
	long long	epoch;		/* -E hash_seed= when not given */
	const unsigned char *source_digest; /* 32 bytes, or NULL */
	/* out */
	const char	*argv[EXTREF_MKE2FS_MAX_ARGS];
	char		uuidbuf[37];	/* derived, or "" */
	char		seedbuf[37];
	char		bsbuf[16];
	char		sizebuf[32];
	char		ebuf[1024];
};
const char *extref_build_mke2fs_conf(void);
/* The block size our configuration gives a filesystem of bytes, as
 * mke2fs picks it from the size's type (1024 below 512 MiB, else 4096). */
unsigned int extref_build_mke2fs_blocksize(__u64 bytes);
errcode_t extref_build_mke2fs_argv(struct extref_build_mke2fs *m);
void extref_build_mke2fs_why(const struct extref_build_mke2fs *m, char *output,
			     int status, char *why, size_t len);
/*
 * mke2fs run for a build: argv from m (extref_build_mke2fs_argv), by
 * extref_build_run_tool with t (the caller's name, path, env_var,
 * signals, child; this sets conf, conf_fd and hold_signals), given our
 * configuration unless m->host_conf: a memory file the child reads
 * through /proc/self/fd, or, where there is none, a temporary file in
 * $TMPDIR (else /tmp) that exists only while t->signals are blocked
 * (mke2fs then runs holding them) and is gone on return.  With
 * m->scratch (mke2fs -n among pass, for an image that does not exist),
 * mke2fs runs on a sparse memory file of fs_bytes, which names the image
 * in its argv and in why: nothing is made.  0 when mke2fs
 * exited 0 (t->output: its report, malloc'd); else why (len bytes) is
 * the line to say: EXTREF_ERR_MKE2FS when it ran and failed
 * (extref_build_mke2fs_why's line), EXT2_ET_INVALID_ARGUMENT when the
 * argv could not be made, an errno value when it could not be run or the
 * configuration not written.  t->output is the caller's to
 * free either way.
 */
errcode_t extref_build_mke2fs_run(struct extref_build_mke2fs *m,
				  const struct extref_build_opts *o,
				  struct extref_build_tool *t,
				  char *why, size_t len);

/*
 * What a build was asked, as mkfs.extref's command line asks it: the
 * options only, each checked as it is set, never the run's state (the
 * sizes and the source a run settles are the caller's).  Another front
 * end (a GUI, a FUSE server's mkfs) fills it the same way:
 * extref_build_args_init, then extref_build_args_set for each option as
 * given (opt a short option's letter, or an EXTREF_ARG_* for a long
 * one; arg its value or NULL), then extref_build_args_check once all are
 * set (the options against each other, --update's source looked at,
 * the dedupe mode's default, SOURCE_DATE_EPOCH read from the
 * environment).  The mke2fs options mke2fs takes that mean something
 * for an extref image (-c -D -e -g -G -j -J -K -l -m -M -n -o -r -t -T
 * -v) are kept in pass, in order, as given, for mke2fs; -C and -S are
 * refused; -z is the build's own undo file.  -E is checked key by key
 * (hash_seed a UUID, root_owner UID:GID, lazy_itable_init 0 or 1,
 * quotatype, the keys mke2fs checks itself; offset and android_sparse
 * refused) and -O name by name (e2p's names; extents never cleared,
 * bigalloc and shared_blocks never set).  On error why (len bytes) is
 * the line to print ("invalid block size '3000' (must be 1024, 2048 or
 * 4096)"), and the error EXTREF_ERR_BUILD_ARG (a bad value),
 * EXTREF_ERR_BUILD_UNSUPPORTED (an option an extref image cannot have),
 * EXTREF_ERR_BUILD_CONFLICT (options that do not go together), an
 * errno value (--update's source cannot be looked at; --file-contexts'
 * file cannot be read), EXTREF_ERR_SELINUX_LIB or EXT2_ET_NO_MEMORY.
 * extref_build_args_free frees ext_opts and features.
 * extref_build_args_optstring: getopt's string of the short options
 * extref_build_args_set takes; extref_build_args_needs_arg: whether opt
 * takes a value.  extref_build_parse_size: SIZE, digits with an
 * optional K, M, G or T (powers of 1024; lower case and a trailing "iB"
 * or "B" too; a plain number counts units of unit bytes);
 * extref_build_parse_uint: decimal digits, at most max; both
 * EXTREF_ERR_BUILD_ARG on bad syntax or overflow.
 */
#define EXTREF_BUILD_MAX_SOURCES 128	/* -d given this often at most */
#define EXTREF_BUILD_PASS_MAX	64	/* words of mke2fs options passed on */
#define EXTREF_BUILD_LABEL_MAX	16
#define EXTREF_ARG_CONVERT	1000	/* --convert */
#define EXTREF_ARG_DEDUP	1001	/* --dedup=none|file|block */
#define EXTREF_ARG_HEADROOM	1002	/* --headroom=PCT */
#define EXTREF_ARG_ALL_ROOT	1003	/* --all-root */
#define EXTREF_ARG_FILE_CONTEXTS 1004	/* --file-contexts=FILE */
#define EXTREF_ARG_UPDATE	1005	/* --update */
#define EXTREF_ARG_AT		1006	/* --at=PATH */
#define EXTREF_ARG_DELETE	1007	/* --delete */
#define EXTREF_ARG_SHRINK	1008	/* --shrink */
#define EXTREF_ARG_VERIFY	1009	/* --verify */
#define EXTREF_ARG_SIZE		1010	/* --size=SIZE|auto */
#define EXTREF_ARG_GROW		1011	/* --grow */
#define EXTREF_ARG_ATOMIC	1012	/* --atomic */
struct extref_build_args {
	const char	*image;
	const char	*size_arg;	/* SIZE as given, or NULL */
	unsigned int	blocksize;	/* -b; 0 until chosen */
	int		bs_chosen;	/* -b given (or chosen by the run) */
	const char	*inodes;	/* -N, digits */
	const char	*inode_ratio;	/* -i, digits */
	const char	*inode_size;	/* -I, digits */
	const char	*label;		/* -L, cut to 16 bytes */
	char		label_cut[EXTREF_BUILD_LABEL_MAX + 1];
	const char	*uuid;		/* -U */
	char		*ext_opts;	/* -E, all of them, checked, joined */
	char		*features;	/* -O, all of them joined */
	int		quiet;		/* -q */
	int		force;		/* -F */
	int		have_epoch;	/* SOURCE_DATE_EPOCH */
	long long	epoch;
	int		convert;	/* --convert */
	int		dedup;		/* enum extref_dedupe_mode; -1 unset */
	const char	*source;	/* the first -d */
	const char	*sources[EXTREF_BUILD_MAX_SOURCES]; /* every -d */
	size_t		nsources;
	unsigned int	headroom;	/* --headroom, percent (5) */
	int		all_root;	/* --all-root */
	int		root_owner;	/* -E root_owner given */
	int		no_xattrs;	/* -E no_copy_xattrs */
	const char	*file_contexts;	/* --file-contexts */
	int		update;		/* --update */
	const char	*at;		/* --at */
	int		delete_extra;	/* --delete */
	int		shrink;		/* --shrink */
	int		verify;		/* --verify */
	int		atomic;		/* --atomic */
	int		grow;		/* --grow */
	int		size_auto;	/* --size=auto */
	/* the mke2fs options passed on */
	const char	*pass[EXTREF_BUILD_PASS_MAX];
	int		npass;
	const char	*fs_type;	/* -t, in place of ext4 */
	int		host_conf;	/* -t or -T: mke2fs's configuration */
	int		journal_given;	/* -J */
	unsigned int	journal_mib;	/* -J size=MB, else 0 */
	int		reserved_given;	/* -m */
	int		verbose;	/* -v (and -n) */
	int		noaction;	/* -n */
	const char	*undo;		/* -z UNDO_FILE */
};
void extref_build_args_init(struct extref_build_args *a);
errcode_t extref_build_args_set(struct extref_build_args *a, int opt,
				const char *arg, char *why, size_t len);
errcode_t extref_build_args_check(struct extref_build_args *a, char *why,
				  size_t len);
void extref_build_args_free(struct extref_build_args *a);
const char *extref_build_args_optstring(void);
int extref_build_args_needs_arg(int opt);
errcode_t extref_build_parse_size(const char *arg, __u64 unit, __u64 *bytes);
errcode_t extref_build_parse_uint(const char *arg, unsigned long long max,
				  unsigned long long *val);

/*
 * Each step's options from what a build was asked, a: the clock
 * (EXTREF_BUILD_EPOCH; EXTREF_BUILD_VERIFY with --verify), the mke2fs
 * options (all of extref_build_mke2fs's fields that a and the probed
 * target t give; the sizes a run derives from its source, -N, -J, -m 0,
 * the digest and need, are the caller's to add), the input's (the -d
 * arguments; EXTREF_SOURCE_SIZED with a SIZE, EXTREF_SOURCE_DIGEST with
 * the epoch and no -U), the populate's flags (--all-root, -E root_owner
 * and no_copy_xattrs, the epoch) and dedupe mode, the update's (--at,
 * --all-root, --delete, EXTREF_UPDATE_KEEP_JOURNAL with --atomic, the
 * epoch), the shrink's (--convert, the dedupe mode, --headroom, the
 * clock).
 * Each clears what it fills first; progress and callbacks are the
 * caller's to add.
 */
void extref_build_opts_of(const struct extref_build_args *a,
			  struct extref_build_opts *b);
void extref_build_mke2fs_of(const struct extref_build_args *a,
			    const struct extref_build_target *t,
			    struct extref_build_mke2fs *m);
void extref_build_input_of(const struct extref_build_args *a,
			   struct extref_build_input_opts *io);
void extref_build_populate_of(const struct extref_build_args *a,
			      struct extref_populate *p);
void extref_build_update_of(const struct extref_build_args *a,
			    struct extref_update *u);
void extref_build_shrink_of(const struct extref_build_args *a,
			    struct extref_build_shrink_opts *so);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_BUILDER_H */
