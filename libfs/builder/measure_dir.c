/*
 * measure_dir.c --- what a host directory will take in an image, read
 * before the image is made, so that it can be sized from its content:
 * the entries (inodes), the non-zero data blocks of its regular files
 * (each inode once, a partial last block padded with zeros, as the
 * populate path writes them), how many of those are distinct (block
 * dedupe: a 64-bit hash of each, counted once; only a size, so a hash
 * is enough here: the build itself confirms every match byte for byte),
 * and the blocks directories, long symlinks, extended attributes and
 * extent trees need.  Holes of the host files are skipped (SEEK_DATA).
 * Without dedupe the data is not read: its blocks are counted from the
 * host's map (SEEK_DATA, SEEK_HOLE), zero blocks included.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "populate_int.h"
#include "base/extref_vec.h"

#define READ_BYTES	(256 * 1024)
/* room for extended attributes inside a 256-byte inode */
#define IN_INODE_XATTR	96

struct measure {
	struct xr_measure core;
	struct extref_source_size *s;
	char		*buf;		/* READ_BYTES and a block */
	struct xr_pop_table links;	/* (dev, ino) of files seen */
	char		path[PATH_MAX];	/* the entry, for its xattrs */
	extref_progress_func progress;
	void		*priv;
};

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

static errcode_t file_data(struct measure *m, int fd, __u64 size)
{
	unsigned int bs = m->core.bs;
	off_t off = 0, data, hole;
	errcode_t err = 0;

	xr_measure_file_begin(&m->core);
	while (!err && (__u64)off < size) {
		data = lseek(fd, off, SEEK_DATA);
		if (data < 0)
			break;
		data -= data % bs;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (__u64)hole > size)
			hole = (off_t)size;
		if (m->core.mode == EXTREF_DEDUPE_NONE) { /* no need to read */
			__u64 n = ((__u64)hole - data + bs - 1) / bs;

			m->core.nblocks += n;
			m->s->data_blocks += n;
			off = hole;
		}
		for (off = off > data ? off : data; !err && off < hole; ) {
			size_t want = hole - off < READ_BYTES ?
				(size_t)(hole - off) : READ_BYTES;
			ssize_t r = pread(fd, m->buf, want, off);

			if (r <= 0)
				return r < 0 ? errno_code() : 0;
			err = xr_measure_blocks(&m->core, (__u64)off, m->buf,
						(size_t)r);
			off += r;
		}
		off = (hole + bs - 1) / bs * bs;
	}
	if (!err)
		err = xr_measure_file_end(&m->core, size);
	if (m->progress)
		m->progress("reading the source",
			    m->s->data_blocks * m->core.bs, 0, m->priv);
	return err;
}

static errcode_t measure_file(struct measure *m, int dfd, const char *name,
			      const struct stat *st)
{
	__u64 key[2] = { st->st_dev, st->st_ino };
	int fd;
	errcode_t err;

	if (st->st_nlink > 1) {
		if (xr_pop_table_get(&m->links, key, sizeof(key), NULL))
			return 0;
		err = xr_pop_table_put(&m->links, key, sizeof(key), 1, 0);
		if (err)
			return err;
	}
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	if (fd < 0)
		return errno_code();
	err = file_data(m, fd, (__u64)st->st_size);
	close(fd);
	return err;
}

/* Extended attributes of m->path past what the inode holds: a block. */
static void xattrs(struct measure *m)
{
	char list[4096];
	ssize_t len = llistxattr(m->path, list, sizeof(list)), i, vl;
	size_t total = 0;

	if (len < 0 && errno == ERANGE)
		total = IN_INODE_XATTR + 1;
	for (i = 0; i < len; i += strlen(list + i) + 1) {
		vl = lgetxattr(m->path, list + i, NULL, 0);
		if (vl >= 0)
			total += 16 + strlen(list + i) + vl;
	}
	if (total > IN_INODE_XATTR)
		m->s->meta_blocks++;
}

static errcode_t walk(struct measure *m, int dfd);

/* A directory's blocks: its entries with their checksum tail; a
 * hashed one (more than a block) half full after its splits. */
static void dir_blocks(struct measure *m, __u64 bytes)
{
	__u64 room = m->core.bs - 12, n = (bytes + room - 1) / room;

	n = n > 1 ? n * 3 / 2 + 1 : 1;
	m->s->meta_blocks += n;
	m->s->dir_blocks += n;
}

static errcode_t entry(struct measure *m, int dfd, const char *name,
		       __u64 *bytes)
{
	size_t plen = strlen(m->path), nl = strlen(name);
	struct stat st;
	errcode_t err = 0;
	int sub;

	if (plen + nl + 2 > sizeof(m->path))
		return ENAMETOOLONG;
	m->path[plen] = '/';
	memcpy(m->path + plen + 1, name, nl + 1);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno_code();
	m->s->entries++;
	*bytes += (8 + nl + 3) & ~3UL;
	xattrs(m);
	if (S_ISREG(st.st_mode))
		err = measure_file(m, dfd, name, &st);
	else if (S_ISLNK(st.st_mode) && st.st_size >= 60)
		m->s->meta_blocks++;
	else if (S_ISDIR(st.st_mode)) {
		sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			     O_CLOEXEC);
		if (sub < 0)
			return errno_code();
		err = walk(m, sub);
		close(sub);
	}
	if (!err)		/* else m->path names what failed */
		m->path[plen] = 0;
	return err;
}

static errcode_t walk(struct measure *m, int dfd)
{
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;
	__u64 bytes = 24;		/* "." and ".." */
	errcode_t err = 0;

	if (!d) {
		err = errno_code();
		if (dup_fd >= 0)
			close(dup_fd);
		return err;
	}
	while (!err && (errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = entry(m, dfd, de->d_name, &bytes);
	}
	if (!err && errno)
		err = errno_code();
	closedir(d);
	dir_blocks(m, bytes);
	return err;
}

errcode_t extref_source_measure(const char *dir, unsigned int blocksize,
				int mode, extref_progress_func progress,
				void *priv, struct extref_source_size *s)
{
	return xr_measure_dir(dir, blocksize, mode, progress, priv, s, NULL,
			      0);
}

errcode_t xr_measure_dir(const char *dir, unsigned int blocksize, int mode,
			 extref_progress_func progress, void *priv,
			 struct extref_source_size *s, char *failed,
			 size_t failed_len)
{
	struct measure m = { .s = s, .progress = progress, .priv = priv };
	errcode_t err;
	int fd = -1;

	err = xr_measure_begin(&m.core, s, blocksize, mode);
	if (!err)
		err = ext2fs_get_mem(READ_BYTES + blocksize, &m.buf);
	if (!err && strlen(dir) >= sizeof(m.path))
		err = ENAMETOOLONG;
	if (!err) {
		strcpy(m.path, dir);
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			err = errno_code();
	}
	if (!err) {
		s->entries = 1;		/* the root */
		err = walk(&m, fd);
	}
	if (fd >= 0)
		close(fd);
	if (err && failed)
		snprintf(failed, failed_len, "%s", *m.path ? m.path : dir);
	xr_measure_end(&m.core);
	xr_pop_table_free(&m.links);
	ext2fs_free_mem(&m.buf);
	return err;
}
