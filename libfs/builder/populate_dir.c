/*
 * populate_dir.c --- a host directory into the image, as mke2fs -d
 * copies it: each directory's names sorted (strcmp, so the host's order
 * does not matter), depth first; files with more than one link become
 * hard links of the first one met (by device and inode); holes of the
 * host file are skipped (SEEK_DATA) and its zero blocks stay holes;
 * every extended attribute the host lets us read (all namespaces:
 * security.*, trusted.* as root, system.posix_acl_*), the four times
 * with nanoseconds (statx's birth time for crtime).  The source's root
 * gives the image's root its times and extended attributes; the
 * root's mode and owner stay the image's.  Entries are opened relative
 * to their directory (openat), never following a symlink.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "populate_int.h"
#include "base/extref_vec.h"

struct walk {
	struct xr_pop		*p;
	struct xr_pop_table	links;		/* (dev, ino) -> image inode */
	struct xr_pop_xattrs	xa;
	char			path[PATH_MAX];	/* the entry, for xattrs */
};

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

static struct timespec ts_of(const struct statx_timestamp *t)
{
	struct timespec ts = { .tv_sec = t->tv_sec, .tv_nsec = t->tv_nsec };

	return ts;
}

void xr_pop_meta_of(const struct statx *st, struct xr_pop_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->mode = st->stx_mode;
	m->uid = st->stx_uid;
	m->gid = st->stx_gid;
	m->major = st->stx_rdev_major;
	m->minor = st->stx_rdev_minor;
	m->atime = ts_of(&st->stx_atime);
	m->mtime = ts_of(&st->stx_mtime);
	m->ctime = ts_of(&st->stx_ctime);
	m->has_crtime = !!(st->stx_mask & STATX_BTIME);
	if (m->has_crtime)
		m->crtime = ts_of(&st->stx_btime);
}

/*
 * The extended attributes of path into x, in one buffer (x->store): the
 * names as llistxattr gives them, then the values.  Offsets are kept
 * while the buffer grows, pointers made at the end.
 */
errcode_t xr_pop_read_xattrs(const char *path, struct xr_pop_xattrs *x)
{
	ssize_t len = llistxattr(path, NULL, 0), vl;
	size_t used, i;
	char *name;
	errcode_t err;

	xr_pop_xattrs_reset(x);
	ext2fs_free_mem(&x->store);
	if (len <= 0)
		return 0;		/* none, or not supported here */
	err = ext2fs_get_mem(len, &x->store);
	if (!err && (len = llistxattr(path, x->store, len)) < 0)
		err = errno_code();
	used = err ? 0 : (size_t)len;
	for (name = x->store; !err && name < x->store + len;
	     name += strlen(name) + 1) {
		vl = lgetxattr(path, name, NULL, 0);
		if (vl < 0)
			continue;	/* trusted.* as a user: not ours */
		err = xr_pop_xattrs_add(x, (char *)(name - x->store),
					(char *)used, (size_t)vl);
		used += (size_t)vl;
	}
	if (!err)
		err = ext2fs_resize_mem(len, used ? used : 1, &x->store);
	for (i = 0; !err && i < x->n; i++) {
		x->v[i].name = x->store + (size_t)x->v[i].name;
		x->v[i].value = x->store + (size_t)x->v[i].value;
		vl = lgetxattr(path, x->v[i].name, (void *)x->v[i].value,
			       x->v[i].len);
		if (vl != (ssize_t)x->v[i].len)
			err = vl < 0 ? errno_code() : EXT2_ET_SHORT_READ;
	}
	return err;
}

/* A regular file's data, holes skipped. */
static errcode_t copy_data(int fd, struct xr_pop_data *d,
			   __u64 size)
{
	char *buf = NULL;
	off_t off = 0, hole;
	errcode_t err = xr_pop_size_check(d->p, size);

	if (!err)
		err = ext2fs_get_mem(XR_POP_STAGE_BYTES, &buf);

	while (!err && (__u64)off < size) {
		off_t data = lseek(fd, off, SEEK_DATA);

		if (data < 0)
			break;		/* ENXIO: only a hole is left */
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (__u64)hole > size)
			hole = (off_t)size;
		for (off = data; !err && off < hole; ) {
			size_t want = hole - off < XR_POP_STAGE_BYTES ?
				(size_t)(hole - off) : XR_POP_STAGE_BYTES;
			ssize_t r = pread(fd, buf, want, off);

			if (r <= 0)
				err = r < 0 ? errno_code() :
					      EXT2_ET_SHORT_READ;
			else
				err = xr_pop_data_put(d, off, buf, r);
			off += r > 0 ? r : 0;
		}
	}
	/* the size the host says, whatever the holes */
	if (!err && d->size < size)
		d->size = size;
	ext2fs_free_mem(&buf);
	return err;
}

static errcode_t make_file(struct walk *w, int dfd, const char *name,
			   ext2_ino_t dir, const struct xr_pop_meta *m,
			   __u64 size, ext2_ino_t *ino)
{
	struct xr_pop_data d;
	/* O_NONBLOCK: a FIFO put in the file's place is not waited on */
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC);
	struct stat st;
	errcode_t err;

	if (fd < 0)
		return errno_code();
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return EXT2_ET_FILE_NOT_FOUND;	/* changed under us */
	}
	err = xr_pop_file_begin(w->p, m, dir, &d);
	if (!err) {
		*ino = d.ino;
		err = copy_data(fd, &d, size);
		if (!err)
			err = xr_pop_file_end(&d, dir, name);
		else
			xr_pop_data_abort(&d);
	}
	close(fd);
	return err;
}

static errcode_t walk_dir(struct walk *w, int dfd, ext2_ino_t dir,
			  size_t plen);

/* One entry of the directory dfd (the image's dir). */
static errcode_t make_entry(void *ctx, int dfd, ext2_ino_t dir,
			    const char *name, size_t plen)
{
	struct walk *w = ctx;
	struct xr_pop *p = w->p;
	struct xr_pop_meta m;
	struct statx st;
	ext2_ino_t ino = 0;
	__u64 key[2];
	char target[PATH_MAX];
	errcode_t err = 0;
	ssize_t tl;

	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS |
		  STATX_BTIME, &st) < 0)
		return errno_code();
	xr_pop_meta_of(&st, &m);
	key[0] = (__u64)st.stx_dev_major << 32 | st.stx_dev_minor;
	key[1] = st.stx_ino;
	if (!S_ISDIR(st.stx_mode) && st.stx_nlink > 1) {
		ino = xr_pop_table_get(&w->links, key, sizeof(key), NULL);
		if (ino)
			return xr_pop_hardlink(p, dir, name, ino);
	}
	switch (st.stx_mode & S_IFMT) {
	case S_IFDIR:
		err = xr_pop_mkdir(p, dir, name, &m, &ino);
		break;
	case S_IFREG:
		err = make_file(w, dfd, name, dir, &m, st.stx_size, &ino);
		break;
	case S_IFLNK:
		tl = readlinkat(dfd, name, target, sizeof(target));
		if (tl < 0 || tl >= (ssize_t)sizeof(target))
			return tl < 0 ? errno_code() : EXT2_ET_INVALID_ARGUMENT;
		target[tl] = 0;
		err = xr_pop_symlink(p, dir, name, &m, target, &ino);
		break;
	default:
		err = xr_pop_special(p, dir, name, &m, &ino);
	}
	if (!err && !S_ISDIR(st.stx_mode) && st.stx_nlink > 1)
		err = xr_pop_table_put(&w->links, key, sizeof(key), ino, 0);
	if (!err)
		err = xr_pop_read_xattrs(w->path, &w->xa);
	if (!err)
		err = xr_pop_set_xattrs(p, ino, &w->xa);
	if (!err && S_ISDIR(st.stx_mode)) {
		int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY |
				 O_NOFOLLOW | O_CLOEXEC);

		if (sub < 0)
			return errno_code();
		err = walk_dir(w, sub, ino, plen);
		close(sub);
	}
	return err;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the directory on fd (a copy of it is read), sorted. */
errcode_t xr_pop_list_dir(int fd, char ***names, size_t *n)
{
	int dup_fd = dup(fd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;
	size_t cap = 0;
	errcode_t err = 0;

	*names = NULL;
	*n = 0;
	if (!d) {
		err = errno_code();
		if (dup_fd >= 0)
			close(dup_fd);
		return err;
	}
	while (!err && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		err = xr_grow(names, &cap, *n, sizeof(char *));
		if (!err && !((*names)[*n] = strdup(de->d_name)))
			err = EXT2_ET_NO_MEMORY;
		if (!err)
			(*n)++;
	}
	if (!err && errno)
		err = errno_code();
	closedir(d);
	if (!err && *n)		/* an empty directory: no array to sort */
		qsort(*names, *n, sizeof(char *), by_name);
	return err;
}

void xr_pop_free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	ext2fs_free_mem(&names);
}

errcode_t xr_pop_each_name(const struct xr_pop_dirwalk *dw, int dfd,
			   ext2_ino_t dir, size_t plen, char ***keep,
			   size_t *kept)
{
	char **names;
	const char *why;
	size_t n, i, nl;
	errcode_t err = xr_pop_list_dir(dfd, &names, &n);

	for (i = 0; !err && i < n; i++) {
		nl = strlen(names[i]);
		if (plen + nl + 2 > dw->size) {
			err = ENAMETOOLONG;
			break;
		}
		dw->path[plen] = '/';
		memcpy(dw->path + plen + 1, names[i], nl + 1);
		why = xr_name_why(names[i], nl, 0, 1);
		err = why ? EXTREF_ERR_SOURCE_BAD_NAME :
			dw->fn(dw->ctx, dfd, dir, names[i], plen + 1 + nl);
		if (err)
			xr_pop_fail(dw->p, dw->path, why);
		dw->path[plen] = 0;
		if (!err && dw->after)
			err = dw->after(dw->ctx);
	}
	if (keep) {
		*keep = names;
		*kept = n;
	} else {
		xr_pop_free_names(names, n);
	}
	return err;
}

static errcode_t walk_dir(struct walk *w, int dfd, ext2_ino_t dir,
			  size_t plen)
{
	struct xr_pop_dirwalk dw = {
		w->p, w->path, sizeof(w->path), make_entry, w, NULL
	};

	return xr_pop_each_name(&dw, dfd, dir, plen, NULL, NULL);
}

/* The source's root: the image root's times and attributes. */
static errcode_t root(struct walk *w, int fd)
{
	struct xr_pop_meta m;
	struct statx st;
	errcode_t err;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME,
		  &st) < 0)
		return errno_code();
	xr_pop_meta_of(&st, &m);
	err = xr_pop_set_meta(w->p, EXT2_ROOT_INO, &m, 0, 0);
	if (!err)
		err = xr_pop_read_xattrs(w->path, &w->xa);
	if (!err)
		err = xr_pop_set_xattrs(w->p, EXT2_ROOT_INO, &w->xa);
	return err;
}

errcode_t xr_pop_walk_dir(struct xr_pop *p, const char *dir)
{
	struct walk *w;
	errcode_t err = ext2fs_get_memzero(sizeof(*w), &w);
	int fd;

	if (err)
		return err;
	w->p = p;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		err = errno_code();
	if (!err && strlen(dir) >= sizeof(w->path))
		err = ENAMETOOLONG;
	if (!err) {
		strcpy(w->path, dir);
		err = root(w, fd);
		if (err)
			xr_pop_fail(p, dir, NULL);
	}
	if (!err)
		err = walk_dir(w, fd, EXT2_ROOT_INO, strlen(dir));
	if (fd >= 0)
		close(fd);
	xr_pop_table_free(&w->links);
	ext2fs_free_mem(&w->xa.v);
	ext2fs_free_mem(&w->xa.store);
	ext2fs_free_mem(&w);
	return err;
}
