/*
 * source_digest.c --- a build input's digest (EXTREF_SOURCE_DIGEST): a
 * SHA-256 (nettle) of what the source holds, from which a build under
 * SOURCE_DATE_EPOCH derives the image's UUID (build_ident.c).  The same
 * source gives the same digest whatever the host's listing order, the
 * locale, the memory or how sparse its files are stored:
 *
 * - a directory: its entries walked in byte order of their names
 *   (strcmp, never the locale's), each as its path from the root, its
 *   type, its permission bits, and: a regular file its size and bytes
 *   (as an image's, below), a symbolic link its target, a device its
 *   major and minor.  Owners, times and extended attributes are left
 *   out (a build on another host, by another user, of the same checkout
 *   gets the same UUID);
 * - an archive (a spooled pipe too): its bytes as they are (compressed
 *   or not);
 * - layers (files, a list, an OCI layout's blobs): each layer's bytes,
 *   their digests in order;
 * - an image: its size and each 4 KiB piece that is not all zeros, with
 *   its offset (holes skipped: a sparse copy and a full one alike).
 *
 * Every item is framed (a tag, lengths), so that no two sources feed
 * the hash the same bytes.  Descriptors are read with pread: their
 * offsets stay where the build expects them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "input_int.h"

#define DIGEST_BUF	(256 * 1024)
#define CHUNK		4096	/* the pieces of a sparse file */

struct digest {
	struct sha256_ctx	c;
	char			*buf;		/* DIGEST_BUF */
	char			path[PATH_MAX];	/* the entry, for messages */
	size_t			root;		/* the source's own part of it */
	struct extref_build_input *in;
};

static void put(struct digest *d, const void *p, size_t n)
{
	sha256_update(&d->c, n, p);
}

static void put_u64(struct digest *d, __u64 v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	put(d, b, sizeof(b));
}

/* A string, its length first. */
static void put_str(struct digest *d, const char *s, size_t n)
{
	put_u64(d, n);
	put(d, s, n);
}

static errcode_t read_fail(struct digest *d, const char *name)
{
	if (!errno)
		errno = EIO;
	return xr_input_unreadable(d->in, name);
}

/* fd's bytes from offset 0 to its end, and their count. */
static errcode_t put_stream(struct digest *d, int fd, const char *name)
{
	__u64 total = 0;
	ssize_t r;

	while ((r = pread(fd, d->buf, DIGEST_BUF, (off_t)total)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return read_fail(d, name);
		put(d, d->buf, (size_t)r);
		total += (__u64)r;
	}
	put_u64(d, total);
	return 0;
}

static int all_zero(const char *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* The non-zero CHUNK-byte pieces of fd from start to end (start a
 * multiple of CHUNK), each with its offset. */
static errcode_t put_chunks(struct digest *d, int fd, const char *name,
			    __u64 start, __u64 end)
{
	__u64 off = start;

	while (off < end) {
		size_t want = end - off < DIGEST_BUF ? (size_t)(end - off) :
			      DIGEST_BUF;
		ssize_t r = pread(fd, d->buf, want, (off_t)off);
		size_t n;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {		/* an error, or a file cut short */
			if (!r)
				errno = EIO;
			return read_fail(d, name);
		}
		n = (size_t)r;
		if (off + n < end)	/* whole pieces only, but the last */
			n -= n % CHUNK;
		for (size_t i = 0; i < n; i += CHUNK) {
			size_t len = n - i < CHUNK ? n - i : CHUNK;

			if (all_zero(d->buf + i, len))
				continue;
			put_u64(d, off + i);
			put_str(d, d->buf + i, len);
		}
		off += n;
	}
	return 0;
}

/*
 * A file or a device as its size and its non-zero CHUNK-byte pieces
 * with their offsets: holes skipped (SEEK_DATA), and the same digest
 * however sparse the copy is.  Each piece is read whole, once.
 */
static errcode_t put_sparse(struct digest *d, int fd, const char *name)
{
	__u64 size, off = 0, start, end;
	off_t data, hole, sz;
	struct stat st;
	errcode_t err = 0;

	if (fstat(fd, &st) < 0)
		return read_fail(d, name);
	sz = S_ISREG(st.st_mode) ? st.st_size : lseek(fd, 0, SEEK_END);
	if (sz < 0)
		return read_fail(d, name);
	size = (__u64)sz;
	put_u64(d, size);
	while (!err && off < size) {
		data = lseek(fd, (off_t)off, SEEK_DATA);
		if (data < 0 && errno == ENXIO)
			break;			/* a hole to the end */
		if (data < 0) {			/* no SEEK_DATA: all data */
			data = (off_t)off;
			hole = (off_t)size;
		} else {
			hole = lseek(fd, data, SEEK_HOLE);
			if (hole < 0 || (__u64)hole > size)
				hole = (off_t)size;
		}
		start = (__u64)data - (__u64)data % CHUNK;
		if (start < off)
			start = off;
		end = ((__u64)hole + CHUNK - 1) / CHUNK * CHUNK;
		if (end > size)
			end = size;
		if (end <= start)
			break;
		err = put_chunks(d, fd, name, start, end);
		off = end;
	}
	return err;
}

/* An image: its size and its non-zero pieces. */
static errcode_t put_image(struct digest *d, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	errcode_t err;

	if (fd < 0)
		return read_fail(d, path);
	put_str(d, "image", 5);
	err = put_sparse(d, fd, path);
	close(fd);
	return err;
}

/* Names in byte order: the digest must not follow the locale. */
static int by_bytes(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the directory open on dfd (kept open) but . and ..,
 * sorted; *names malloc'd (each too). */
static errcode_t list_dir(struct digest *d, int dfd, char ***names,
			  size_t *n)
{
	int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	size_t cap = 0;
	struct dirent *e;
	errcode_t err = 0;

	*names = NULL;
	*n = 0;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return read_fail(d, d->path);
	}
	errno = 0;
	while (!err && (e = readdir(dir))) {
		char **v = *names, *s;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			v = realloc(v, cap * sizeof(*v));
		}
		s = v ? strdup(e->d_name) : NULL;
		if (v)
			*names = v;
		if (!s) {
			err = xr_input_nomem(d->in);
			break;
		}
		v[(*n)++] = s;
		errno = 0;
	}
	if (!err && errno)
		err = read_fail(d, d->path);
	closedir(dir);
	if (!err)
		qsort(*names, *n, sizeof(**names), by_bytes);
	return err;
}

static errcode_t put_tree(struct digest *d, int dfd);

/* One entry of the directory open on dfd, d->path naming it. */
static errcode_t put_entry(struct digest *d, int dfd, const char *name)
{
	struct stat st;
	errcode_t err = 0;
	ssize_t r;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return read_fail(d, d->path);
	put_str(d, d->path + d->root, strlen(d->path + d->root));
	put_u64(d, st.st_mode);		/* type and permission bits */
	if (S_ISREG(st.st_mode)) {
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return read_fail(d, d->path);
		err = put_sparse(d, fd, d->path);
		close(fd);
	} else if (S_ISLNK(st.st_mode)) {
		r = readlinkat(dfd, name, d->buf, DIGEST_BUF);
		if (r < 0)
			return read_fail(d, d->path);
		put_str(d, d->buf, (size_t)r);
	} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		put_u64(d, major(st.st_rdev));
		put_u64(d, minor(st.st_rdev));
	} else if (S_ISDIR(st.st_mode)) {
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
			    O_NOFOLLOW);
		if (fd < 0)
			return read_fail(d, d->path);
		err = put_tree(d, fd);
	}
	return err;
}

/* The directory open on dfd (closed here), d->path naming it. */
static errcode_t put_tree(struct digest *d, int dfd)
{
	size_t len = strlen(d->path), n = 0, i;
	char **names;
	errcode_t err = list_dir(d, dfd, &names, &n);

	if (!err)
		put_u64(d, n);
	for (i = 0; !err && i < n; i++) {
		if (len + 1 + strlen(names[i]) >= sizeof(d->path)) {
			errno = ENAMETOOLONG;
			err = read_fail(d, d->path);
			break;
		}
		d->path[len] = '/';
		strcpy(d->path + len + 1, names[i]);
		err = put_entry(d, dfd, names[i]);
		if (!err)
			d->path[len] = '\0';
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	close(dfd);
	return err;
}

/* A directory: its tree from the root ("" names it). */
static errcode_t put_dir(struct digest *d, const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len = strlen(dir);
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return read_fail(d, dir);
	}
	if (len >= sizeof(d->path)) {
		close(fd);
		errno = ENAMETOOLONG;
		return read_fail(d, dir);
	}
	while (len && dir[len - 1] == '/')	/* "DIR/" names DIR */
		len--;
	memcpy(d->path, dir, len);
	d->path[len] = '\0';
	d->root = len;
	put_str(d, "dir", 3);
	put_u64(d, st.st_mode);		/* the root's permission bits */
	return put_tree(d, fd);
}

/* Layers: each one's own digest, in order. */
static errcode_t put_layers(struct digest *d)
{
	const struct extref_build_source *src = &d->in->src;
	unsigned char one[SHA256_DIGEST_SIZE];
	struct sha256_ctx outer;
	errcode_t err = 0;

	put_str(d, "layers", 6);
	put_u64(d, src->n_layers);
	outer = d->c;
	for (size_t i = 0; !err && i < src->n_layers; i++) {
		sha256_init(&d->c);
		err = put_stream(d, src->layer_fds[i], d->in->names[i]);
		sha256_digest(&d->c, sizeof(one), one);
		sha256_update(&outer, sizeof(one), one);
	}
	d->c = outer;
	return err;
}

errcode_t xr_input_digest(const struct extref_build_input_opts *o,
			  struct extref_build_input *in)
{
	const struct extref_build_source *src = &in->src;
	struct digest *d = malloc(sizeof(*d));
	errcode_t err;

	if (d)
		d->buf = malloc(DIGEST_BUF);
	if (!d || !d->buf) {
		free(d);
		return xr_input_nomem(in);
	}
	d->in = in;
	d->path[0] = '\0';
	d->root = 0;
	sha256_init(&d->c);
	put_str(d, "extref source digest 1", 22);
	if (src->n_layers) {
		err = put_layers(d);
	} else if (src->image) {
		err = put_image(d, src->image);
	} else if (src->archive_fd >= 0) {
		put_str(d, "archive", 7);
		err = put_stream(d, src->archive_fd, o->path ? o->path :
				 "the archive");
	} else {
		err = put_dir(d, src->dir);
	}
	if (!err) {
		sha256_digest(&d->c, sizeof(in->digest), in->digest);
		in->has_digest = 1;
	}
	free(d->buf);
	free(d);
	return err;
}
