/*
 * update.c --- mkfs.extref --update IMAGE -d SOURCE [--at PATH]: the
 * directory SOURCE written into the existing extref image IMAGE at PATH
 * (extref_update_dir), sharing every block equal to one already in it;
 * with -d ARCHIVE, the archive applied as one more OCI layer at the root
 * (extref_update_layer: entries replace, whiteouts delete).
 *
 * The open replays a journal that needs recovery and verifies the tree
 * before anything changes; the update is one transaction of the journal
 * whatever its size (its new blocks written in place early); a failure
 * or a crash before its commit leaves the image as it was.  The summary says what was
 * written, what was shared, and how many blocks the image uses now.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <et/com_err.h>

#include "mkfs.h"
#include "extref_builder.h"

#define MIB	(1024.0 * 1024.0)

/* What a signal prints while the update runs.  Its commits hold the
 * signals (update_note), so that one finds the image before the update
 * or after it, never inside a commit. */
void update_set_note(const struct extref_build_args *o)
{
	char text[2 * 4096 + 128];

	snprintf(text, sizeof(text), "%s: %s: interrupted while updating, "
		 "before its commit: the image is exactly as before the "
		 "update (the journal may have grown to hold it, an image "
		 "file grown by --grow stays so, and free blocks may hold new "
		 "bytes); on an image without a journal part of the update "
		 "may be done: run fsck.extref -fy %s", prog, o->image,
		 o->image);
	cleanup_set_note(text);
}

static void set_note_committed(const struct extref_build_args *o)
{
	char text[2 * 4096 + 128];

	snprintf(text, sizeof(text), "%s: %s: interrupted after the update "
		 "was committed: the image holds the new version (if its "
		 "journal still needs recovery, fsck.extref -p %s, the next "
		 "extref writer or e2fsck -p replays it, as a kernel mount "
		 "needs first)", prog, o->image, o->image);
	cleanup_set_note(text);
}

static sigset_t held;	/* the signal mask a commit's hold replaced */

/* The library's notes (extref_update's note): the journal's growth and
 * the update's commit run with the terminating signals held. */
static void update_note(int what, unsigned int n, void *priv)
{
	sigset_t set;

	if (what == EXTREF_NOTE_WRITING) {
		cleanup_signals(&set);
		sigprocmask(SIG_BLOCK, &set, &held);
	} else if (what == EXTREF_NOTE_WRITTEN) {
		if (n)
			set_note_committed(priv);
		sigprocmask(SIG_SETMASK, &held, NULL);
	}
}

static void print_summary(const struct extref_build_args *o,
			  const struct extref_update *u, unsigned int bs,
			  uint64_t before, uint64_t after)
{
	printf("%s: updated from %s at %s: %llu entries; %llu files "
	       "unchanged, %llu reflinked\n", o->image, o->source,
	       o->at ? o->at : "/", (unsigned long long)u->entries,
	       (unsigned long long)u->files_kept,
	       (unsigned long long)u->files_linked);
	if (o->delete_extra)
		printf("  names removed      %10llu\n",
		       (unsigned long long)u->removed);
	printf("  new data written   %10.1f MiB\n",
	       u->blocks_written * (double)bs / MIB);
	printf("  shared with image  %10.1f MiB\n",
	       u->blocks_shared * (double)bs / MIB);
	/* data and metadata; a replaced file's own old blocks went */
	printf("  image grew by      %10.1f MiB\n",
	       ((double)after - (double)before) * bs / MIB);
	printf("  blocks in use      %llu before, %llu after (%+lld)\n",
	       (unsigned long long)before, (unsigned long long)after,
	       (long long)(after - before));
}

static int no_room(errcode_t err)
{
	return err == EXT2_ET_BLOCK_ALLOC_FAIL || err == ENOSPC ||
	       err == EXT2_ET_DIR_NO_SPACE_FOR_CSUM ||
	       err == EXT2_ET_INODE_ALLOC_FAIL;
}

/*
 * The image ran out of room: what the update needs (its dry run,
 * extref_build_update_need) against what the image has free (rolled
 * back: as before the update).
 */
static void report_room(const struct extref_build_args *o, errcode_t err,
			const struct extref_update *u, int layer_fd)
{
	struct extref_update_need n;
	const char *where = u->where ? u->where : o->source;
	char more[64];
	double bs;

	if (extref_build_update_need(o->image, o->source, layer_fd, u, &n)) {
		error_line("%s: %s: %s: not enough room for %s", o->image,
			   where, error_message(err), o->source);
		return;
	}
	bs = n.blocksize / MIB;
	snprintf(more, sizeof(more), n.blocks > n.free_blocks ? ": about %.1f "
		 "MiB more needed" : "", (n.blocks - n.free_blocks) * bs);
	error_line("%s: %s: %s: not enough room for %s: the update needs "
		   "about %.1f MiB (%.1f MiB free) and %llu inodes (%llu "
		   "free)%s; --grow grows the image file to fit", o->image,
		   where, error_message(err), o->source, n.blocks * bs,
		   n.free_blocks * bs, (unsigned long long)n.inodes,
		   (unsigned long long)n.free_inodes, more);
}

static void report(const struct extref_build_args *o, errcode_t err,
		   const struct extref_update *u)
{
	if (err == EXTREF_ERR_TXN_TOO_BIG && o->atomic)	/* rolled back */
		error_line("%s: %s: the update is one transaction and the "
			   "blocks it changes in place outgrow the journal, "
			   "which --atomic keeps as it is; the image is as it "
			   "was: without --atomic the journal grows to fit, or "
			   "give it a bigger journal (tune2fs -O ^has_journal "
			   "%s; tune2fs -J size=MB %s), or update a part of "
			   "the tree at a time (--at)",
			   o->image, error_message(err), o->image, o->image);
	else if (err == EXTREF_ERR_TXN_TOO_BIG)
		error_line("%s: %s: the update is one transaction and the "
			   "blocks it changes in place outgrow the journal, "
			   "which has no room to grow enough; the image is as "
			   "it was: --grow grows the image file (and so the "
			   "room), or update a part of the tree at a time "
			   "(--at)", o->image, error_message(err));
	else if (u->where)	/* the source's entry, or the image's --at */
		error_line("%s: %s: %s%s%s", o->image, u->where,
			   error_message(err), u->why ? ": " : "",
			   u->why ? u->why : "");
	else
		error_line("%s: %s", o->image, error_message(err));
}

int update_image(const struct extref_build_args *o)
{
	struct extref_build_update_stats bs;
	struct extref_build_opts b;
	struct extref_update u;
	errcode_t err;
	struct stat st;
	int layer_fd = -1;

	extref_build_update_of(o, &u);
	u.progress = o->quiet ? NULL : progress_cb;	/* its end: the
							 * library's */
	u.note = update_note;
	u.priv = (void *)o;	/* the progress's ignores it */
	if (stat(o->source, &st) == 0 && S_ISREG(st.st_mode)) {
		/* an archive: one more OCI layer */
		layer_fd = open(o->source, O_RDONLY | O_CLOEXEC);
		if (layer_fd < 0)
			fatal("cannot read %s: %s", o->source,
			      strerror(errno));
	}
	build_opts_of(o, &b);	/* --verify's too */
	update_set_note(o);	/* what a signal prints from here */
	err = o->grow ? update_grow(o, layer_fd, &b, &u, &bs) :
		extref_build_update(o->image, o->source, layer_fd, &b, &u, &bs);
	progress_end();
	cleanup_set_note(NULL);
	if (err == EXTREF_ERR_CONVERT_LEFT || err == EXTREF_ERR_GROW_LEFT)
		error_line("%s: %s; nothing was changed", o->image,
			   extref_build_left_note(o->image, err));
	else if (err && !bs.blocksize) {	/* the open (or the grow) failed */
		error_line("%s: %s", o->image, error_message(err));
		lock_said(o->image, err);
	}
	else if (err && no_room(err))
		report_room(o, err, &u, layer_fd);
	else if (err)
		report(o, err, &u);
	else if (!o->quiet)
		print_summary(o, &u, bs.blocksize, bs.used_before,
			      bs.used_after);
	if (!err && u.journal_grown && !o->quiet)
		printf("  journal grew by    %10.1f MiB to hold the update as "
		       "one transaction\n", u.journal_grown * (double)bs.blocksize
		       / MIB);
	extref_update_free(&u);
	if (layer_fd >= 0)
		close(layer_fd);
	if (err)
		return 1;
	/* the update is committed: a summary the image cannot give (damage
	 * elsewhere, in what the update did not touch) is said, not failed */
	if (!o->quiet && summary_print(o))
		error_line("%s: the update is committed; only the summary could "
			   "not be read: run fsck.extref -n %s", o->image,
			   o->image);
	return 0;
}
