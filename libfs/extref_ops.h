/*
 * extref_ops.h --- reference-aware file operations on an extref image.
 *
 * Every operation keeps the reference counts true and follows the write
 * order of FORMAT.md section 8: a count is raised (and committed) before
 * the mapping that needs it is written; a mapping is removed before its
 * count is lowered; a block is freed in the bitmap only after the commit
 * that dropped its last mapping.  Each call commits the tree before it
 * returns.  All need an image opened with EXTREF_OPEN_RW and a loaded
 * tree, else EXTREF_ERR_READ_ONLY / EXTREF_ERR_NO_TREE.
 *
 * Inodes are named by number; paths are resolved by the caller
 * (ext2fs_namei).  Offsets and lengths are in bytes.
 */
#ifndef EXTREF_OPS_H
#define EXTREF_OPS_H

#include "extref.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything declared here is exported; the rest of the library is not. */
#pragma GCC visibility push(default)

/* How a reflinked file gets its metadata. */
#define EXTREF_REFLINK_PRESERVE	0x0001	/* snapshot: owner, mode, times, xattrs */
#define EXTREF_REFLINK_RECURSIVE 0x0002	/* SRC may be a directory */

/*
 * A credential: who creates files in copy mode (owner, group, umask) and,
 * set on an open image with extref_set_identity, who acts: every
 * operation then checks what the kernel would check for that caller
 * (permissions, capabilities, quota limits).  Capabilities carry the
 * kernel's names.
 */
#define EXTREF_NGROUPS_MAX		32
#define EXTREF_CAP_CHOWN		0x0001
#define EXTREF_CAP_DAC_OVERRIDE		0x0002
#define EXTREF_CAP_DAC_READ_SEARCH	0x0004
#define EXTREF_CAP_FOWNER		0x0008
#define EXTREF_CAP_FSETID		0x0010
#define EXTREF_CAP_LINUX_IMMUTABLE	0x0020
#define EXTREF_CAP_SYS_ADMIN		0x0040
#define EXTREF_CAP_SYS_RESOURCE		0x0080
#define EXTREF_CAP_SETFCAP		0x0100
#define EXTREF_CAP_ALL			0x01ff

struct extref_cred {
	__u32	uid;
	__u32	gid;
	__u32	umask;
	__u32	ngroups;			/* supplementary groups */
	__u32	groups[EXTREF_NGROUPS_MAX];
	__u32	caps;				/* EXTREF_CAP_* */
};
/* The invoking process's uid, gid, groups and umask (caps: all for root). */
void extref_cred_current(struct extref_cred *cred);

/*
 * Act as cred on this image from now on (NULL: no identity, the default:
 * nothing is checked, as for root tools).  The credential is copied.
 * Every call below then refuses what the kernel would refuse that user
 * (EXTREF_ERR_ACCESS, EXTREF_ERR_PERM), changing nothing, and the
 * inodes it makes are the identity's, whatever cred a call is given
 * (ops/perm.c has the rules; debugfs.extref(8), PERMISSIONS).
 * EXT2_ET_INVALID_ARGUMENT when ngroups is above EXTREF_NGROUPS_MAX.
 */
errcode_t extref_set_identity(extref_fs_t fs, const struct extref_cred *cred);
/* The identity set on fs, or NULL. */
const struct extref_cred *extref_identity(extref_fs_t fs);

/*
 * Quota (images with the quota feature: the v2 quota files of user,
 * group and project quota).  Every operation charges the inodes it
 * changes: an inode is charged its whole i_blocks (bytes) and one inode
 * to its uid, gid and project id, as e2fsck computes usage; a block
 * shared by two files is charged to both owners.  With an identity set
 * (without EXTREF_CAP_SYS_RESOURCE) an operation that would pass a hard
 * limit, or a soft limit past its grace time, is refused before it
 * changes anything (EXTREF_ERR_DQUOT).  Limits and space are in bytes
 * here (the file keeps limits in 1 KiB units: a limit is rounded down to
 * a multiple of 1024).
 */
/* EXTREF_QUOTA_USER, _GROUP, _PROJECT: extref.h */
struct extref_quota {
	__u64	space;			/* bytes charged */
	__u64	inodes;			/* inodes charged */
	__u64	bsoft, bhard;		/* space limits, bytes; 0: none */
	__u64	isoft, ihard;		/* inode limits; 0: none */
	__u64	btime, itime;		/* when a soft limit's grace ends */
};
/*
 * The usage and limits of id (an id without an entry reads as zeros).
 * EXTREF_ERR_QUOTA_FILE when the image has no quota file of that type or
 * the file is corrupt.
 */
/* The inode of the quota file of type, 0 when the image keeps none. */
ext2_ino_t extref_quota_inum(ext2_filsys fs, int type);
errcode_t extref_quota_get(extref_fs_t fs, int type, __u32 id,
			   struct extref_quota *q);
/*
 * Set the four limits of id (space, inodes and times are the image's):
 * a grace time starts, as the kernel's setquota, when the usage is
 * already over a new soft limit, and is cleared when it is not.
 */
errcode_t extref_quota_set(extref_fs_t fs, int type, __u32 id,
			   const struct extref_quota *q);
/*
 * Recompute every id's usage from all inodes (as e2fsck does) and write
 * it: for images whose inodes were written by other means.
 */
errcode_t extref_quota_recompute(extref_fs_t fs);
typedef errcode_t (*extref_quota_func)(int type, __u32 id,
				       const struct extref_quota *q,
				       void *priv);
/* Every id in the quota file of type, in id order. */
errcode_t extref_quota_iterate(extref_fs_t fs, int type,
			       extref_quota_func func, void *priv);

/*
 * Reflink SRC (a regular file, or with EXTREF_REFLINK_RECURSIVE a
 * directory tree) to a new entry NAME in directory DIR.  The new inode
 * number is returned in *ret_ino.  cred may be NULL (current process).
 * A tree is walked before anything changes: DIR inside SRC
 * (EXTREF_ERR_INTO_ITSELF), a directory reached twice
 * (EXTREF_ERR_DIR_LOOP) or more than 1024 levels below SRC
 * (EXTREF_ERR_DIR_DEPTH) is refused with the image unchanged.
 */
errcode_t extref_reflink(extref_fs_t fs, ext2_ino_t src, ext2_ino_t dir,
			 const char *name, int flags,
			 const struct extref_cred *cred, ext2_ino_t *ret_ino);

/*
 * extref_reflink with options that may grow.  flags: EXTREF_REFLINK_*
 * (others: EXT2_ET_INVALID_ARGUMENT).  cred: as extref_reflink's.
 * label: NULL, or in copy mode the SELinux context (security.selinux)
 * every inode the call creates gets, as cp -Z gives it; checked by
 * extref_label_check before anything changes (EXTREF_ERR_BAD_LABEL); with
 * EXTREF_REFLINK_PRESERVE it is refused (EXT2_ET_INVALID_ARGUMENT: a
 * snapshot keeps its source's labels, as cp refuses -Z with
 * --preserve=context).  Preserve mode keeps every extended
 * attribute, and of the inodes it copies rather than shares (directories,
 * symbolic links, devices, FIFOs, sockets, inline files) mode, owner, the
 * four times with nanoseconds, user flags and project id; hard links
 * inside a tree stay hard links.  A source (or tree) with an attribute
 * whose value is in an inode of its own (ea_inode) is refused with
 * EXTREF_ERR_EA_INODE before anything changes.  Reserved fields must be
 * zero.
 */
struct extref_reflink_opts {
	int				flags;		/* EXTREF_REFLINK_* */
	const struct extref_cred	*cred;		/* NULL: this process */
	const char			*label;		/* NULL: none */
	void				*reserved[5];	/* zero */
};
errcode_t extref_reflink2(extref_fs_t fs, ext2_ino_t src, ext2_ino_t dir,
			  const char *name,
			  const struct extref_reflink_opts *opts,
			  ext2_ino_t *ret_ino);

/*
 * 0 when label is a security context a file may be given: printable,
 * at most 4095 bytes, and valid for the loaded SELinux policy or, on a
 * host without one, of the form user:role:type:level.  Else
 * EXTREF_ERR_BAD_LABEL (EXT2_ET_INVALID_ARGUMENT for NULL).
 */
errcode_t extref_label_check(const char *label);

/*
 * A file_contexts file (selabel_open(3) with SELABEL_CTX_FILE), for
 * labelling an image as setfiles would.  libselinux is opened at the
 * first call: without it EXTREF_ERR_SELINUX_LIB and the loader's message
 * in *why; an unreadable file is its errno.  A lookup gives the context
 * of path with mode in *ctx, or NULL when no entry matches; the context
 * is freed with extref_labels_free_ctx.
 */
typedef struct extref_labels *extref_labels_t;
errcode_t extref_labels_open(const char *file, extref_labels_t *ret,
			     const char **why);
errcode_t extref_labels_lookup(extref_labels_t l, const char *path,
			       __u16 mode, char **ctx);
void extref_labels_free_ctx(char *ctx);
void extref_labels_close(extref_labels_t l);

/*
 * Clone len bytes of SRC at soff onto DST at doff, with FICLONERANGE's
 * rules in the kernel's order (libfs/ops/range_rules.c): len 0 at SRC's
 * EOF is success, len 0 otherwise means to SRC's EOF; offsets
 * block-aligned; a clone is never shortened (a range past SRC's EOF, or
 * an unaligned len not ending at SRC's EOF, is refused); an unaligned
 * tail may not land inside DST; same-file overlapping ranges refused.
 * DST may grow.  *done gets the bytes linked.  extref_errno() gives the
 * kernel's errno for a refusal.
 */
errcode_t extref_clone_range(extref_fs_t fs, ext2_ino_t src, __u64 soff,
			     ext2_ino_t dst, __u64 doff, __u64 len,
			     __u64 *done);

/*
 * Dedupe with FIDEDUPERANGE's rules in the kernel's order: SRC's range
 * past its EOF refused first (even for len 0); len cut to 1 GiB; len 0
 * success; offsets aligned and both ranges inside EOF; an unaligned len
 * kept only when it ends at both EOFs, otherwise rounded down to whole
 * blocks.  *done gets what the kernel reports (the requested len, cut to
 * 1 GiB, even when less was deduped).  *differs is set, and nothing
 * changes, when the contents differ.
 */
errcode_t extref_dedupe_range(extref_fs_t fs, ext2_ino_t src, __u64 soff,
			      ext2_ino_t dst, __u64 doff, __u64 len,
			      __u64 *done, int *differs);

/*
 * Write buf (len bytes) at off, copy-on-write: shared blocks get new
 * blocks, holes are allocated, unwritten extents become written, the size
 * grows as needed.  ENOSPC (EXT2_ET_BLOCK_ALLOC_FAIL) leaves the file
 * unchanged.
 */
errcode_t extref_pwrite(extref_fs_t fs, ext2_ino_t ino, __u64 off,
			const void *buf, __u64 len);

/* Read len bytes at off into buf; *got is short at EOF.  Holes read 0. */
errcode_t extref_pread(extref_fs_t fs, ext2_ino_t ino, __u64 off, void *buf,
		       __u64 len, __u64 *got);

/* Set the size; blocks past it lose their mapping, a partial tail is zeroed. */
errcode_t extref_truncate(extref_fs_t fs, ext2_ino_t ino, __u64 size);

/*
 * Punch a hole (fallocate PUNCH_HOLE|KEEP_SIZE rules: len 0 is EINVAL):
 * whole blocks unmapped, partial blocks zeroed, a partial last block
 * covered from its start to EOF unmapped.
 */
errcode_t extref_punch(extref_fs_t fs, ext2_ino_t ino, __u64 off, __u64 len);

/* Give the range blocks of its own (UNSHARE_RANGE|KEEP_SIZE: len 0 EINVAL). */
errcode_t extref_unshare(extref_fs_t fs, ext2_ino_t ino, __u64 off,
			 __u64 len);

/*
 * Remove NAME from directory DIR; when the last link goes, every mapping
 * of the inode is dropped through the counts and the inode freed.
 * Directories only with EXTREF_UNLINK_DIR, and only when empty.
 */
#define EXTREF_UNLINK_DIR	0x0001
errcode_t extref_unlink(extref_fs_t fs, ext2_ino_t dir, const char *name,
			int flags);

/*
 * Create a regular file NAME in DIR from len bytes of buf (data written
 * through the same path as extref_pwrite).
 */
errcode_t extref_create_file(extref_fs_t fs, ext2_ino_t dir,
			     const char *name, __u32 mode,
			     const struct extref_cred *cred,
			     ext2_ino_t *ret_ino);

/*
 * NAME in directory DIR, as ext2fs_lookup (EXT2_ET_FILE_NOT_FOUND when
 * absent), but through the directory's htree index when it has one:
 * ext2fs_lookup reads every block of the directory.
 */
errcode_t extref_lookup(extref_fs_t fs, ext2_ino_t dir, const char *name,
			ext2_ino_t *ino);

/*
 * Resolve PATH (absolute from root, else from cwd) as the kernel's path
 * walk does: with an identity, search (execute) permission on every
 * directory looked in (EXTREF_ERR_ACCESS); symlinks inside the path
 * are followed (at most 8 deep, EXT2_ET_SYMLINK_LOOP), the last one
 * only with EXTREF_NAMEI_FOLLOW; a name under a non-directory is
 * EXTREF_ERR_NOT_DIR.  The caller names the path in its message.
 */
#define EXTREF_NAMEI_FOLLOW	0x0001
errcode_t extref_namei(extref_fs_t fs, ext2_ino_t root, ext2_ino_t cwd,
		       const char *path, int flags, ext2_ino_t *ino);

/*
 * May the identity access ino as mask says (EXTREF_MAY_*, as access(2)'s
 * R_OK, W_OK, X_OK)?  0, or EXTREF_ERR_ACCESS / EXTREF_ERR_PERM; always 0
 * without an identity.  For callers that read through libext2fs.
 */
#define EXTREF_MAY_EXEC		1
#define EXTREF_MAY_WRITE	2
#define EXTREF_MAY_READ		4
errcode_t extref_access(extref_fs_t fs, ext2_ino_t ino, int mask);

/*
 * A directory's entries, "." and ".." left out, as an array: for walks
 * that change the filesystem as they go, or want name order.
 */
struct extref_dirent {
	char		*name;
	ext2_ino_t	ino;
	int		file_type;	/* EXT2_FT_*; 0 without filetype */
};
struct extref_dirlist {
	struct extref_dirent	*v;
	size_t			n, cap;
	char			*names;		/* the names' storage */
};
#define EXTREF_DIRLIST_SORTED	0x0001	/* by name, as strcmp orders */
errcode_t extref_dir_list(extref_fs_t fs, ext2_ino_t dir, int flags,
			  struct extref_dirlist *list);
void extref_dir_list_free(struct extref_dirlist *list);

/*
 * Make a directory or a symlink NAME in DIR (libext2fs's, growing DIR
 * when it is full).  ret_ino may be NULL.
 */
errcode_t extref_mkdir(extref_fs_t fs, ext2_ino_t dir, const char *name,
		       ext2_ino_t *ret_ino);
errcode_t extref_symlink(extref_fs_t fs, ext2_ino_t dir, const char *name,
			 const char *target, ext2_ino_t *ret_ino);

/*
 * Attributes of an inode, with the kernel's rules for the identity
 * (chmod: owner or CAP_FOWNER; chown: CAP_CHOWN, or the owner giving
 * the file to one of its groups; setxattr/removexattr: per namespace;
 * immutable and append-only inodes: EXTREF_ERR_PERM).  chown keeps a
 * field given as EXTREF_ID_UNCHANGED and, as the kernel does for every
 * caller, clears setuid (setgid when group-executable) and removes
 * security.capability of a non-directory.  removexattr of an absent
 * name: EXT2_ET_EA_KEY_NOT_FOUND.
 */
#define EXTREF_ID_UNCHANGED	0xffffffffU
errcode_t extref_chmod(extref_fs_t fs, ext2_ino_t ino, __u32 mode);
errcode_t extref_chown(extref_fs_t fs, ext2_ino_t ino, __u32 uid, __u32 gid);
errcode_t extref_setxattr(extref_fs_t fs, ext2_ino_t ino, const char *name,
			  const void *value, size_t len);
errcode_t extref_removexattr(extref_fs_t fs, ext2_ino_t ino,
			     const char *name);

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

/*
 * Refuse what the toolkit cannot change safely: encrypted, verity and
 * casefolded inodes (EXTREF_ERR_INODE_UNSUPPORTED).  Every modifying
 * operation calls it.
 */
errcode_t extref_check_modifiable(extref_fs_t fs, ext2_ino_t ino);
/*
 * Where the damage lies that failed the last extref_reflink2,
 * extref_clone_range, extref_punch or extref_unlink on fs with a
 * checksum error (an extent block, a directory block or an attribute
 * block met half-way): the inode whose block failed and that block; 0
 * for what is not known.  Cleared when one of those starts.
 */
void extref_damage_where(extref_fs_t fs, ext2_ino_t *ino, blk64_t *blk);

/* One extent mapping of a file, with its reference count (0: no record). */
struct extref_mapping {
	blk64_t		lblk;
	blk64_t		pblk;
	blk64_t		len;
	int		unwritten;
	int		shared;		/* some block of it has a record */
};
typedef errcode_t (*extref_mapping_func)(const struct extref_mapping *m,
					 void *priv);
/*
 * Each extent of ino, split where the shared state changes, in file
 * order.  func returns as extref.h's callbacks do (EXTREF_ITER_STOP).
 */
errcode_t extref_iterate_mappings(extref_fs_t fs, ext2_ino_t ino,
				  extref_mapping_func func, void *priv);

/*
 * One leaf extent of a file, as its extent tree holds it, or (index set)
 * an index entry: pblk the extent block it points to, lblk the first
 * logical block below it.
 */
struct extref_extent {
	blk64_t		lblk;
	blk64_t		pblk;
	__u32		len;
	int		unwritten;
	int		index;
};
typedef errcode_t (*extref_extent_func)(const struct extref_extent *e,
					void *priv);
/* Flags for extref_iterate_extents(). */
#define EXTREF_EXTENTS_INDEX	0x0001	/* index entries too */
/*
 * Each leaf extent of the extent-mapped inode ino (inode: as read by the
 * caller), in file order, unsplit and without counts; with
 * EXTREF_EXTENTS_INDEX each index entry too, before the extents below
 * it.  func returns as extref.h's callbacks do.  EXT2_ET_INODE_NOT_EXTENT
 * for an inode without extents; a damaged node stops the walk with
 * libext2fs's error.
 */
errcode_t extref_iterate_extents(extref_fs_t fs, ext2_ino_t ino,
				 struct ext2_inode *inode, int flags,
				 extref_extent_func func, void *priv);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_OPS_H */
