/*
 * source_kind.c --- one path as a build's input (extref_build_input_open):
 * a host directory, an archive or an ext2/3/4 image, told apart by what
 * is there, and measured.
 *
 * An image (a file or block device with an ext2/3/4 superblock) is read
 * through libext2fs, read-only, later (populate_image.c); here it is
 * measured by its inodes and the blocks its files map, shared ones once.
 * Without EXTREF_SOURCE_SIZED a directory is walked and an archive read
 * once, data and all, to size the image from them.  An archive from a
 * pipe cannot be read twice: without SIZED it is first copied, as it
 * comes, to an unnamed file in TMPDIR (O_TMPFILE: nothing to remove,
 * nothing another user can open); with SIZED it is read once, straight
 * into the image, and not measured (unless it is to be digested,
 * EXTREF_SOURCE_DIGEST: then spooled and counted).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <et/com_err.h>
#include "input_int.h"
#include "populate_int.h"

#define SPOOL_BUF	65536

/* With SIZED, for the message when the image is too small: content,
 * inode tables at 256 bytes, and room for the journal and group
 * metadata. */
static void estimate(struct extref_build_input *in)
{
	in->need = in->bytes + in->entries * 256 + 32 * 1024 * 1024;
}

/* The cheap count of a directory with SIZED: nftw's callback has no
 * argument of its own. */
static __thread struct extref_build_input *counting;

static int count_entry(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	(void)path; (void)ftw;
	counting->entries++;
	if (type == FTW_F && S_ISREG(st->st_mode))
		counting->bytes += ((__u64)st->st_blocks * 512 + 4095) /
				   4096 * 4096;
	else
		counting->bytes += 4096;	/* a directory block, a slow
						   symlink */
	return 0;
}

/* A file of dir with no name (or a name gone at once, with the caller's
 * signals blocked meanwhile); its descriptor, or -1 and errno. */
static int unnamed_file(const struct extref_build_input_opts *o,
			const char *dir)
{
	char path[4096];
	sigset_t old;
	int t = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), e;

	if (t >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return t;
	/* no O_TMPFILE there: a name, gone before a signal can leave it
	 * behind */
	snprintf(path, sizeof(path), "%s/extref.XXXXXX", dir);
	if (o->signals)
		sigprocmask(SIG_BLOCK, o->signals, &old);
	t = mkostemp(path, O_CLOEXEC);
	e = errno;
	if (t >= 0)
		unlink(path);
	if (o->signals)
		sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return t;
}

/* The pipe in->src.archive_fd replaced by a copy in an unnamed file of
 * TMPDIR, at its start. */
static errcode_t spool(const struct extref_build_input_opts *o,
		       struct extref_build_input *in)
{
	const char *dir = getenv("TMPDIR"), *name = o->path;
	int fd = in->src.archive_fd, t, e = 0;
	char *buf = malloc(SPOOL_BUF);
	ssize_t r, w;

	if (!buf)
		return xr_input_nomem(in);
	if (!dir || !*dir)
		dir = "/var/tmp";
	t = unnamed_file(o, dir);
	if (t < 0) {
		e = errno;
		free(buf);
		return xr_input_fail(in, e, "%s: cannot make a file in %s to "
				     "hold the archive: %s", name, dir,
				     strerror(e));
	}
	while (!e && (r = read(fd, buf, SPOOL_BUF)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		w = r < 0 ? -1 : write(t, buf, (size_t)r);
		if (w != r || r < 0)
			e = w < 0 ? errno : ENOSPC;
	}
	free(buf);
	close(fd);
	in->src.archive_fd = t;		/* closed with in */
	if (e)
		return xr_input_fail(in, e, "%s: cannot copy the archive into "
				     "%s: %s", name, dir, strerror(e));
	if (lseek(t, 0, SEEK_SET) < 0)
		return xr_input_errno(in, name);
	return 0;
}

/* Without SIZED: the archive read once (data and all) to size the image
 * from it, then rewound for the build. */
static errcode_t archive_measure(const struct extref_build_input_opts *o,
				 struct extref_build_input *in)
{
	int fd = in->src.archive_fd;
	char *why = NULL;
	errcode_t err;

	err = extref_archive_measure2(fd, o->blocksize, o->dedupe,
				      o->progress, o->priv, &in->size, &why);
	if (err)
		return xr_input_measure_fail(o, in, err, o->path, why);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return xr_input_errno(in, o->path);
	in->entries = in->size.entries;
	in->bytes = in->size.data_blocks * o->blocksize;
	return 0;
}

/* With SIZED: the archive's headers read to count it, then rewound. */
static errcode_t archive_count(const struct extref_build_input_opts *o,
			       struct extref_build_input *in)
{
	int fd = in->src.archive_fd;
	char *why = NULL;
	errcode_t err;

	err = extref_archive_measure(fd, &in->entries, &in->bytes, &why);
	if (err)
		xr_input_fail(in, err, "%s: %s", o->path, why ? why :
			      error_message(err));
	free(why);
	if (err)
		return err;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return xr_input_errno(in, o->path);
	if (in->entries)	/* else nothing to go by */
		estimate(in);
	return 0;
}

/* The archive: opened (a pipe on purpose: it waits for its writer), and
 * measured when the size is ours to find. */
static errcode_t archive_open(const struct extref_build_input_opts *o,
			      struct extref_build_input *in)
{
	int sized = o->flags & EXTREF_SOURCE_SIZED;
	int fd = o->flags & EXTREF_SOURCE_ON_FD ?
		 fcntl(o->fd, F_DUPFD_CLOEXEC, 3) :
		 open(o->path, O_RDONLY | O_CLOEXEC);
	errcode_t err;

	if (fd < 0)
		return xr_input_unreadable(in, o->path);
	in->src.archive_fd = fd;
	if (lseek(fd, 0, SEEK_CUR) < 0) {	/* a pipe */
		if (sized && !(o->flags & EXTREF_SOURCE_DIGEST))
			return 0;	/* read once, into the image */
		err = spool(o, in);
		if (err)
			return err;
	}
	return sized ? archive_count(o, in) : archive_measure(o, in);
}

/* A directory: walked to size the image from it, or only counted. */
static errcode_t dir_open(const struct extref_build_input_opts *o,
			  struct extref_build_input *in)
{
	char failed[PATH_MAX];
	errcode_t err;

	in->src.dir = o->path;
	if (o->flags & EXTREF_SOURCE_SIZED) {
		counting = in;
		if (nftw(o->path, count_entry, 64, FTW_PHYS) < 0)
			return xr_input_unreadable(in, o->path);
		estimate(in);
		return 0;
	}
	err = xr_measure_dir(o->path, o->blocksize, o->dedupe, o->progress,
			     o->priv, &in->size, failed, sizeof(failed));
	if (err == EXT2_ET_NO_MEMORY)
		return xr_input_measure_fail(o, in, err, o->path, NULL);
	if (err)
		return xr_input_fail(in, err, "cannot read %s: %s", failed,
				     error_message(err));
	in->entries = in->size.entries;
	in->bytes = in->size.data_blocks * o->blocksize;
	return 0;
}

/* An ext2/3/4 superblock's magic at 1024 + 0x38: an image, not an
 * archive. */
static int is_image(const char *path)
{
	unsigned char m[2];
	int fd = xr_open_noblock(path, O_RDONLY | O_CLOEXEC);
	int yes = fd >= 0 && pread(fd, m, 2, 1024 + 0x38) == 2 &&
		  m[0] == 0x53 && m[1] == 0xef;

	if (fd >= 0)
		close(fd);
	return yes;
}

/* An image: never the image being made (src is what stat found there);
 * measured by its inodes and the blocks its files map, shared ones
 * once. */
static errcode_t image_open(const struct extref_build_input_opts *o,
			    struct extref_build_input *in,
			    const struct stat *src)
{
	struct stat st;
	errcode_t err;

	if (o->image && stat(o->image, &st) == 0 &&
	    st.st_dev == src->st_dev && st.st_ino == src->st_ino &&
	    st.st_rdev == src->st_rdev)
		return xr_input_fail(in, EXTREF_ERR_SOURCE_IS_TARGET, "%s: the "
				     "source image is the image to make",
				     o->path);
	in->src.image = o->path;
	err = extref_image_measure(o->path, o->blocksize, &in->size);
	if (err == EXT2_ET_NO_MEMORY)
		return xr_input_measure_fail(o, in, err, o->path, NULL);
	if (err)
		return xr_input_fail(in, err, "%s: cannot read the image: %s",
				     o->path, error_message(err));
	in->entries = in->size.entries;
	in->bytes = in->size.data_blocks * o->blocksize;
	return 0;
}

errcode_t xr_input_path(const struct extref_build_input_opts *o,
			struct extref_build_input *in)
{
	int on_fd = o->flags & EXTREF_SOURCE_ON_FD;
	struct stat st;

	if ((on_fd ? fstat(o->fd, &st) : stat(o->path, &st)) < 0)
		return xr_input_unreadable(in, o->path);
	if (!on_fd && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) &&
	    is_image(o->path))
		return image_open(o, in, &st);
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) ||
	    S_ISCHR(st.st_mode))
		return archive_open(o, in);
	if (!S_ISDIR(st.st_mode) || on_fd)
		return xr_input_fail(in, EXTREF_ERR_SOURCE_TYPE, "%s: neither "
				     "a directory, an image nor an archive",
				     o->path);
	return dir_open(o, in);
}
