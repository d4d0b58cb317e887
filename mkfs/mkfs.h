/*
 * mkfs.h --- shared declarations of mkfs.extref.
 *
 * main.c parses and checks the options, target.c checks and prepares the
 * image file, mke2fs_run.c runs the stock mke2fs with a fixed
 * configuration, format.c adds the empty reference-count tree, source.c
 * populates it through the library.
 */
#ifndef MKFS_EXTREF_H
#define MKFS_EXTREF_H

#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <ext2fs/ext2fs.h>

#define MKFS_MIN_BLOCKS	64	/* our own floor, before mke2fs's */
#define MKFS_LABEL_MAX	16
#define MKFS_PASS_MAX	64	/* argv words of mke2fs options passed on */
#define MKFS_MAX_SOURCES 128	/* -d given this often at most */

extern const char *prog;

/* Everything the command line asked for, checked. */
struct mkfs_opts {
	const char	*image;
	const char	*size_arg;	/* SIZE as given, or NULL */
	uint64_t	size_bytes;	/* SIZE parsed, when size_arg */
	unsigned int	blocksize;	/* 0 until chosen */
	const char	*inodes;	/* -N, digits */
	const char	*inode_ratio;	/* -i, digits */
	const char	*inode_size;	/* -I, digits */
	const char	*label;		/* -L */
	const char	*uuid;		/* -U */
	char		*ext_opts;	/* -E, rebuilt from checked parts */
	char		*features;	/* -O, all -O options joined */
	int		quiet;
	int		force;
	int		have_epoch;
	long long	epoch;		/* SOURCE_DATE_EPOCH */
	int		convert;	/* --convert */
	int		dedup;		/* --dedup, enum extref_dedupe_mode */
	const char	*source;	/* -d DIRECTORY (or where ARCHIVE went) */
	const char	*sources[MKFS_MAX_SOURCES]; /* every -d, in order */
	size_t		nsources;
	struct mkfs_layers *layers;	/* several -d, oci:, layers: (or NULL) */
	const char	*archive;	/* -d ARCHIVE, as given */
	int		archive_fd;	/* and open (source.c) */
	const char	*image_source;	/* -d IMAGE (ext4 or extref), as given */
	uint64_t	source_need;	/* bytes the source needs, estimated */
	uint64_t	source_distinct; /* distinct non-zero blocks (-d) */
	const char	*journal_opt;	/* mke2fs -J, when sized from -d */
	int		reserved_zero;	/* mke2fs -m 0, when sized from -d */
	unsigned int	headroom;	/* --headroom, percent */
	int		all_root;	/* --all-root */
	int		root_owner;	/* -E root_owner= given */
	const char	*file_contexts;	/* --file-contexts FILE */
	int		update;		/* --update */
	const char	*at;		/* --at PATH */
	int		delete;		/* --delete */
	int		shrink;		/* --shrink (with --convert) */
	int		verify;		/* --verify (with --update) */
	/* mke2fs options passed on as given (mke2fs_opts.c) */
	const char	*pass[MKFS_PASS_MAX];
	int		npass;
	const char	*fs_type;	/* -t, instead of ext4 */
	int		host_conf;	/* -t or -T: mke2fs reads its own
					 * configuration, not ours */
	int		journal_given;	/* -J given: no -J of ours */
	int		reserved_given;	/* -m given: no -m 0 of ours */
	int		verbose;	/* -v: mke2fs's report printed */
	int		bs_chosen;	/* -b given, or a build's 4096 */
	int		size_auto;	/* --size=auto: sized from -d */
	int		whole;		/* no SIZE: the existing image whole */
	const char	*undo;		/* -z UNDO_FILE (undo_build.c) */
	int		noaction;	/* -n: mke2fs -n's report only */
	int		no_xattrs;	/* -E no_copy_xattrs */
	int		keep_times;	/* no clamping to the epoch (--shrink) */
	int		no_journal;	/* -O ^has_journal, sized so (--shrink) */
};

#define OPT_CONVERT	1000
#define OPT_DEDUP	1001
#define OPT_HEADROOM	1002
#define OPT_ALL_ROOT	1003
#define OPT_FILE_CONTEXTS 1004
#define OPT_UPDATE	1005
#define OPT_AT		1006
#define OPT_DELETE	1007
#define OPT_SHRINK	1008
#define OPT_VERIFY	1009
#define OPT_SIZE	1010

/* labels.c */
/* --file-contexts FILE: refuse a FILE libselinux cannot read, at once. */
void labels_check(const char *file);
/* Label every inode of the new image from o->file_contexts. */
int labels_apply(const struct mkfs_opts *o);

/* cleanup.c: nothing left behind on error or signal. */
void cleanup_init(void);
void cleanup_block(sigset_t *old);
void cleanup_unblock(const sigset_t *old);
void cleanup_child_sigdefault(sigset_t *set);
int cleanup_add_tree(const char *path);
int cleanup_add_conf(const char *path);
void cleanup_drop_conf(void);
int cleanup_add_image(const char *path, int created, off_t orig_size);
void cleanup_keep_image(void);
void cleanup_undo_image(void);
void cleanup_set_child(pid_t pid);
/* What a signal prints before it ends the run (NULL: nothing). */
void cleanup_set_note(const char *text);

/* progress.c: a bar per long phase, on a terminal only. */
/* on: draw at all (not -q, standard output a terminal). */
void progress_init(int on);
/* Phase phase has done units of total (0: unknown); a new name starts
 * a new bar, ending the one before. */
void progress_update(const char *phase, uint64_t done, uint64_t total);
/* extref_progress_func form of progress_update. */
void progress_cb(const char *phase, __u64 done, __u64 total, void *priv);
/* Draw the current phase full and end its line. */
void progress_end(void);
/* End the bar's line as it is (before an error message). */
void progress_break(void);

/* summary.c */
/* On standard output: file data, stored, saved, sizes in MiB; 0 or 1. */
int summary_print(const struct mkfs_opts *o);

/* punch.c: hand the blocks a run freed back to the host. */
struct punch_range {
	blk64_t		start, len;
};

struct punch_list {
	struct punch_range *v;
	size_t		n, cap;
	unsigned int	blocksize;
};

/* A copy of fs's block bitmap as it is now, to compare with later. */
errcode_t punch_snapshot(ext2_filsys fs, ext2fs_block_bitmap *before);
/*
 * The runs of blocks in use in before and free in fs now, into l (empty
 * on entry); before is freed.
 */
errcode_t punch_plan(ext2_filsys fs, ext2fs_block_bitmap before,
		     struct punch_list *l);
/*
 * Once the frees are on disk (fs closed): punch l's runs out of the
 * image file, after an fsync, those blocks only that the image read back
 * from the disk has free (none while its journal needs recovery).
 * *bytes counts what was punched.  A block
 * device, or a filesystem that cannot punch, is left alone (0).
 */
errcode_t punch_apply(const char *image, struct punch_list *l,
		      uint64_t *bytes);
void punch_free(struct punch_list *l);

/* source.c */
void source_check(struct mkfs_opts *o);
int source_finish(const struct mkfs_opts *o);

/* layers.c: -d given more than once, -d layers:LIST or -d oci:DIR[:TAG]:
 * the archives as layers, in order. */
struct mkfs_layers {
	const char	**names;	/* each layer, as messages name it */
	int		*fds;		/* open, at their start */
	size_t		n;
	int		oci;		/* whiteouts apply (always, now) */
	int		owned;		/* names malloc'd (freed at exit) */
};
/* Do o's sources make layers (then o->layers is set and checked, and
 * the image sized from them without SIZE)? */
int layers_check(struct mkfs_opts *o);
/* Append one layer (name's storage stays the caller's). */
void layers_add(struct mkfs_layers *l, const char *name, int fd);

/* oci.c: the layers of the OCI image layout DIR (tag, or its only
 * manifest when NULL), every blob's digest verified, into l. */
void oci_read(const char *dir, const char *tag, struct mkfs_layers *l);

/* regular.c: open(path, flags) that does not wait for a FIFO's writer
 * (the caller refuses what fstat of the descriptor says is not a regular
 * file). */
int open_noblock(const char *path, int flags);

/* plan_size.c: without SIZE, size the image from what s says it holds
 * (sets the size, the inode count unless -N, the journal, -m 0). */
struct extref_source_size;
void plan_size(struct mkfs_opts *o, const struct extref_source_size *s);
/* The journal a build gives content bytes, in MiB. */
unsigned int journal_mib(uint64_t content);

/* convert.c */
int parse_dedup(const char *arg);
int dedup_default(const struct mkfs_opts *o);
/* --convert, and --shrink with it or alone (shrink.c). */
int convert_image(const struct mkfs_opts *o);
int dedupe_image(const struct mkfs_opts *o);

/* Replay a journal that needs recovery (0, or 1 with the error said). */
int replay_first(const struct mkfs_opts *o);
/* replay_note.c: what replay_first did (n transactions replayed), for
 * the refusals that follow it. */
void replay_noted(unsigned int n);
/* "nothing was changed", or what the replay changed. */
const char *unchanged_note(void);
/* Refuse (exit) what is not an extref image with clean counts. */
void shrink_only_check(const struct mkfs_opts *o);

/* shrink.c: --shrink (with --convert or not): the image file replaced
 * by a fresh build of what it holds; 0, or 1 (errors said). */
int shrink_image(const struct mkfs_opts *o);

/* tool_run.c: IMAGE.convert.e2undo, --convert's undo file. */
const char *convert_undo_file(const struct mkfs_opts *o);
/* Stock e2undo puts the image back from undo (then removed): 0, or -1
 * with the undo file kept and named. */
int run_e2undo(const struct mkfs_opts *o, const char *undo);

/*
 * e2fsprogs 1.47.0's undo io manager frees the block map it makes at its
 * first write with the 32-bit bitmap call, which ignores a 64-bit map:
 * a leak of some 300 bytes a run, not ours.  Sanitized builds are told
 * to ignore the allocations of that first write, and nothing else.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define undo_leak_off()		__lsan_disable()
#define undo_leak_on()		__lsan_enable()
#else
#define undo_leak_off()		do { } while (0)
#define undo_leak_on()		do { } while (0)
#endif
/* The undo io manager's file: set_undo_io_backup_file keeps a copy of
 * the name in a static it overwrites (and leaks) at the next call. */
static inline errcode_t undo_file_set(const char *path)
{
	errcode_t err;

	undo_leak_off();
	err = set_undo_io_backup_file((char *)path);
	undo_leak_on();
	return err;
}
/* convert_undo.c: --convert as one transaction of the image file.
 * convert_undo_take_back returns 1 (the run failed) after putting the
 * image back (opened: the undo file was made). */
errcode_t convert_undo_open(const struct mkfs_opts *o, ext2_filsys *fs);
/* The first write through the undo io manager (see undo_leak_off). */
errcode_t undo_first_write(ext2_filsys fs);
void convert_undo_done(const struct mkfs_opts *o);
int convert_undo_take_back(const struct mkfs_opts *o, int opened);

/* tool_run.c: stock e2fsck -fn on the image: 0 when it finds it clean
 * (its report printed otherwise). */
int run_e2fsck_fn(const struct mkfs_opts *o);

/* update.c: --update, checked (exits on a bad call), then run. */
void update_check(const struct mkfs_opts *o);
int update_image(const struct mkfs_opts *o);

/* What target.c found out about the image and did to it. */
struct mkfs_target {
	int		exists;		/* IMAGE existed */
	int		created;	/* we created the file */
	int		is_blockdev;
	int		extended;	/* we grew a regular file */
	uint64_t	orig_size;	/* size before we touched it */
	uint64_t	fs_bytes;	/* size of the filesystem to make */
};

/* Error output: one line "mkfs.extref: ...", no return. */
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Same text, but return (for callers that clean up first). */
void error_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* size.c */
/*
 * Parse SIZE: digits with an optional K, M, G or T suffix (powers of
 * 1024; a lower-case letter and a trailing "iB"/"B" are accepted).  A
 * plain number counts units of unit bytes.  Returns 0 and the byte count,
 * or -1 for bad syntax or overflow.
 */
int parse_size(const char *arg, uint64_t unit, uint64_t *bytes);
/* Parse a decimal unsigned number that fits in max; -1 if it does not. */
int parse_uint(const char *arg, unsigned long long max,
	       unsigned long long *val);
/* Block size mke2fs's profile would pick for a filesystem of bytes. */
unsigned int default_blocksize(uint64_t bytes);

/* mke2fs_opts.c: the mke2fs options passed on (or refused, exits). */
extern const char mke2fs_pass_optstring[];
/* 1 when c is one of them (taken into o->pass), 0 otherwise. */
int mke2fs_opt_take(struct mkfs_opts *o, int c, const char *arg);
int mke2fs_opt_needs_arg(int c);

/* undo_build.c: -z, one undo file for the whole run.  begin saves the
 * existing image's data (0, or -1 with the error printed); end closes
 * it once the run went through; abort puts the image back. */
int undo_build_begin(const struct mkfs_opts *o, const struct mkfs_target *t);
int undo_build_end(const struct mkfs_opts *o);
void undo_build_abort(const struct mkfs_opts *o);

/* dry_run.c: -n, once target_probe has checked everything. */
int dry_run(const struct mkfs_opts *o, const struct mkfs_target *t);

/* options.c */
void check_ext_opts(struct mkfs_opts *o, const char *arg);
void check_features(struct mkfs_opts *o, const char *arg);

/* target.c */
/*
 * Check the image and settle the filesystem size and geometry
 * (o->blocksize is set here when -b was not given) without touching
 * anything.  Refuses an existing filesystem (unless -F), a bad size, a
 * bad geometry or an unusable path.  Exits on error.
 */
void target_probe(struct mkfs_opts *o, struct mkfs_target *t);
/* No SIZE: an existing image (not empty) is used whole, as mke2fs does
 * (sets o->whole, o->size_arg and o->size_bytes); a new one is not. */
void target_whole(struct mkfs_opts *o);
/* Create the file, or extend a smaller one.  Exits on error. */
void target_create(const struct mkfs_opts *o, struct mkfs_target *t);
/* Undo target_create after a later failure. */
void target_undo(const struct mkfs_opts *o, const struct mkfs_target *t);

/* mke2fs_run.c */
/* Run mke2fs; 0 on success, else prints one error line and returns -1. */
int run_mke2fs(const struct mkfs_opts *o, const struct mkfs_target *t);

/* spawn.c: start mke2fs (argv) with its output on out, MKE2FS_CONFIG=conf
 * (conf_fd, or -1, kept open for it) and the signal mask mask; 0 or an
 * errno value. */
/* spawn.c: an e2fsprogs tool; path first, else name on PATH, unless
 * the variable env_var names another; conf (may be NULL) is mke2fs's
 * MKE2FS_CONFIG, conf_fd (or -1) its descriptor, kept open. */
struct spawn_req {
	const char	*name;
	const char	*path;
	const char	*env_var;
	const char	*conf;
	int		conf_fd;
};
int spawn_tool(const struct mkfs_opts *o, const struct spawn_req *r,
	       const char **argv, int out, const sigset_t *mask, pid_t *pid);
int spawn_mke2fs(const struct mkfs_opts *o, const char **argv,
		 const char *conf, int conf_fd, int out, const sigset_t *mask,
		 pid_t *pid);

/* format.c */
/* Open the new filesystem, add the tree, close; 0 or -1 (error printed). */
int format_image(const struct mkfs_opts *o, const struct mkfs_target *t);

/* lean.c: the tree's block without reading every bitmap (see there). */
struct lean {
	int		active;		/* lean_begin() took over the bitmap */
	dgrp_t		group;		/* the group whose bitmap is loaded */
	char		*buf;		/* one block */
	void		*gd;		/* the descriptors as opened */
};
/* 0: fs->block_map is the partial bitmap; -1: declined (nothing done). */
int lean_begin(ext2_filsys fs, struct lean *l);
/* Write what changed; the close then writes only the superblocks. */
errcode_t lean_end(ext2_filsys fs, struct lean *l);
void lean_free(struct lean *l);

/* nosync.c: the channel of a new image flushes nothing (its cache must
 * be off: open it with "cache=off"); sync_image() is the one fsync. */
void nosync_attach(ext2_filsys fs);
errcode_t sync_image(const char *path);

#endif /* MKFS_EXTREF_H */
