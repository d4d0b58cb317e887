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

#include <time.h>
#include "extref.h"
#include "extref_extent.h"

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
#define EXTREF_CAP_MKNOD		0x0200
#define EXTREF_CAP_ALL			0x03ff

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
	/* a recursive copy's progress ("reflinking", entries copied of
	 * the source's), or NULL */
	extref_progress_func		progress;
	void				*progress_priv;
	void				*reserved[3];	/* zero */
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

/* Set the size; at most the old one, blocks past it lose their mapping and
 * a partial tail is zeroed; growing keeps blocks past the old end (ext4). */
errcode_t extref_truncate(extref_fs_t fs, ext2_ino_t ino, __u64 size);

/*
 * Punch a hole (fallocate PUNCH_HOLE|KEEP_SIZE rules: len 0 is EINVAL):
 * whole blocks unmapped, partial blocks zeroed, a partial last block
 * covered from its start to EOF unmapped.
 */
errcode_t extref_punch(extref_fs_t fs, ext2_ino_t ino, __u64 off, __u64 len);

/*
 * fallocate(2) on ext4, mode by mode, the counts kept exact (the values
 * are the kernel's FALLOC_FL_*): 0 and EXTREF_FALLOC_KEEP_SIZE give
 * every hole of the range new blocks, mapped unwritten (read as zeros;
 * mapped blocks, shared or not, stay), and grow the size to off + len
 * unless KEEP_SIZE; EXTREF_FALLOC_ZERO_RANGE makes the range read as
 * zeros: whole blocks unwritten (a block the file owns alone in place, a
 * hole or a shared block by a new block: nothing is written into a
 * shared block), partial end blocks zeroed copy-on-write;
 * EXTREF_FALLOC_PUNCH_HOLE (with KEEP_SIZE, else EXTREF_ERR_FALLOC_MODE)
 * is extref_punch, EXTREF_FALLOC_UNSHARE_RANGE extref_unshare.  Other
 * modes, and PUNCH_HOLE with ZERO_RANGE: EXTREF_ERR_FALLOC_MODE
 * (EOPNOTSUPP); UNSHARE_RANGE with another but KEEP_SIZE:
 * EXTREF_ERR_BAD_FLAGS.  len 0: EXTREF_ERR_ZERO_LEN, first.  With
 * an identity: write permission; an append-only file takes only 0 and
 * KEEP_SIZE.  ENOSPC leaves the file as it was.
 */
#define EXTREF_FALLOC_KEEP_SIZE		0x01
#define EXTREF_FALLOC_PUNCH_HOLE	0x02
#define EXTREF_FALLOC_ZERO_RANGE	0x10
#define EXTREF_FALLOC_UNSHARE_RANGE	0x40
errcode_t extref_fallocate(extref_fs_t fs, ext2_ino_t ino, int mode,
			   __u64 off, __u64 len);

/* Give the range blocks of its own (UNSHARE_RANGE|KEEP_SIZE: len 0 EINVAL). */
errcode_t extref_unshare(extref_fs_t fs, ext2_ino_t ino, __u64 off,
			 __u64 len);

/*
 * Remove NAME from directory DIR; when the last link goes, every mapping
 * of the inode is dropped through the counts and the inode freed.
 * Directories only with EXTREF_UNLINK_DIR, and only when empty.  With
 * EXTREF_UNLINK_KEEP a file (not a directory) whose last link goes is
 * not freed but kept, links 0, on ext4's orphan list (the superblock's
 * s_last_orphan, then each inode's i_dtime), in the same transaction, as
 * the kernel keeps a file still open: extref_pread, extref_pwrite and
 * the other calls on its number keep working until
 * extref_orphan_release frees it.  DIR's change and modification times
 * become now, as the kernel sets them, unless EXTREF_UNLINK_KEEP_TIMES
 * (a builder that gives directories their source's times).  Other
 * flags: EXTREF_ERR_BAD_FLAGS.
 */
#define EXTREF_UNLINK_DIR	0x0001
#define EXTREF_UNLINK_KEEP	0x0002
#define EXTREF_UNLINK_KEEP_TIMES 0x0004
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
 * Make NAME in DIR of any type but a symlink, as mknod(2) and mkdir(2):
 * the type of mode (S_IFREG, or 0, S_IFDIR with "." and "..", S_IFIFO,
 * S_IFSOCK, S_IFCHR, S_IFBLK; others EXTREF_ERR_BAD_TYPE), its
 * permission bits masked by cred->umask; owner cred's uid, group cred's
 * gid or, in a setgid directory, the directory's (a directory made there
 * setgid too), as the kernel's inode_init_owner.  cred may be NULL (this
 * process).  A device's rdev (makedev(3)) is kept as ext4 keeps it (both
 * numbers below 256 in the old 16-bit form, else the new 32-bit form:
 * a major up to 4095, a minor up to 1048575, else EXTREF_ERR_BAD_DEV);
 * with an identity a device needs EXTREF_CAP_MKNOD (EPERM).  DIR's
 * change and modification times are set.  ret_ino may be NULL.
 */
errcode_t extref_mknod(extref_fs_t fs, ext2_ino_t dir, const char *name,
		       __u32 mode, __u64 rdev,
		       const struct extref_cred *cred, ext2_ino_t *ret_ino);

/*
 * Move the name OLDNAME of OLDDIR to NEWNAME in NEWDIR, as renameat2(2)
 * on ext4, with the kernel's checks in its order.  An existing NEWNAME
 * is replaced and dropped as extref_unlink drops it (a directory only
 * by a directory, and only when empty: EXTREF_ERR_IS_DIR,
 * EXTREF_ERR_NOT_DIR, EXTREF_ERR_DIR_NOT_EMPTY); with
 * EXTREF_RENAME_NOREPLACE it is refused (EXTREF_ERR_EXISTS); with
 * EXTREF_RENAME_EXCHANGE the two names, which must both exist, swap
 * inodes.  Both flags, or others: EXTREF_ERR_BAD_FLAGS.  "." or "..":
 * EXTREF_ERR_BUSY.  A directory moved into itself or below itself:
 * EXTREF_ERR_MOVE_INTO_ITSELF; onto a name of one of its ancestors:
 * EXTREF_ERR_DIR_NOT_EMPTY.  Two names of one inode: success, nothing
 * done.  A moved directory's ".." names its new parent and the parents'
 * link counts follow; both parents' change and modification times and
 * the moved inodes' change times are set.  With an identity:
 * may_delete of each name taken away, may_create of a new one, write
 * permission on a directory whose ".." changes.  A directory that gives
 * its project id (PROJINHERIT) takes no inode of another project
 * (EXTREF_ERR_XDEV).  Errors map to errnos through extref_errno.
 */
#define EXTREF_RENAME_NOREPLACE	0x0001	/* RENAME_NOREPLACE */
#define EXTREF_RENAME_EXCHANGE	0x0002	/* RENAME_EXCHANGE */
#define EXTREF_RENAME_KEEP	0x0004	/* a replaced file kept as an orphan,
					   as EXTREF_UNLINK_KEEP */
errcode_t extref_rename(extref_fs_t fs, ext2_ino_t olddir,
			const char *oldname, ext2_ino_t newdir,
			const char *newname, int flags);

/*
 * An inode kept by EXTREF_UNLINK_KEEP or EXTREF_RENAME_KEEP released, in
 * one transaction: taken off the orphan list and freed as extref_unlink
 * frees (each mapping dropped through the counts: a shared block only
 * loses one).  An inode not on the list: EXTREF_ERR_NOT_ORPHAN; a
 * damaged list: EXTREF_ERR_ORPHAN_LIST.  extref_orphan_release_all
 * releases every orphan of the list (each its own transaction; *n, may
 * be NULL, counts them): a read-write extref_fs_open does it first, so
 * that stock e2fsck, which frees an orphan's blocks in the bitmap shared
 * or not, never sees the list of an extref image.
 */
errcode_t extref_orphan_release(extref_fs_t fs, ext2_ino_t ino);
errcode_t extref_orphan_release_all(extref_fs_t fs, unsigned *n);
/*
 * A damaged orphan list dropped (the superblock's s_last_orphan 0), in
 * one transaction, for a repair: its inodes keep no name and hold their
 * counts; stock e2fsck then clears them and fsck.extref brings the
 * counts down (too high meanwhile, never too low).  A read-write open
 * with EXTREF_OPEN_CUT_ORPHANS does it when the list it releases first
 * is damaged.
 */
errcode_t extref_orphan_cut(extref_fs_t fs);

/*
 * A hard link: NEWNAME in NEWDIR for ino, as link(2) on ext4.  A
 * directory: EXTREF_ERR_PERM; an inode with 65000 links:
 * EXTREF_ERR_MLINK.  ino's change time and NEWDIR's change and
 * modification times are set.  With an identity: may_create on NEWDIR,
 * EPERM for an immutable or append-only inode, and the rule of
 * fs.protected_hardlinks = 1 (who neither owns ino nor holds
 * EXTREF_CAP_FOWNER links only a regular file, not setuid nor
 * setgid-executable, that it may read and write).
 */
errcode_t extref_link(extref_fs_t fs, ext2_ino_t ino, ext2_ino_t newdir,
		      const char *newname);

/*
 * Set ino's access and modification times as utimensat(2): each given to
 * the nanosecond, or with tv_nsec EXTREF_UTIME_NOW (NULL too) now, or
 * EXTREF_UTIME_OMIT kept (the values of the kernel's UTIME_NOW and
 * UTIME_OMIT); the change time becomes now.  Both kept: nothing happens.
 * Other nanoseconds outside 0..999999999: EXTREF_ERR_BAD_TIME.  The
 * nanoseconds go in the inode's extra fields (inodes of 128 bytes keep
 * whole seconds); a time is clamped to what ext4 can hold (1901 to
 * 2446, or to 2038 without the extra fields).  With an identity: both
 * now needs the owner, EXTREF_CAP_FOWNER or write permission, any other
 * the owner or EXTREF_CAP_FOWNER (EPERM); an immutable inode, or for
 * explicit times an append-only one, is EPERM.
 */
#define EXTREF_UTIME_NOW	((1L << 30) - 1L)
#define EXTREF_UTIME_OMIT	((1L << 30) - 2L)
errcode_t extref_set_times(extref_fs_t fs, ext2_ino_t ino,
			   const struct timespec *atime,
			   const struct timespec *mtime);

/*
 * An inode's flags as FS_IOC_GETFLAGS / FS_IOC_SETFLAGS on ext4 (chattr,
 * lsattr: EXT2_*_FL values).  Get: the flags ext4 shows.  Set: those a
 * user may change (secrm, unrm, compr, sync, immutable, append, nodump,
 * noatime, notail, dirsync, topdir, projinherit) as given, the others
 * kept; a change of data journaling, extents, DAX or case folding, or a
 * bit ext4 does not show, is EXTREF_ERR_FLAGS (EOPNOTSUPP).  With an
 * identity: the owner or EXTREF_CAP_FOWNER, EXTREF_CAP_LINUX_IMMUTABLE
 * to change immutable or append-only, and an immutable inode takes no
 * change but losing immutable (EXTREF_ERR_PERM).  The change time
 * becomes now, a flag changed or not (as ext4).
 */
errcode_t extref_get_flags(extref_fs_t fs, ext2_ino_t ino, __u32 *flags);
errcode_t extref_set_flags(extref_fs_t fs, ext2_ino_t ino, __u32 flags);

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

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* EXTREF_OPS_H */
