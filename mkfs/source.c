/*
 * source.c --- mkfs.extref -d SOURCE: the library's populate path
 * (libfs/builder/populate*.c) writes the directory or the archive straight
 * into the image mke2fs laid out (every file type, owners, modes,
 * nanosecond times, extended attributes, hard links, sparse files;
 * a directory's entries in sorted order, so the host's order does not
 * matter; an archive entry by entry, nothing unpacked on the host), then
 * this optionally deduplicates it.
 *
 * Several -d, -d layers:LIST and -d oci:DIR are layers (layers.c).
 * -d IMAGE (a file or block device with an ext2/3/4 superblock): the
 * image's tree is read through libext2fs, read-only, and its shared
 * extents stay shared (populate_image.c); --dedup then runs on the
 * result.
 *
 * Without SIZE the image is sized from the source: a directory is
 * walked (nftw), an archive read once for its headers.  An archive from
 * a pipe cannot be read twice: without SIZE it is first copied, as it
 * comes, to an unnamed file in TMPDIR (O_TMPFILE: nothing to remove,
 * nothing another user can open); with SIZE it is read once, straight
 * into the image.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>
#include "extref_builder.h"
#include "mkfs.h"

static uint64_t src_bytes, src_entries;

static int count_entry(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	(void)path; (void)ftw;
	src_entries++;
	if (type == FTW_F && S_ISREG(st->st_mode))
		src_bytes += ((uint64_t)st->st_blocks * 512 + 4095) / 4096 * 4096;
	else
		src_bytes += 4096;	/* a directory block, a slow symlink */
	return 0;
}

/* A copy of the pipe fd in an unnamed file of TMPDIR; its descriptor. */
static int spool(const char *name, int fd)
{
	const char *dir = getenv("TMPDIR");
	char buf[65536];
	ssize_t r;
	int t;

	if (!dir || !*dir)
		dir = "/var/tmp";
	t = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (t < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
		/* no O_TMPFILE there: a name, gone before a signal can
		 * leave it behind */
		char path[4096];
		sigset_t old;

		snprintf(path, sizeof(path), "%s/mkfs.extref.XXXXXX", dir);
		cleanup_block(&old);
		t = mkstemp(path);
		if (t >= 0)
			unlink(path);
		cleanup_unblock(&old);
	}
	if (t < 0)
		fatal("%s: cannot make a file in %s to hold the archive: %s",
		      name, dir, strerror(errno));
	while ((r = read(fd, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || write(t, buf, (size_t)r) != r)
			fatal("%s: cannot copy the archive into %s: %s", name,
			      dir, strerror(errno));
	}
	close(fd);
	if (lseek(t, 0, SEEK_SET) < 0)
		fatal("%s: %s", name, strerror(errno));
	return t;
}

/* Without SIZE: the archive read once (data and all) to size the image
 * from it, then rewound for the build. */
static void archive_plan(struct mkfs_opts *o, int fd)
{
	struct extref_source_size s;
	char *why = NULL;
	errcode_t err;

	err = extref_archive_measure2(fd, o->blocksize, o->dedup, progress_cb,
				      NULL, &s, &why);
	progress_end();
	if (err == EXT2_ET_NO_MEMORY)	/* not the archive's fault */
		fatal("%s: %s while reading %s", o->image, error_message(err),
		      o->archive);
	if (err) {
		error_line("%s: %s", o->archive, why ? why :
			   error_message(err));
		free(why);
		exit(1);
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		fatal("%s: %s", o->archive, strerror(errno));
	src_entries = s.entries;
	src_bytes = s.data_blocks * o->blocksize;
	o->source_distinct = s.distinct_blocks;
	plan_size(o, &s);
	o->source_need = o->size_bytes;
}

/* The archive: opened, and measured when the size is ours to find. */
static void archive_check(struct mkfs_opts *o)
{
	__u64 entries, bytes;
	char *why = NULL;
	errcode_t err;
	/* "-": the archive on standard input, as for tar */
	int fd = strcmp(o->source, "-") ? open(o->source, O_RDONLY | O_CLOEXEC)
					: fcntl(0, F_DUPFD_CLOEXEC, 3);

	if (fd < 0)
		fatal("cannot read %s: %s", o->source, strerror(errno));
	o->archive = o->source;
	o->archive_fd = fd;
	if (lseek(fd, 0, SEEK_CUR) < 0) {	/* a pipe */
		if (o->size_arg)
			return;
		o->archive_fd = fd = spool(o->archive, fd);
	}
	if (!o->size_arg) {
		archive_plan(o, fd);
		return;
	}
	err = extref_archive_measure(fd, &entries, &bytes, &why);
	if (err) {
		error_line("%s: %s", o->archive, why ? why :
			   error_message(err));
		free(why);
		exit(1);
	}
	if (lseek(fd, 0, SEEK_SET) < 0)
		fatal("%s: %s", o->archive, strerror(errno));
	src_entries = entries;
	src_bytes = bytes;
}

/* Without SIZE: the directory read once to size the image from it. */
static void dir_plan(struct mkfs_opts *o)
{
	struct extref_source_size s;
	errcode_t err;

	err = extref_source_measure(o->source, o->blocksize, o->dedup,
				    progress_cb, NULL, &s);
	progress_end();
	if (err == EXT2_ET_NO_MEMORY)	/* not the source's fault */
		fatal("%s: %s while reading %s", o->image, error_message(err),
		      o->source);
	if (err)
		fatal("cannot read %s: %s", o->source, error_message(err));
	src_entries = s.entries;
	src_bytes = s.data_blocks * o->blocksize;
	o->source_distinct = s.distinct_blocks;
	plan_size(o, &s);
	o->source_need = o->size_bytes;
}

/* An ext2/3/4 superblock's magic at 1024 + 0x38: an image, not an
 * archive. */
static int is_image(const char *path)
{
	unsigned char m[2];
	int fd = open_noblock(path, O_RDONLY | O_CLOEXEC);
	int yes = fd >= 0 && pread(fd, m, 2, 1024 + 0x38) == 2 &&
		  m[0] == 0x53 && m[1] == 0xef;

	if (fd >= 0)
		close(fd);
	return yes;
}

/* -d IMAGE: never the image being made; measured (sized from, without
 * SIZE) by its inodes and the blocks its files map, shared ones once. */
static void image_check(struct mkfs_opts *o, const struct stat *src)
{
	struct extref_source_size s;
	struct stat st;
	errcode_t err;

	if (stat(o->image, &st) == 0 && st.st_dev == src->st_dev &&
	    st.st_ino == src->st_ino && st.st_rdev == src->st_rdev)
		fatal("%s: the source image is the image to make", o->source);
	o->image_source = o->source;
	err = extref_image_measure(o->source, o->blocksize, &s);
	if (err == EXT2_ET_NO_MEMORY)
		fatal("%s: %s while reading %s", o->image, error_message(err),
		      o->source);
	if (err)
		fatal("%s: cannot read the image: %s", o->source,
		      error_message(err));
	src_entries = s.entries;
	src_bytes = s.data_blocks * o->blocksize;
	if (!o->size_arg) {
		plan_size(o, &s);
		o->source_need = o->size_bytes;
	}
}

/* The source must be a directory or an archive; without SIZE, size the
 * image from it. */
void source_check(struct mkfs_opts *o)
{
	int ours = !o->size_arg;	/* the size is ours to find */
	struct stat st;
	uint64_t bytes;

	o->archive_fd = -1;
	if (layers_check(o))
		return;			/* layers.c: checked and sized */
	if ((strcmp(o->source, "-") ? stat(o->source, &st) : fstat(0, &st)) < 0)
		fatal("cannot read %s: %s", o->source, strerror(errno));
	if (!strcmp(o->source, "-") && S_ISDIR(st.st_mode))
		fatal("-d -: standard input is a directory, not an archive");
	if ((S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) &&
	    strcmp(o->source, "-") && is_image(o->source))
		image_check(o, &st);
	else if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) ||
		 S_ISCHR(st.st_mode))
		archive_check(o);
	else if (!S_ISDIR(st.st_mode))
		fatal("%s: neither a directory, an image nor an archive",
		      o->source);
	else if (!o->size_arg)
		dir_plan(o);
	else if (nftw(o->source, count_entry, 64, FTW_PHYS) < 0)
		fatal("cannot read %s: %s", o->source, strerror(errno));
	if (ours || o->image_source)
		return;			/* sized from the measure */
	if (!src_entries && o->archive)
		return;			/* a pipe, read once: not measured */
	/* With SIZE, for the message when it is too small: content, inode
	 * tables at 256 bytes, and room for the journal and group
	 * metadata. */
	bytes = src_bytes + src_entries * 256;
	o->source_need = bytes + 32 * 1024 * 1024;
}

/*
 * Is err the image running out of room?  Not EXT2_ET_EA_NO_SPACE: an
 * entry's extended attributes larger than its inode and one block fit
 * in no image, whatever its size (the error names the entry).
 */
static int out_of_room(errcode_t err)
{
	return err == EXT2_ET_BLOCK_ALLOC_FAIL ||
	       err == EXT2_ET_INODE_ALLOC_FAIL || err == ENOSPC ||
	       err == EXT2_ET_DIR_NO_SPACE_FOR_CSUM;
}

static void report(const struct mkfs_opts *o, errcode_t err,
		   const struct extref_populate *p)
{
	const char *src = o->archive ? o->archive : o->source;
	int named = o->archive || o->image_source;	/* where is its entry */
	const char *where = p->where ? p->where : "";

	if (o->layers && p->layer < o->layers->src.n_layers)
		src = o->layers->names[p->layer];

	if (err == EXT2_ET_INODE_ALLOC_FAIL && src_entries)
		error_line("%s: out of inodes for %s (%llu entries; raise -N "
			   "or lower -i)", o->image, src,
			   (unsigned long long)src_entries);
	else if (err == EXT2_ET_INODE_ALLOC_FAIL)
		error_line("%s: out of inodes for %s (raise -N or lower -i)",
			   o->image, src);
	else if (out_of_room(err) && o->source_need)
		error_line("%s: image too small for %s (%s): it needs about "
			   "%llu KiB", o->image, src, error_message(err),
			   (unsigned long long)(o->source_need / 1024));
	else if (out_of_room(err))
		error_line("%s: image too small for %s (%s)", o->image, src,
			   error_message(err));
	else if (named && err != EXT2_ET_NO_MEMORY)
		error_line("%s: %s: %s%s%s", src, *where ? where : ".",
			   error_message(err), p->why ? ": " : "",
			   p->why ? p->why : "");
	else
		error_line("%s: %s while copying %s", o->image,
			   error_message(err), *where ? where : src);
}

/* The copy's bar: the data written against what the source holds. */
static void copy_progress(const char *phase, __u64 done, __u64 total,
			  void *priv)
{
	(void)total; (void)priv;
	progress_update(phase, done, src_bytes ? src_bytes : done);
}

/* The source into the image, then the quotas it charges
 * (extref_build_populate). */
static int populate(const struct mkfs_opts *o)
{
	struct extref_build_source src = { .archive_fd = -1 };
	struct extref_build_opts b;
	struct extref_populate p;
	errcode_t err;

	memset(&p, 0, sizeof(p));
	p.progress = copy_progress;
	if (o->all_root)
		p.flags |= EXTREF_POP_ALL_ROOT;
	if (o->root_owner)	/* -E root_owner= wins over the archive's "./" */
		p.flags |= EXTREF_POP_KEEP_ROOT_OWNER;
	if (o->no_xattrs)	/* -E no_copy_xattrs */
		p.flags |= EXTREF_POP_NO_XATTRS;
	if (o->have_epoch && !o->keep_times) {
		p.flags |= EXTREF_POP_EPOCH;
		p.epoch = o->epoch;
	}
	/* dedupe is done as the data goes in: each distinct block (or
	 * file) written once, the tree bulk-loaded at the end */
	p.dedupe = o->dedup;
	if (o->dedup == EXTREF_DEDUPE_BLOCK)
		p.dedupe_hint = o->source_distinct;
	if (o->layers) {
		src = o->layers->src;
	} else if (o->image_source) {
		src.image = o->image_source;
	} else if (o->archive) {
		src.archive_fd = o->archive_fd;
	} else {
		src.dir = o->source;
	}
	build_opts_of(o, &b);
	err = extref_build_populate(o->image, &src, &b, &p);
	if (err)
		report(o, err, &p);
	else
		progress_end();
	extref_populate_free(&p);
	return err ? 1 : 0;
}

int source_finish(const struct mkfs_opts *o)
{
	if (populate(o))
		return 1;
	/* an image's sharing is kept as it is read; --dedup finds more */
	if (o->image_source && o->dedup && dedupe_new(o))
		return 1;
	/* no e2fsck -fp afterwards: a directory is indexed as its first
	 * block fills (xr_link), as the kernel does, not left linear */
	return 0;
}
