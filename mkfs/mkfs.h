/*
 * mkfs.h --- shared declarations of mkfs.extref, a front end of the
 * library's builder (extref_builder.h).
 *
 * main.c parses the options into the library's struct
 * extref_build_args, which checks them (extref_build_args_set, _check);
 * what the run settles is its plan (struct mkfs_plan).  cleanup.c
 * handles the signals (the library's extref_build_guard_* undoes what a
 * failed run made), progress.c draws the bars, util.c says errors.  The
 * rest calls the library's extref_build_* (check and make the image
 * file, run mke2fs, e2fsck and e2undo, add the tree, open the source,
 * populate, deduplicate, label, convert, shrink, update, keep the undo
 * file) and prints what it did: target.c, mke2fs_run.c, tool_run.c,
 * steps.c, source.c, convert.c, shrink.c, update.c, grow.c.
 */
#ifndef MKFS_EXTREF_H
#define MKFS_EXTREF_H

#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include <ext2fs/ext2fs.h>

#include "extref_builder.h"

extern const char *prog;

/*
 * What the run settled, not what was asked: the size, what the source
 * turned out to be, what sizing from it gives mke2fs.  Written by
 * main.c (SIZE parsed), target_whole, source_check and plan_size only.
 */
struct mkfs_plan {
	__u64		size_bytes;	/* SIZE parsed, or computed */
	int		whole;		/* no SIZE: the existing image whole */
	const char	*archive;	/* -d ARCHIVE (its first layer), as given */
	const char	*image_source;	/* -d IMAGE (ext4 or extref), as given */
	uint64_t	source_need;	/* bytes the source needs, estimated */
	const unsigned char *source_digest; /* with the epoch and no -U */
	const char	*inodes;	/* mke2fs -N, when sized from -d */
	const char	*journal_opt;	/* mke2fs -J, when sized from -d */
	int		reserved_zero;	/* mke2fs -m 0, when sized from -d */
};

/* The run's plan (main.c). */
extern struct mkfs_plan plan;

/* steps.c: --file-contexts */
/* Label every inode of the new image from o->file_contexts. */
int labels_apply(const struct extref_build_args *o);

/* cleanup.c: nothing left behind on error or signal. */
void cleanup_init(void);
void cleanup_signals(sigset_t *set);
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

/* steps.c: the library's build steps (extref_build_*), their messages. */
/* o's clock and the progress bar, as the library takes them. */
void build_opts_of(const struct extref_build_args *o, struct extref_build_opts *b);
/* Add the tree to what mke2fs made; 0 or -1 (error printed). */
int format_image(const struct extref_build_args *o);
/* On standard output: file data, stored, saved, sizes in MiB; 0 or 1. */
int summary_print(const struct extref_build_args *o);
/* -d IMAGE --dedup: the new image deduplicated; 0 or 1 (error said). */
int dedupe_new(const struct extref_build_args *o);
/* Without SIZE, size the image from what s says it holds (o->plan: the
 * size, the inode count (used unless -N), the journal, -m 0). */
void plan_size(struct extref_build_args *o, const struct extref_source_size *s);

/* source.c: -d's source (a directory, an archive, an image, layers)
 * opened, checked and measured by the library (exits on a refusal);
 * without SIZE, the image sized from it. */
void source_check(struct extref_build_args *o);
/* It populates the image just formatted: 0, or 1 (error said). */
int source_finish(const struct extref_build_args *o);

/* convert.c */
/* --convert, and --shrink with it or alone (shrink.c). */
int convert_image(const struct extref_build_args *o);

/* A journal replayed first (EXTREF_NOTE_REPLAYING, _REPLAYED), said as
 * e2fsck says it. */
void replay_said(const struct extref_build_args *o, int what, unsigned int n);
/* replay_note.c: what the replay did (n transactions replayed), for
 * the refusals that follow it. */
void replay_noted(unsigned int n);
/* "nothing was changed", or what the replay changed. */
const char *unchanged_note(void);

/* shrink.c: --shrink (with --convert or not): the image file replaced
 * by a fresh build of what it holds; 0, or 1 (errors said). */
int shrink_image(const struct extref_build_args *o);

/* tool_run.c: IMAGE.convert.e2undo, --convert's undo file. */
const char *convert_undo_file(const struct extref_build_args *o);
/* Stock e2undo puts the image back from undo (then removed): 0, or -1
 * with the undo file kept and named. */
int run_e2undo(const struct extref_build_args *o, const char *undo);

/* convert_undo.c: put the image back (opened: the undo file was
 * made); returns 1 (the run failed). */
int convert_undo_take_back(const struct extref_build_args *o, int opened);

/* tool_run.c: stock e2fsck -fn on the image: 0 when it finds it clean
 * (its report printed otherwise). */
int run_e2fsck_fn(const struct extref_build_args *o);

/* update.c: --update, checked (exits on a bad call), then run. */
void update_check(const struct extref_build_args *o);
int update_image(const struct extref_build_args *o);
/* update.c: what a signal during an update prints (cleanup_set_note). */
void update_set_note(const struct extref_build_args *o);
/* grow.c: --update --grow (extref_build_update_grow), its grow said, and
 * what a signal while it grows prints. */
errcode_t update_grow(const struct extref_build_args *o, int layer_fd,
		      const struct extref_build_opts *b, struct extref_update *u,
		      struct extref_build_update_stats *st);

/* Error output: one line "mkfs.extref: ...", no return. */
void fatal(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Same text, but return (for callers that clean up first). */
void error_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* err is the image's lock held by another: say by whom, when known. */
void lock_said(const char *image, errcode_t err);

/* steps.c: -z, one undo file for the whole run.  begin saves the
 * existing image's data (0, or -1 with the error printed); end closes
 * it once the run went through; abort puts the image back. */
int undo_build_begin(const struct extref_build_args *o, const struct extref_build_target *t);
int undo_build_end(const struct extref_build_args *o);
void undo_build_abort(const struct extref_build_args *o);

/* target.c */
/*
 * Check the image and settle the filesystem size and geometry
 * (o->blocksize is set here when -b was not given) without touching
 * anything.  Refuses an existing filesystem (unless -F), a bad size, a
 * bad geometry or an unusable path.  Exits on error.
 */
void target_probe(struct extref_build_args *o, struct extref_build_target *t);
/* No SIZE: an existing image (not empty) is used whole, as mke2fs does
 * (sets o->whole, o->size_arg and o->size_bytes); a new one is not. */
void target_whole(struct extref_build_args *o);
/* Create the file, or extend a smaller one.  Exits on error. */
void target_create(const struct extref_build_args *o, struct extref_build_target *t);
/* Undo target_create after a later failure. */
void target_undo(const struct extref_build_args *o);

/* mke2fs_run.c */
/* Run mke2fs (-n: alone, as a dry run); 0 on success, else prints one
 * error line and returns -1. */
int run_mke2fs(const struct extref_build_args *o, const struct extref_build_target *t);
/* The mke2fs found at build time (MKFS_EXTREF_MKE2FS names another). */
const char *mke2fs_path(void);

#endif /* MKFS_EXTREF_H */
