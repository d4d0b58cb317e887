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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "populate_int.h"
#include "tree/extref_vec.h"

#define READ_BYTES	(256 * 1024)
/* room for extended attributes inside a 256-byte inode */
#define IN_INODE_XATTR	96
/* extents an inode holds, and an extent block */
#define IN_INODE_EXTENTS 4

struct measure {
	struct extref_source_size *s;
	unsigned int	bs;
	int		mode;
	char		*buf;
	char		*zero;
	__u64		*set;		/* hashes (0: empty slot) */
	size_t		mask, n;
	__u64		fsig;		/* file dedupe: this file's */
	struct xr_pop_table links;	/* (dev, ino) of files seen */
	char		path[PATH_MAX];	/* the entry, for its xattrs */
	extref_progress_func progress;
	void		*priv;
};

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

static errcode_t set_alloc(struct measure *m, size_t slots)
{
	errcode_t err;

#ifdef EXTREF_FAULT_INJECTION
	if (xr_fault_nomem())	/* a growth, as xr_grow's */
		return EXT2_ET_NO_MEMORY;
#endif
	err = ext2fs_get_array(slots, sizeof(*m->set), &m->set);
	if (!err) {
		memset(m->set, 0, slots * sizeof(*m->set));
		m->mask = slots - 1;
	}
	return err;
}

static void set_place(struct measure *m, __u64 h)
{
	size_t j;

	for (j = h & m->mask; m->set[j]; j = (j + 1) & m->mask)
		if (m->set[j] == h)
			return;
	m->set[j] = h;
	m->n++;
	m->s->distinct_blocks++;
}

/* Count h once; the set doubles at 3/4. */
static errcode_t set_add(struct measure *m, __u64 h)
{
	__u64 *old = m->set;
	size_t i, oslots = m->mask + 1;
	errcode_t err;

	h |= 1;				/* 0 marks an empty slot */
	if ((m->n + 1) * 4 > oslots * 3) {
		err = set_alloc(m, oslots * 2);
		if (err) {
			m->set = old;
			return err;
		}
		m->n = 0;
		for (i = 0; i < oslots; i++)
			if (old[i]) {
				m->s->distinct_blocks--;
				set_place(m, old[i]);
			}
		ext2fs_free_mem(&old);
	}
	set_place(m, h);
	return 0;
}

/* The bytes [off, off + len) of a file, block-aligned at off. */
static errcode_t blocks(struct measure *m, const char *p, __u64 off,
			size_t len, __u64 *nblocks)
{
	errcode_t err = 0;
	size_t i;

	for (i = 0; !err && i < len; i += m->bs) {
		size_t n = len - i < m->bs ? len - i : m->bs;

		if (n < m->bs)		/* the last block: zero-padded */
			memset((char *)p + i + n, 0, m->bs - n);
		if (!memcmp(p + i, m->zero, m->bs))
			continue;
		(*nblocks)++;
		m->s->data_blocks++;
		if (m->mode == EXTREF_DEDUPE_BLOCK)
			err = set_add(m, xr_block_hash(p + i, m->bs));
		else if (m->mode == EXTREF_DEDUPE_FILE)
			m->fsig = xr_pop_fdd_mix(m->fsig, (off + i) / m->bs,
						 p + i, m->bs);
	}
	return err;
}

static errcode_t file_data(struct measure *m, int fd, __u64 size)
{
	off_t off = 0, data, hole;
	__u64 nblocks = 0;
	errcode_t err = 0;

	m->fsig = 0;
	while (!err && (__u64)off < size) {
		data = lseek(fd, off, SEEK_DATA);
		if (data < 0)
			break;
		data -= data % m->bs;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (__u64)hole > size)
			hole = (off_t)size;
		if (m->mode == EXTREF_DEDUPE_NONE) {	/* no need to read */
			__u64 n = ((__u64)hole - data + m->bs - 1) / m->bs;

			nblocks += n;
			m->s->data_blocks += n;
			off = hole;
		}
		for (off = off > data ? off : data; !err && off < hole; ) {
			size_t want = hole - off < READ_BYTES ?
				(size_t)(hole - off) : READ_BYTES;
			ssize_t r = pread(fd, m->buf, want, off);

			if (r <= 0)
				return r < 0 ? errno_code() : 0;
			err = blocks(m, m->buf, (__u64)off, (size_t)r,
				     &nblocks);
			off += r;
		}
		off = (hole + m->bs - 1) / m->bs * m->bs;
	}
	/* file dedupe: a file's blocks count once per distinct content */
	if (!err && m->mode == EXTREF_DEDUPE_FILE && nblocks) {
		__u64 before = m->s->distinct_blocks;

		err = set_add(m, m->fsig ^ (size * 0x9E3779B185EBCA87ULL));
		if (m->s->distinct_blocks > before)
			m->s->distinct_blocks += nblocks - 1;
	}
	if (nblocks > IN_INODE_EXTENTS)	/* extents, at worst one a block */
		m->s->meta_blocks += (nblocks + 339) / 340;
	if (m->progress)
		m->progress("reading the source", m->s->data_blocks, 0,
			    m->priv);
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
	__u64 room = m->bs - 12, n = (bytes + room - 1) / room;

	m->s->meta_blocks += n > 1 ? n * 3 / 2 + 1 : 1;
}

static errcode_t entry(struct measure *m, int dfd, const char *name,
		       __u64 *bytes)
{
	size_t plen = strlen(m->path), nl = strlen(name);
	struct stat st;
	errcode_t err = 0;
	int sub;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno_code();
	if (plen + nl + 2 > sizeof(m->path))
		return ENAMETOOLONG;
	m->path[plen] = '/';
	memcpy(m->path + plen + 1, name, nl + 1);
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
	struct measure m = { .s = s, .bs = blocksize, .mode = mode,
			     .progress = progress, .priv = priv };
	errcode_t err;
	int fd;

	memset(s, 0, sizeof(*s));
	if (blocksize < 1024 || blocksize > READ_BYTES ||
	    (blocksize & (blocksize - 1)))
		return EXT2_ET_INVALID_ARGUMENT;
	err = ext2fs_get_mem(READ_BYTES + blocksize, &m.buf);
	if (!err)
		err = ext2fs_get_memzero(blocksize, &m.zero);
	if (!err && mode != EXTREF_DEDUPE_NONE)
		err = set_alloc(&m, 4096);
	if (!err && strlen(dir) >= sizeof(m.path))
		err = ENAMETOOLONG;
	if (!err)
		strcpy(m.path, dir);
	fd = err ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!err && fd < 0)
		err = errno_code();
	if (!err) {
		s->entries = 1;		/* the root */
		err = walk(&m, fd);
	}
	if (fd >= 0)
		close(fd);
	if (mode == EXTREF_DEDUPE_NONE)
		s->distinct_blocks = s->data_blocks;
	xr_pop_table_free(&m.links);
	ext2fs_free_mem(&m.set);
	ext2fs_free_mem(&m.buf);
	ext2fs_free_mem(&m.zero);
	return err;
}
