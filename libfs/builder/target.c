/*
 * target.c --- the image file a build makes its filesystem in, looked
 * at before anything is written (extref_build_target_probe,
 * extref_build_target_size): a regular file or a block device, its
 * size (BLKGETSIZE64 for a device), writable, holding no filesystem nor
 * partition table that libblkid finds (unless forced), and the
 * geometry of the filesystem to make checked: the block size settled
 * (mke2fs's choice for the size when not given), whole blocks, our
 * floor of 64 blocks, 2^48 at most, an inode size no larger than a
 * block.  What is wrong is said in t->why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include <blkid.h>

#include "build_int.h"

static errcode_t why(struct extref_build_target *t, errcode_t err,
		     const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static errcode_t why(struct extref_build_target *t, errcode_t err,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why, sizeof(t->why), fmt, ap);
	va_end(ap);
	return err;
}

/* What libblkid finds there: a filesystem or a partition table. */
static errcode_t not_in_use(const char *image, struct extref_build_target *t)
{
	blkid_probe pr;
	const char *type = NULL;
	errcode_t err = 0;
	int rc, e;

	errno = 0;
	pr = blkid_new_probe_from_filename(image);
	e = errno ? errno : EIO;
	if (!pr)	/* e: the failure's errno (none: EIO) */
		return why(t, e, "cannot probe %s: %s", image, strerror(e));
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE);
	blkid_probe_enable_partitions(pr, 1);
	rc = blkid_do_safeprobe(pr);
	if (rc == -2)
		err = why(t, EXTREF_ERR_TARGET_IN_USE, "%s already contains "
			  "more than one filesystem signature (use -F to "
			  "overwrite)", image);
	else if (rc < 0)
		err = why(t, EXTREF_ERR_TARGET_PROBE, "cannot probe %s", image);
	else if (rc == 0 && !blkid_probe_lookup_value(pr, "TYPE", &type, NULL))
		err = why(t, EXTREF_ERR_TARGET_IN_USE, "%s already contains a "
			  "filesystem (%s) (use -F to overwrite)", image, type);
	else if (rc == 0 &&
		 !blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL))
		err = why(t, EXTREF_ERR_TARGET_IN_USE, "%s already contains a "
			  "partition table (%s) (use -F to overwrite)", image,
			  type);
	blkid_free_probe(pr);
	return err;
}

/* The size of a file or a device there (st: what stat found). */
static errcode_t size_of(const char *image, const struct stat *st,
			 struct extref_build_target *t)
{
	int fd, e;

	t->exists = 1;
	t->is_blockdev = S_ISBLK(st->st_mode);
	if (S_ISREG(st->st_mode)) {
		t->orig_size = (__u64)st->st_size;
		return 0;
	}
	if (!S_ISBLK(st->st_mode))
		return why(t, EXTREF_ERR_TARGET_KIND, "%s is not a regular "
			   "file or block device", image);
	fd = open(image, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return why(t, errno, "cannot open %s: %s", image,
			   strerror(errno));
	e = ioctl(fd, BLKGETSIZE64, &t->orig_size) < 0 ? errno : 0;
	close(fd);
	if (e)
		return why(t, e, "cannot get the size of %s: %s", image,
			   strerror(e));
	return 0;
}

errcode_t extref_build_target_size(const char *image,
				   struct extref_build_target *t)
{
	struct stat st;

	memset(t, 0, sizeof(*t));
	if (stat(image, &st) < 0 ||
	    (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)))
		return 0;		/* the probe says why */
	return size_of(image, &st, t);
}

/* An existing image: writable (an open for writing changes nothing),
 * not in use, its size. */
static errcode_t existing(const struct extref_build_target_opts *o,
			  struct extref_build_target *t, const struct stat *st)
{
	errcode_t err = size_of(o->image, st, t);
	int fd;

	if (err)
		return err;
	fd = open(o->image, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return why(t, errno, "cannot open %s: %s", o->image,
			   strerror(errno));
	close(fd);
	if (!o->force && (err = not_in_use(o->image, t)))
		return err;
	t->fs_bytes = o->size_arg ? o->size_bytes : t->orig_size;
	if (o->size_arg && t->is_blockdev && t->fs_bytes > t->orig_size)
		return why(t, EXTREF_ERR_TARGET_SIZE, "%s: SIZE %s is larger "
			   "than the device (%llu bytes)", o->image,
			   o->size_arg, (unsigned long long)t->orig_size);
	return 0;
}

/* The block size settled (the "floppy" and "small" types of our
 * mke2fs.conf below 512 MiB: 1 KiB), the geometry checked. */
static errcode_t geometry(const struct extref_build_target_opts *o,
			  struct extref_build_target *t)
{
	unsigned int bs = o->blocksize;
	__u64 blocks;

	if (!bs)
		bs = extref_build_mke2fs_blocksize(t->fs_bytes);
	t->blocksize = bs;
	blocks = t->fs_bytes / bs;
	t->fs_bytes = blocks * bs;
	if (blocks < XR_BUILD_MIN_BLOCKS && o->need_for && o->need)
		return why(t, EXTREF_ERR_TARGET_SIZE, "%s: image too small "
			   "for %s (%llu blocks of %u bytes): it needs about "
			   "%llu KiB", o->image, o->need_for,
			   (unsigned long long)blocks, bs,
			   (unsigned long long)(o->need / 1024));
	if (blocks < XR_BUILD_MIN_BLOCKS)
		return why(t, EXTREF_ERR_TARGET_SIZE, "%s: size too small for "
			   "the requested geometry (%llu blocks of %u bytes; "
			   "at least %u needed)", o->image,
			   (unsigned long long)blocks, bs, XR_BUILD_MIN_BLOCKS);
	if (blocks > (1ULL << 48) - 1)
		return why(t, EXTREF_ERR_TARGET_SIZE, "%s: size too large "
			   "(%llu blocks of %u bytes)", o->image,
			   (unsigned long long)blocks, bs);
	if (o->inode_size && strtoul(o->inode_size, NULL, 10) > bs)
		return why(t, EXTREF_ERR_TARGET_INODE_SIZE, "invalid inode "
			   "size '%s' (must be a power of 2 from 128 to the "
			   "block size, %u)", o->inode_size, bs);
	return 0;
}

errcode_t extref_build_target_probe(const struct extref_build_target_opts *o,
				    struct extref_build_target *t)
{
	struct stat st;
	errcode_t err = 0;

	memset(t, 0, sizeof(*t));
	if (stat(o->image, &st) == 0)
		err = existing(o, t, &st);
	else if (errno != ENOENT)
		return why(t, errno, "cannot open %s: %s", o->image,
			   strerror(errno));
	else if (!o->size_arg)
		return why(t, EXTREF_ERR_TARGET_SIZE, "%s does not exist and "
			   "no SIZE given", o->image);
	else
		t->fs_bytes = o->size_bytes;
	return err ? err : geometry(o, t);
}
