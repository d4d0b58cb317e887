/*
 * debugfs.h --- shared state and helpers of debugfs.extref.
 */
#ifndef DEBUGFS_EXTREF_H
#define DEBUGFS_EXTREF_H

#include <stdio.h>
#include <time.h>
#include <sys/types.h>
#include <ext2fs/ext2fs.h>
#include "extref.h"
#include "extref_ops.h"

#define PROG_NAME	"debugfs.extref"

/* The shell's state: one open image at most. */
struct shell {
	extref_fs_t	xfs;		/* NULL when no image is open */
	ext2_filsys	fs;
	char		*image;
	int		rw;		/* opened with -w */
	int		nocsum;		/* ext4 checksums not verified */
	int		no_replay;	/* --no-replay: read-only opens show
					 * the image as on disk */
	errcode_t	tree_err;	/* why the tree did not load, or 0 */
	ext2_ino_t	cwd;
	int		failed;		/* some command failed */
	int		sci_idx;
	struct extref_cred ident;	/* --as, "as": who acts */
	int		have_ident;	/* 0: nobody, nothing checked */
	int		batch;		/* inside begin ... commit */
	int		may_grow;	/* the command running may ask for a
					 * longer journal (not in a batch) */
	int		growable;	/* it may (a recursive reflink) */
	int		too_big;	/* it asks: refused, or its commit
					 * failed, too big for the journal */
	int		verify;		/* --verify: the full proof at open */
};
extern struct shell sh;

/* progress.c: a long command's progress line on a terminal's stderr. */
extref_progress_func shell_progress_on(void);
void shell_progress_end(void);

static inline extref_tree_t sh_tree(void)
{
	return sh.xfs ? extref_fs_tree(sh.xfs) : NULL;
}

/* ----- cmds.c: the command table and its central checks ----- */

/* What a command needs before it runs. */
#define CMD_IMAGE	0x01	/* an open image */
#define CMD_WRITE	0x02	/* an image opened with -w (implies CMD_IMAGE) */
#define CMD_TREE	0x04	/* a loaded reference-count tree */
#define CMD_EXPERT	0x08	/* a raw edit: may write with -n */

#define CMD_MAX_ARGS	32

/* A parsed command line: options removed, positional arguments kept. */
struct cmd_args {
	const char	*name;		/* argv[0] as typed */
	int		argc;		/* positional arguments, not argv[0] */
	char		**argv;		/* argv[0] is the first positional */
	char		opts[128];	/* opts['x'] non-zero when -x given */
	const char	*optarg[128];	/* -x VALUE */
};

typedef int (*cmd_impl)(struct cmd_args *a);

struct cmd_spec {
	const char	*name;		/* canonical request name */
	cmd_impl	impl;
	int		min_args;	/* positional arguments */
	int		max_args;	/* -1: no limit */
	const char	*optstring;	/* getopt-style, NULL: no options */
	const char	*longopts;	/* "raw=R,xattrs=X": --raw is -R */
	unsigned	needs;		/* CMD_* */
	const char	*usage;		/* arguments, after the name */
};

/* Every command, as commands.def lists them (cmds_gen.c). */
extern const struct cmd_spec cmd_table[];
extern const size_t cmd_table_len;

void run_cmd(const char *canon, int argc, char **argv);
/* "CMD: message" on stderr; returns 1 (the failure status). */
int cmd_fail(const struct cmd_args *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "CMD: [what: ]error message" on stderr; returns 1. */
int cmd_err(const struct cmd_args *a, errcode_t err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * As cmd_err, with the kernel's errno class before the message:
 * "CMD: what: Invalid argument (EINVAL): why" (errclass.c); errors
 * without a class (damage, I/O) print as cmd_err does.
 */
int cmd_err_class(const struct cmd_args *a, errcode_t err,
		  const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cmd_usage(const struct cmd_args *a);

/* ----- main.c ----- */
/* nocsum: open ignoring ext4 checksum errors (-n). */
int shell_open(const char *image, int rw, int nocsum, const char *who);
/* err is a libext2fs "checksum does not match" error. */
int csum_error(errcode_t err);
int shell_close(const char *who);
/* txn_cmds.c: a command inside begin ... commit failed: roll back. */
void shell_batch_failed(const char *who);
/* txn_cmds.c: after a command too big for the journal, rolled back: the
 * journal grown to hold it (said on stdout), 0; else its error. */
errcode_t shell_grow_journal(const char *who);

/* ----- identity.c ----- */
/* "UID[:GID[,GID...]]" (gid defaults to uid; caps none; our umask). */
int parse_identity(const char *spec, struct extref_cred *cred);
/* "chown,CAP_FOWNER,all,none": the kernel's names, cap_ optional. */
int parse_caps(const char *list, __u32 *caps);
/* sh.ident (or none) set on the open image. */
int shell_apply_identity(const char *who);

/* ----- path.c ----- */
/* Resolve PATH (absolute, relative to cwd, or <ino>); no final symlink follow. */
int resolve_path(const struct cmd_args *a, const char *path, ext2_ino_t *ino);
/* Split PATH into its parent directory's inode and its last name. */
int resolve_parent(const struct cmd_args *a, const char *path,
		   ext2_ino_t *dir, char **name);
/* Fail when NAME exists in DIR. */
int check_absent(const struct cmd_args *a, ext2_ino_t dir, const char *name,
		 const char *path);
int read_inode(const struct cmd_args *a, ext2_ino_t ino,
	       struct ext2_inode_large *inode);
int write_inode(const struct cmd_args *a, ext2_ino_t ino,
		struct ext2_inode_large *inode);
/* A path for ino ("/a/b"), malloc'd; "<ino>" when none is found. */
char *inode_path(ext2_ino_t ino);

/* ----- util.c ----- */
/* Decimal or 0x hex, optional K/M/G/T suffix (powers of 1024). */
int parse_u64(const char *s, __u64 *val);
/* "." or "..": the entries a walk of a directory's children skips. */
int is_dot_entry(const struct ext2_dir_entry *de);
int parse_num_arg(const struct cmd_args *a, const char *s, const char *what,
		  __u64 *val);
/* btrfs-style human size: "256.00KiB", "0.00B"; raw: plain bytes. */
void human_size(__u64 bytes, int raw, char *buf, size_t len);
void mode_string(__u16 mode, char *buf);	/* "drwxr-xr-x", 11 bytes */
const char *inode_type_name(__u16 mode);
/*
 * Names and paths from the image (or typed by the user) as stock debugfs
 * shows names: bytes below 0x20, 0x7f and above, and the backslash as \xNN.
 * esc/escn return one of four rotating buffers: up to four in a printf.
 */
void print_name(FILE *f, const char *s, size_t len);
const char *escn(const char *s, size_t len);
const char *esc(const char *s);

/* One leaf extent (or run of a block-mapped file), in blocks. */
struct fext {
	blk64_t	lblk;
	blk64_t	pblk;
	blk64_t	len;
	int	unwritten;
};
typedef int (*fext_func)(const struct fext *e, void *priv);
/* Every data extent of ino in file order; func non-zero stops. */
errcode_t walk_extents(ext2_ino_t ino, struct ext2_inode_large *inode,
		       fext_func func, void *priv);

/* Split physical [pblk, pblk+len) into runs of equal mapping count. */
typedef int (*run_func)(blk64_t pblk, blk64_t len, __u32 count, void *priv);
/* count: the record's count, 1 where no record covers the run, 0 when
 * the tree is not loaded (unknown). */
errcode_t refcount_runs(blk64_t pblk, blk64_t len, run_func func, void *priv);

/* ----- xattr.c, stat_extra.c ----- */
/* Printable ASCII as is; other bytes, '\\' and '"' as \\ooo. */
void print_escaped(const char *v, size_t len);
/* stat's project id, extra size, device numbers, xattrs, checksum. */
void stat_extra(ext2_ino_t ino, struct ext2_inode_large *inode);
/* ls -l's date column (mtime, local time). */
void ls_date(struct ext2_inode_large *inode, char *buf, size_t len);
/* One ls -p line. */
void ls_parsable(ext2_ino_t ino, const char *name, int namelen);

/* ----- hostmeta.c: what dump and rdump keep beyond the data ----- */
#define HM_OWNER	0x01	/* -p, --same-owner: owner and group */
#define HM_MODE		0x02	/* the permission bits, set-id ones cleared */
#define HM_SETID	0x04	/* --same-permissions: set-id bits kept too */
#define HM_TIMES	0x08	/* access and modification times */
#define HM_XATTRS	0x10	/* user.* extended attributes */
#define HM_ALL_XATTRS	0x20	/* --xattrs: every namespace's */
#define HM_DEVICES	0x40	/* --devices: devices, FIFOs, sockets made */

struct host_meta {
	unsigned	flags;			/* HM_* */
	unsigned long	setid_dropped;		/* what was left out */
	unsigned long	specials_skipped;
	unsigned long	xattrs_dropped;
};

void host_meta_init(struct host_meta *hm, const struct cmd_args *a, int tree);
void host_meta_report(const struct cmd_args *a, const struct host_meta *hm);
void host_warn(const struct cmd_args *a, const char *what, const char *name);
void host_times(const struct ext2_inode_large *inode, struct timespec ts[2]);
mode_t host_mode(struct host_meta *hm, const struct ext2_inode_large *inode);
/* Owner, mode, xattrs and times of inode on the host file fd, as asked. */
void set_host_meta(const struct cmd_args *a, struct host_meta *hm,
		   ext2_ino_t ino, struct ext2_inode_large *inode, int fd,
		   const char *name);

/* ----- blockwalk.c ----- */
/* What a block is to the inode mapping it. */
enum bown_kind {
	BOWN_DATA,	/* file data at a logical block */
	BOWN_MAP,	/* an extent-tree or indirect block */
	BOWN_XATTR,	/* the extended-attribute block */
};
/* One mapping of an asked-for block; non-zero stops the scan. */
typedef int (*bown_func)(ext2_ino_t ino, blk64_t blk, enum bown_kind kind,
			 blk64_t lblk, void *priv);
/* Every mapping, by every in-use inode in inode order, of the sorted,
 * unique blocks[0..n). */
errcode_t scan_block_owners(const blk64_t *blocks, size_t n, bown_func func,
			    void *priv);
/* 1 when blk is group metadata (or before the first data block), with
 * what it is ("the inode table of group 3") in what. */
int block_group_meta(blk64_t blk, char *what, size_t len);

/*
 * The commands' implementations impl_NAME() (inspect.c, fiemap.c, ...) and
 * libss's handlers do_NAME(), as commands.def lists them.
 */
#include "cmds_gen.h"

#endif /* DEBUGFS_EXTREF_H */
