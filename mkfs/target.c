/*
 * target.c --- check, create and (on failure) restore the image file.
 *
 * Nothing here writes to an existing file before every check has passed:
 * target_probe() only looks, target_create() creates or grows the file,
 * target_undo() removes what we created or shrinks what we grew.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include <blkid.h>

#include "extref_builder.h"
#include "mkfs.h"

/* Refuse an image that already holds a filesystem or partition table. */
static void check_not_in_use(const char *image)
{
	blkid_probe pr;
	const char *type = NULL;
	int rc;

	pr = blkid_new_probe_from_filename(image);
	if (!pr)
		fatal("cannot probe %s: %s", image,
		      strerror(errno ? errno : EIO));
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	rc = blkid_do_safeprobe(pr);
	if (rc == -2) {
		blkid_free_probe(pr);
		fatal("%s already contains more than one filesystem "
		      "signature (use -F to overwrite)", image);
	}
	if (rc < 0) {
		blkid_free_probe(pr);
		fatal("cannot probe %s", image);
	}
	if (rc == 0) {
		if (blkid_probe_lookup_value(pr, "TYPE", &type, NULL) == 0) {
			fatal("%s already contains a filesystem (%s) "
			      "(use -F to overwrite)", image, type);
		}
		if (blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL) == 0)
			fatal("%s already contains a partition table (%s) "
			      "(use -F to overwrite)", image, type);
	}
	blkid_free_probe(pr);
}

/* Size of an existing image; refuses anything but files and devices. */
static uint64_t existing_size(const char *image, const struct stat *st)
{
	uint64_t bytes;
	int fd;

	if (S_ISREG(st->st_mode))
		return (uint64_t)st->st_size;
	if (!S_ISBLK(st->st_mode))
		fatal("%s is not a regular file or block device", image);
	fd = open(image, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fatal("cannot open %s: %s", image, strerror(errno));
	if (ioctl(fd, BLKGETSIZE64, &bytes) < 0)
		fatal("cannot get the size of %s: %s", image, strerror(errno));
	close(fd);
	return bytes;
}

/* Look at an existing image: writable, not in use, its size. */
static void probe_existing(struct mkfs_opts *o, struct mkfs_target *t,
			   const struct stat *st)
{
	int fd;

	t->exists = 1;
	t->is_blockdev = S_ISBLK(st->st_mode);
	t->orig_size = existing_size(o->image, st);
	/* Opening for writing changes nothing but tells us we may. */
	fd = open(o->image, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		fatal("cannot open %s: %s", o->image, strerror(errno));
	close(fd);
	if (!o->force)
		check_not_in_use(o->image);
	if (!o->size_arg) {
		t->fs_bytes = t->orig_size;
	} else {
		t->fs_bytes = o->plan.size_bytes;
		if (t->is_blockdev && t->fs_bytes > t->orig_size)
			fatal("%s: SIZE %s is larger than the device "
			      "(%llu bytes)", o->image, o->size_arg,
			      (unsigned long long)t->orig_size);
	}
}

/* Settle the block size and check the geometry against our floor. */
static void check_geometry(struct mkfs_opts *o, struct mkfs_target *t)
{
	uint64_t blocks;

	if (!o->blocksize)
		o->blocksize = extref_build_mke2fs_blocksize(t->fs_bytes);
	blocks = t->fs_bytes / o->blocksize;
	t->fs_bytes = blocks * o->blocksize;
	if (blocks < MKFS_MIN_BLOCKS && o->source && o->plan.source_need)
		fatal("%s: image too small for %s (%llu blocks of %u bytes): "
		      "it needs about %llu KiB", o->image,
		      o->plan.archive ? o->plan.archive : o->source,
		      (unsigned long long)blocks, o->blocksize,
		      (unsigned long long)(o->plan.source_need / 1024));
	if (blocks < MKFS_MIN_BLOCKS)
		fatal("%s: size too small for the requested geometry "
		      "(%llu blocks of %u bytes; at least %u needed)",
		      o->image, (unsigned long long)blocks, o->blocksize,
		      MKFS_MIN_BLOCKS);
	if (blocks > (1ULL << 48) - 1)
		fatal("%s: size too large (%llu blocks of %u bytes)",
		      o->image, (unsigned long long)blocks, o->blocksize);
	if (o->inode_size) {
		unsigned long isz = strtoul(o->inode_size, NULL, 10);

		if (isz > o->blocksize)
			fatal("invalid inode size '%s' (must be a power of 2 "
			      "from 128 to the block size, %u)",
			      o->inode_size, o->blocksize);
	}
}

void target_probe(struct mkfs_opts *o, struct mkfs_target *t)
{
	struct stat st;

	if (stat(o->image, &st) == 0) {
		probe_existing(o, t, &st);
	} else if (errno == ENOENT) {
		if (!o->size_arg)
			fatal("%s does not exist and no SIZE given", o->image);
		t->fs_bytes = o->plan.size_bytes;
	} else {
		fatal("cannot open %s: %s", o->image, strerror(errno));
	}
	check_geometry(o, t);
}

void target_whole(struct mkfs_opts *o)
{
	struct stat st;
	uint64_t bytes;

	if (stat(o->image, &st) < 0)
		return;			/* target_probe says why */
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return;
	bytes = existing_size(o->image, &st);
	if (!bytes && S_ISREG(st.st_mode))
		return;			/* an empty file: as a new one */
	o->plan.whole = 1;
	o->plan.size_bytes = bytes;
	o->size_arg = "the whole image";
}

void target_create(const struct mkfs_opts *o, struct mkfs_target *t)
{
	sigset_t old;
	int fd, e;

	if (t->exists && (t->is_blockdev || t->fs_bytes <= t->orig_size))
		return;
	/* created or grown and registered for undoing, with no signal
	 * in between (cleanup.c) */
	cleanup_block(&old);
	if (t->exists) {
		fd = open(o->image, O_RDWR | O_CLOEXEC);
	} else {
		fd = open(o->image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0666);
		if (fd >= 0)
			t->created = 1;
	}
	e = errno;
	if (fd >= 0 && cleanup_add_image(o->image, t->created,
					 (off_t)t->orig_size)) {
		e = ENAMETOOLONG;
		close(fd);
		fd = -1;
		if (t->created)
			unlink(o->image);
		t->created = 0;
	}
	cleanup_unblock(&old);
	if (fd < 0)
		fatal("cannot open %s: %s", o->image, strerror(e));
	if (ftruncate(fd, (off_t)t->fs_bytes) < 0) {
		e = errno;
		close(fd);
		fatal("%s: cannot make the file %llu bytes long: %s",
		      o->image, (unsigned long long)t->fs_bytes, strerror(e));
	}
	if (t->exists)
		t->extended = 1;
	close(fd);
}

void target_undo(const struct mkfs_opts *o, const struct mkfs_target *t)
{
	(void)o; (void)t;
	cleanup_undo_image();
}
