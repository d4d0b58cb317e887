/*
 * extref_builder.h --- the image builder: an image populated from a
 * source (a host directory, an archive, layers, another image), the
 * data already in an image deduplicated, an image updated in place, and
 * a source measured before the image is made.  Built on extref_ops.h.
 */
#ifndef EXTREF_BUILDER_H
#define EXTREF_BUILDER_H

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
/* Progress of long work: what is done, units done of total. */
typedef void (*extref_progress_func)(const char *phase, __u64 done,
				     __u64 total, void *priv);
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
 * read-write with its tree; the whole is one transaction unless it
 * outgrows the journal, then several, committed between two entries
 * (FORMAT.md section 8).  On error, where names the entry.  With
 * EXTREF_UPDATE_DELETE, as rsync --delete, the names the source lacks
 * in a directory it has leave the image (directories with all below
 * them; the root's lost+found stays), and a directory in the image
 * where the source has another kind is removed and replaced.
 */
#define EXTREF_UPDATE_DELETE	0x0100
struct extref_update {
	unsigned int	flags;		/* EXTREF_POP_ALL_ROOT, _EPOCH,
					   EXTREF_UPDATE_DELETE */
	long long	epoch;		/* with EXTREF_POP_EPOCH */
	const char	*at;		/* a directory of the image, or NULL */
	extref_progress_func progress;	/* or NULL */
	void		*priv;
	/* out */
	__u64		entries;	/* entries of DIR written */
	__u64		files_kept;	/* regular files kept as they were */
	__u64		files_linked;	/* made reflinks of an image file */
	__u64		blocks_shared;	/* blocks shared with the image */
	__u64		blocks_written;	/* new blocks written */
	__u64		removed;	/* names removed (EXTREF_UPDATE_DELETE) */
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

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_BUILDER_H */
