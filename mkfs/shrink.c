/*
 * shrink.c --- mkfs.extref --shrink and --convert --shrink: the image
 * file replaced by a fresh build of what it holds.
 *
 * The steps, in order, each finished before the next starts:
 *   1. the refusals: a symbolic link (the image it names must be
 *      given: renaming over the link would replace the link), a block
 *      device; then, the image's write lock taken
 *      first and held to the end, in the library
 *      (extref_build_shrink_begin): a journal that needs recovery is
 *      replayed; a filesystem stock e2fsck -fn finds damaged, an extref
 *      image whose counts are wrong (--shrink alone), a filesystem with
 *      stable_inodes (the copy renumbers inodes) are refused;
 *   2. a fresh -d IMAGE build of the image (source.c, populate_image.c:
 *      every file, its sharing kept, --dedup on top) into a hidden
 *      directory beside it, ".NAME.shrink-PID", with the image's block
 *      size, inode size, UUID, label, hash seed and features, sized as a
 *      build without SIZE (extref_build_plan_size: inodes, journal); with
 *      --dedup, a second copy of that one, sized for what it shares;
 *   3. the new file checked (stock e2fsck -fn), synced, renamed over the
 *      image, the directory synced.
 * Until the rename the image is not written at all (the journal's replay
 * aside); a failure or a signal removes the hidden directory
 * (cleanup.c) and says "not shrunk; the image is as it was".  A SIGKILL
 * or a crash before the rename leaves the image as it was and the
 * hidden directory, to remove.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <e2p/e2p.h>
#include <uuid/uuid.h>

#include "extref.h"
#include "extref_builder.h"
#include "mkfs.h"

#ifdef EXTREF_FAULT_INJECTION
/*
 * Crash tests only (configure --enable-fault-injection):
 * EXTREF_FAULT_SHRINK_STEP=STEP sends the run SIGTERM right after STEP:
 * "formatted" (a copy's empty filesystem made), "first" (with --dedup,
 * the first copy made), "built" (the copy made and checked), "synced"
 * (the copy on disk) or "renamed".
 */
static void fault_after(const char *step)
{
	const char *s = getenv("EXTREF_FAULT_SHRINK_STEP");

	if (s && !strcmp(s, step))
		raise(SIGTERM);
}
#else
#define fault_after(step)	do { } while (0)
#endif

/* The features a fresh build takes from the image, set or cleared as
 * there; the rest are the build's own (mkfs.extref's configuration). */
static const char *const kept_features[] = {
	"has_journal", "ext_attr", "dir_index", "filetype", "flex_bg",
	"64bit", "sparse_super", "large_file", "huge_file", "dir_nlink",
	"extra_isize", "metadata_csum", "metadata_csum_seed", "quota",
	"project", "inline_data", "large_dir", "ea_inode", "orphan_file",
	"meta_bg",
};

static int has_feature(const __u32 words[3], const char *name)
{
	unsigned int mask;
	int compat;

	if (e2p_string2feature((char *)name, &compat, &mask) || compat > 2)
		return -1;
	return (words[compat] & mask) != 0;
}

static void features_of(const __u32 sb[3], char *buf,
			size_t len)
{
	size_t at = 0;
	int gdt = has_feature(sb, "uninit_bg") == 1;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(kept_features) /
			       sizeof(kept_features[0]); i++) {
		int on = has_feature(sb, kept_features[i]);

		if (on >= 0 && at < len)
			at += (size_t)snprintf(buf + at, len - at, "%s%s%s",
					       at ? "," : "", on ? "" : "^",
					       kept_features[i]);
	}
	if (gdt && at < len)	/* instead of metadata_csum */
		at += (size_t)snprintf(buf + at, len - at, ",uninit_bg");
	if (has_feature(sb, "meta_bg") == 1 && at < len)
		snprintf(buf + at, len - at, ",^resize_inode");
}

/* What the copy keeps of the image: n's options, from its superblock. */
struct keep {
	char	inode_size[16], uuid[40], label[MKFS_LABEL_MAX + 1];
	char	ext[64], features[1024];
};

static void keep_of(const struct extref_build_shrink *s, struct mkfs_opts *n,
		    struct keep *k)
{
	static const unsigned char zero[16];
	const struct extref_image_info *i = &s->info;

	n->blocksize = i->blocksize;
	n->bs_chosen = 1;
	snprintf(k->inode_size, sizeof(k->inode_size), "%u", i->inode_size);
	n->inode_size = k->inode_size;
	uuid_unparse(i->uuid, k->uuid);
	n->uuid = k->uuid;
	memcpy(k->label, i->label, MKFS_LABEL_MAX);
	k->label[MKFS_LABEL_MAX] = 0;
	if (k->label[0])
		n->label = k->label;
	if (memcmp(s->hash_seed, zero, sizeof(zero))) {
		char seed[40];

		uuid_unparse(s->hash_seed, seed);
		snprintf(k->ext, sizeof(k->ext), "hash_seed=%s", seed);
		check_ext_opts(n, k->ext);
	}
	features_of(s->features, k->features, sizeof(k->features));
	check_features(n, k->features);
	/* no journal: none made (plan_size's -J would add one) */
	n->journal_given = n->no_journal = !i->journal;
}

/* The hidden directory beside the image, DIR/.NAME.shrink-PID (0700),
 * removed with what it holds on any failure or signal (cleanup.c). */
static void tmp_dir(const char *image, char *buf, size_t len)
{
	char a[PATH_MAX], b[PATH_MAX];
	sigset_t old;
	int rc;

	if (strlen(image) >= sizeof(a))
		fatal("%s: name too long", image);
	strcpy(a, image);
	strcpy(b, image);
	if ((size_t)snprintf(buf, len, "%s/.%s.shrink-%ld", dirname(a),
			     basename(b), (long)getpid()) >= len)
		fatal("%s: name too long", image);
	cleanup_block(&old);
	rc = mkdir(buf, 0700);
	if (!rc && cleanup_add_tree(buf)) {
		rmdir(buf);
		errno = ENAMETOOLONG;
		rc = -1;
	}
	cleanup_unblock(&old);
	if (rc)
		fatal("%s: cannot make %s: %s; nothing was changed", image,
		      buf, strerror(errno));
}

/* Step 2: the copy, made as main.c makes a -d build (removed on any
 * failure, by target_undo or at exit). */
static int build_copy(struct mkfs_opts *n)
{
	struct mkfs_target t;

	memset(&t, 0, sizeof(t));
	source_check(n);		/* -d IMAGE: measured and sized */
	target_probe(n, &t);
	target_create(n, &t);
	if (run_mke2fs(n, &t) || format_image(n)) {
		target_undo(n, &t);
		return 1;
	}
	fault_after("formatted");
	if (source_finish(n)) {
		target_undo(n, &t);
		return 1;
	}
	return 0;
}

static int sync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/* Step 3: tmp with the image's mode and owner (as far as we may), on
 * disk, then in the image's place, then that on disk. */
static int replace(const struct mkfs_opts *o, extref_image_lock_t lock,
		   const char *tmp)
{
	char d[PATH_MAX];
	struct stat st;
	sigset_t old;
	errcode_t err;
	int rc;

	/* the copy read the image by name: still the file locked? */
	err = extref_image_lock_same(lock, o->image);
	if (err) {
		error_line("%s: %s", o->image, error_message(err));
		return 1;
	}
	if (stat(o->image, &st) || chmod(tmp, st.st_mode & 07777) ||
	    (chown(tmp, st.st_uid, st.st_gid) && errno != EPERM)) {
		error_line("%s: cannot give %s its mode and owner: %s",
			   o->image, tmp, strerror(errno));
		return 1;
	}
	if (sync_path(tmp, O_RDONLY)) {
		error_line("%s: cannot sync %s: %s", o->image, tmp,
			   strerror(errno));
		return 1;
	}
	fault_after("synced");
	cleanup_block(&old);	/* renamed and kept, with no signal between */
	rc = rename(tmp, o->image);
	if (!rc) {
		cleanup_keep_image();
		cleanup_set_note(NULL);	/* shrunk: nothing to take back */
	}
	cleanup_unblock(&old);
	if (rc) {
		error_line("%s: cannot rename %s over it: %s", o->image, tmp,
			   strerror(errno));
		return 1;
	}
	fault_after("renamed");
	strcpy(d, o->image);	/* tmp_dir checked the length */
	if (sync_path(dirname(d), O_RDONLY | O_DIRECTORY)) {
		error_line("%s: shrunk, but its directory cannot be synced: "
			   "%s", o->image, strerror(errno));
		return 2;
	}
	return 0;
}

/* Stock e2fsck -fn, before anything is written. */
static errcode_t shrink_e2fsck(const char *image, void *priv)
{
	const struct mkfs_opts *o = priv;

	(void)image;
	if (run_e2fsck_fn(o))
		fatal("%s: e2fsck -fn finds it damaged (above): --shrink runs "
		      "only on a clean filesystem; run e2fsck -fy %s first; "
		      "%s", o->image, o->image, unchanged_note());
	return 0;
}

static void shrink_note(int what, unsigned int n, void *priv)
{
	replay_said(priv, what, n);
}

/* Refuse (exit) what cannot be shrunk, with nothing changed. */
static void shrink_refused(const struct mkfs_opts *o, errcode_t err,
			   int step, const struct extref_build_shrink *s)
{
	if (step == EXTREF_STEP_REPLAY) {
		error_line("%s: %s while replaying its journal", o->image,
			   error_message(err));
		exit(1);
	}
	if (err == EXTREF_ERR_NO_FEATURE)
		fatal("%s: not an extref image: --convert --shrink converts "
		      "and shrinks an ext4 image; %s", o->image,
		      unchanged_note());
	if (step == EXTREF_STEP_WORK)
		fatal("%s: %s while checking the reference counts; %s",
		      o->image, error_message(err), unchanged_note());
	if (err == EXTREF_ERR_UNTRUSTED && s->problems)
		fatal("%s: fsck.extref -fn finds %d problem%s in the "
		      "reference counts: run fsck.extref -fy %s first; "
		      "%s", o->image, s->problems,
		      s->problems == 1 ? "" : "s", o->image, unchanged_note());
	if (s->stable_inodes)
		fatal("%s: --shrink: the filesystem has stable_inodes (inode "
		      "numbers must not change; the copy renumbers them); "
		      "%s", o->image, unchanged_note());
	fatal("%s: %s; %s", o->image, error_message(err), unchanged_note());
}

/* Step 1: the refusals, under the write lock (held on return). */
static void shrink_checks(const struct mkfs_opts *o,
			  struct extref_build_shrink *s)
{
	struct stat st;
	errcode_t err;
	int step = 0;

	if (!lstat(o->image, &st) && S_ISLNK(st.st_mode))
		fatal("%s: --shrink puts a new file in the image's place; %s "
		      "is a symbolic link (the link itself would be "
		      "replaced): give the path of the image it names; "
		      "nothing was changed", o->image, o->image);
	if (extref_image_is_blockdev(o->image))
		fatal("%s: --shrink makes a new, smaller image file and puts "
		      "it in the file's place; %s is a block device: copy it "
		      "into a file (dd if=%s of=FILE), run mkfs.extref "
		      "%s--shrink FILE, and write FILE back (or use it); "
		      "nothing was changed", o->image, o->image, o->image,
		      o->convert ? "--convert " : "");
	memset(s, 0, sizeof(*s));
	s->convert = o->convert;
	s->check = shrink_e2fsck;
	s->note = shrink_note;
	s->priv = (void *)o;
	err = extref_build_shrink_begin(o->image, s, &step);
	if (err)
		shrink_refused(o, err, step, s);
}

int shrink_image(const struct mkfs_opts *o)
{
	char dir[PATH_MAX - 8], tmp[PATH_MAX], first[PATH_MAX];
	char note[PATH_MAX + 64];
	struct extref_build_shrink s;
	struct mkfs_opts n;
	struct keep k;
	unsigned int bs;
	blk64_t before, after;
	struct stat st;
	int rc;

	shrink_checks(o, &s);	/* the write lock held from here */
	/* a signal before the rename: the hidden directory removed, and */
	snprintf(note, sizeof(note), "%s: %s: not shrunk; the image is as "
		 "it was", prog, o->image);
	cleanup_set_note(note);
	memset(&n, 0, sizeof(n));
	keep_of(&s, &n, &k);
	bs = s.info.blocksize;
	before = s.info.blocks;
	tmp_dir(o->image, dir, sizeof(dir));
	snprintf(first, sizeof(first), "%s/a", dir);
	snprintf(tmp, sizeof(tmp), "%s/b", dir);
	/* deduplicated, a copy is sized for its data before the dedupe:
	 * a second copy of it, sized for what the dedupe left */
	n.image = o->dedup != EXTREF_DEDUPE_NONE ? first : tmp;
	n.source = o->image;
	n.sources[0] = o->image;
	n.nsources = 1;
	n.quiet = 1;
	n.dedup = o->dedup;
	n.headroom = o->headroom;
	n.have_epoch = o->have_epoch;
	n.epoch = o->epoch;
	n.keep_times = 1;		/* the files' own, never clamped */
	/* nobody writes the image while it is copied: the lock is held */
	rc = build_copy(&n);
	if (!rc && o->dedup != EXTREF_DEDUPE_NONE) {
		fault_after("first");
		n.source = n.sources[0] = first;
		n.image = tmp;
		n.plan.image_source = NULL;
		n.dedup = EXTREF_DEDUPE_NONE;	/* its sharing is kept */
		n.size_arg = NULL;
		n.inodes = NULL;
		rc = build_copy(&n);
		unlink(first);
	}
	/* what replaces the image must be what a build leaves: clean */
	if (!rc && run_e2fsck_fn(&n)) {
		error_line("%s: e2fsck -fn finds the copy damaged (above)",
			   o->image);
		rc = 1;
	}
	if (!rc)
		fault_after("built");
	if (!rc)
		rc = replace(o, s.lock, tmp);
	cleanup_set_note(NULL);
	extref_image_unlock(s.lock);
	rmdir(dir);		/* empty once renamed; else at exit */
	free(n.features);
	free(n.ext_opts);
	if (rc == 1)
		error_line("%s: not shrunk; the image is as it was", o->image);
	if (rc)
		return 1;
	after = stat(o->image, &st) ? 0 : (blk64_t)st.st_size / bs;
	if (!o->quiet)
		printf("%s: shrunk from %llu to %llu blocks (%.1f MiB)\n",
		       o->image, (unsigned long long)before,
		       (unsigned long long)after,
		       (double)after * bs / 1048576.0);
	return 0;
}
