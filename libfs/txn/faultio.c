/*
 * faultio.c --- a fault-injecting io_manager, for crash tests only.
 *
 * It talks to the image file with pread/pwrite and keeps no cache, so
 * what it lets through is exactly what reached the file.  The behaviour is
 * chosen by the environment variable EXTREF_FAULT, read once at open:
 *
 *   count              pass everything through; count the writes and the
 *                      flushes
 *   crash=N            the first N writes reach the file; every later write
 *                      is dropped (and reported as a success): the process
 *                      died after N writes
 *   powercut=N,seed=S  writes are held in memory until a flush applies them
 *                      in order (then fsync); reads see the held writes.  At
 *                      the N-th write (counted as by "count", held too) the
 *                      power goes: each held write reaches the file with
 *                      probability 1/2 (a generator seeded with S), in
 *                      order; every later write is dropped and flushes do
 *                      nothing.  A close without a power cut applies what
 *                      is held.
 *   flusheio=N         everything passes through, but the N-th flush and
 *                      every later one fail with EIO (a write-back error
 *                      that fsync reports)
 *
 * A write is one write_blk/write_blk64 call (any length) or one write_byte
 * call.  At close, when EXTREF_FAULT_OUT names a file, a line is appended
 * to it: "writes=W flushes=F" (count) or "writes=W dropped=D" (crash,
 * powercut; D counts the writes that never reached the file).
 *
 * extref_fs_open() uses this manager when EXTREF_FAULT is set and not
 * empty.
 *
 * The allocation hook (EXTREF_FAULT_NOMEM) is base/fault.c.
 *
 * All of this file is built only with configure --enable-fault-injection
 * (EXTREF_FAULT_INJECTION): other builds have neither hook, and the
 * variables have no effect.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tree/extref_int.h"

#ifdef EXTREF_FAULT_INJECTION

enum fault_mode { FAULT_COUNT, FAULT_CRASH, FAULT_POWERCUT, FAULT_FLUSH_EIO };

/* A write held until the next flush (powercut mode). */
struct held_write {
	__u64		off;
	size_t		len;
	unsigned char	*data;
};

struct fault_data {
	int			fd;
	enum fault_mode		mode;
	unsigned long long	limit;		/* N of crash=N, powercut=N,
						   flusheio=N */
	__u64			rng;		/* powercut generator state */
	unsigned long long	writes;
	unsigned long long	flushes;
	unsigned long long	dropped;
	int			dead;		/* crashed / power gone */
	struct held_write	*held;
	size_t			nheld, held_cap;
	struct struct_io_stats	stats;
};

/* splitmix64: small, seedable, the same on every libc. */
static __u64 fault_rand(__u64 *state)
{
	__u64 z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int parse_num(const char *s, const char *prefix, const char **end,
		     unsigned long long *v)
{
	size_t n = strlen(prefix);
	char *e;

	if (strncmp(s, prefix, n) != 0)
		return -1;
	s += n;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &e, 10);
	if (errno)
		return -1;
	*end = e;
	return 0;
}

static errcode_t parse_mode(const char *spec, struct fault_data *d)
{
	const char *p;
	unsigned long long n, seed;

	if (strcmp(spec, "count") == 0) {
		d->mode = FAULT_COUNT;
		return 0;
	}
	if (parse_num(spec, "crash=", &p, &n) == 0 && *p == 0) {
		d->mode = FAULT_CRASH;
		d->limit = n;
		return 0;
	}
	if (parse_num(spec, "powercut=", &p, &n) == 0 && n >= 1 &&
	    parse_num(p, ",seed=", &p, &seed) == 0 && *p == 0) {
		d->mode = FAULT_POWERCUT;
		d->limit = n;
		d->rng = seed;
		return 0;
	}
	if (parse_num(spec, "flusheio=", &p, &n) == 0 && n >= 1 && *p == 0) {
		d->mode = FAULT_FLUSH_EIO;
		d->limit = n;
		return 0;
	}
	fprintf(stderr, "EXTREF_FAULT: cannot parse \"%s\" (count, crash=N, "
		"powercut=N,seed=S, flusheio=N with N >= 1)\n", spec);
	return EXT2_ET_INVALID_ARGUMENT;
}

static errcode_t full_pwrite(int fd, const void *buf, size_t len, __u64 off)
{
	const unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EXT2_ET_SHORT_WRITE;
		p += n;
		len -= (size_t)n;
		off += (__u64)n;
	}
	return 0;
}

/* Read len bytes at off; *got is short at the end of the file. */
static errcode_t full_pread(int fd, void *buf, size_t len, __u64 off,
			    size_t *got)
{
	unsigned char *p = buf;

	*got = 0;
	while (*got < len) {
		ssize_t n = pread(fd, p + *got, len - *got, (off_t)(off + *got));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

static void free_held(struct fault_data *d)
{
	size_t i;

	for (i = 0; i < d->nheld; i++)
		free(d->held[i].data);
	d->nheld = 0;
}

/* Apply the held writes in order; with keep_some, each with probability 1/2. */
static errcode_t apply_held(struct fault_data *d, int keep_some)
{
	errcode_t err = 0;
	size_t i;

	for (i = 0; i < d->nheld; i++) {
		struct held_write *h = &d->held[i];

		if (keep_some && (fault_rand(&d->rng) & 1) == 0) {
			d->dropped++;
			continue;
		}
		if (!err)
			err = full_pwrite(d->fd, h->data, h->len, h->off);
	}
	free_held(d);
	return err;
}

static errcode_t hold_write(struct fault_data *d, __u64 off, size_t len,
			    const void *data)
{
	struct held_write *h;

	if (d->nheld == d->held_cap) {
		size_t cap = d->held_cap ? 2 * d->held_cap : 64;
		void *p = realloc(d->held, cap * sizeof(*d->held));

		if (!p)
			return EXT2_ET_NO_MEMORY;
		d->held = p;
		d->held_cap = cap;
	}
	h = &d->held[d->nheld];
	h->data = malloc(len ? len : 1);
	if (!h->data)
		return EXT2_ET_NO_MEMORY;
	memcpy(h->data, data, len);
	h->off = off;
	h->len = len;
	d->nheld++;
	return 0;
}

/* Every write goes through here: the fault decisions. */
static errcode_t fault_write(struct fault_data *d, __u64 off, size_t len,
			     const void *data)
{
	errcode_t err;

	d->writes++;
	switch (d->mode) {
	case FAULT_COUNT:
	case FAULT_FLUSH_EIO:
		break;
	case FAULT_CRASH:
		if (d->writes > d->limit) {
			d->dead = 1;
			d->dropped++;
			return 0;
		}
		break;
	case FAULT_POWERCUT:
		if (d->dead) {
			d->dropped++;
			return 0;
		}
		err = hold_write(d, off, len, data);
		if (err)
			return err;
		d->stats.bytes_written += len;
		if (d->writes >= d->limit) {
			d->dead = 1;
			return apply_held(d, 1);
		}
		return 0;
	}
	err = full_pwrite(d->fd, data, len, off);
	if (!err)
		d->stats.bytes_written += len;
	return err;
}

/* Read from the file, then lay the held writes over it, oldest first. */
static errcode_t fault_read(struct fault_data *d, __u64 off, size_t len,
			    void *buf, size_t *got)
{
	errcode_t err;
	size_t i;

	err = full_pread(d->fd, buf, len, off, got);
	if (err)
		return err;
	if (*got < len)
		memset((char *)buf + *got, 0, len - *got);
	for (i = 0; i < d->nheld; i++) {
		struct held_write *h = &d->held[i];
		__u64 lo = h->off > off ? h->off : off;
		__u64 hi = h->off + h->len < off + len ? h->off + h->len
						       : off + len;

		if (lo >= hi)
			continue;
		memcpy((char *)buf + (lo - off), h->data + (lo - h->off),
		       (size_t)(hi - lo));
		if (hi - off > *got)
			*got = (size_t)(hi - off);
	}
	d->stats.bytes_read += *got;
	return 0;
}

static struct fault_data *channel_data(io_channel channel)
{
	if (!channel || channel->magic != EXT2_ET_MAGIC_IO_CHANNEL)
		return NULL;
	return channel->private_data;
}

static size_t xfer_size(io_channel channel, int count)
{
	return count < 0 ? (size_t)-count
			 : (size_t)count * (size_t)channel->block_size;
}

static errcode_t fault_open(const char *name, int flags, io_channel *channel);

static errcode_t fault_close(io_channel channel)
{
	struct fault_data *d = channel_data(channel);
	errcode_t err = 0;
	const char *out;

	if (!d)
		return EXT2_ET_MAGIC_IO_CHANNEL;
	if (--channel->refcount > 0)
		return 0;
	if (d->mode == FAULT_POWERCUT && !d->dead)
		err = apply_held(d, 0);
	free_held(d);
	free(d->held);
	out = getenv("EXTREF_FAULT_OUT");
	if (out && *out) {
		FILE *f = fopen(out, "a");

		if (f) {
			if (d->mode == FAULT_COUNT)
				fprintf(f, "writes=%llu flushes=%llu\n",
					d->writes, d->flushes);
			else
				fprintf(f, "writes=%llu dropped=%llu\n",
					d->writes, d->dropped);
			fclose(f);
		}
	}
	if (close(d->fd) < 0 && !err)
		err = errno;
	ext2fs_free_mem(&channel->private_data);
	ext2fs_free_mem(&channel->name);
	ext2fs_free_mem(&channel);
	return err;
}

static errcode_t fault_set_blksize(io_channel channel, int blksize)
{
	if (!channel_data(channel))
		return EXT2_ET_MAGIC_IO_CHANNEL;
	channel->block_size = blksize;
	return 0;
}

static errcode_t fault_read_blk64(io_channel channel, unsigned long long block,
				  int count, void *data)
{
	struct fault_data *d = channel_data(channel);
	size_t size, got = 0;
	errcode_t err;

	if (!d)
		return EXT2_ET_MAGIC_IO_CHANNEL;
	size = xfer_size(channel, count);
	err = fault_read(d, block * (__u64)channel->block_size, size, data,
			 &got);
	if (!err && got < size)
		err = EXT2_ET_SHORT_READ;
	if (err && channel->read_error)
		err = channel->read_error(channel, (unsigned long)block, count,
					  data, size, (int)got, err);
	return err;
}

static errcode_t fault_read_blk(io_channel channel, unsigned long block,
				int count, void *data)
{
	return fault_read_blk64(channel, block, count, data);
}

static errcode_t fault_write_blk64(io_channel channel, unsigned long long block,
				   int count, const void *data)
{
	struct fault_data *d = channel_data(channel);
	size_t size;
	errcode_t err;

	if (!d)
		return EXT2_ET_MAGIC_IO_CHANNEL;
	size = xfer_size(channel, count);
	err = fault_write(d, block * (__u64)channel->block_size, size, data);
	if (err && channel->write_error)
		err = channel->write_error(channel, (unsigned long)block,
					   count, data, size, 0, err);
	return err;
}

static errcode_t fault_write_blk(io_channel channel, unsigned long block,
				 int count, const void *data)
{
	return fault_write_blk64(channel, block, count, data);
}

static errcode_t fault_write_byte(io_channel channel, unsigned long offset,
				  int size, const void *data)
{
	struct fault_data *d = channel_data(channel);

	if (!d)
		return EXT2_ET_MAGIC_IO_CHANNEL;
	if (size < 0)
		return EXT2_ET_INVALID_ARGUMENT;
	return fault_write(d, offset, (size_t)size, data);
}

static errcode_t fault_flush(io_channel channel)
{
	struct fault_data *d = channel_data(channel);
	errcode_t err = 0;

	if (!d)
		return EXT2_ET_MAGIC_IO_CHANNEL;
	d->flushes++;
	if (d->dead)
		return 0;
	if (d->mode == FAULT_FLUSH_EIO && d->flushes >= d->limit)
		return EIO;	/* the disk lost what was written */
	if (d->mode == FAULT_POWERCUT)
		err = apply_held(d, 0);
	if (!err && fsync(d->fd) < 0 && errno != EINVAL && errno != EBADF)
		err = errno;
	return err;
}

static errcode_t fault_get_stats(io_channel channel, io_stats *stats)
{
	struct fault_data *d = channel_data(channel);

	if (!d)
		return EXT2_ET_MAGIC_IO_CHANNEL;
	if (stats)
		*stats = &d->stats;
	return 0;
}

static errcode_t fault_discard(io_channel channel, unsigned long long block,
			       unsigned long long count)
{
	(void) channel; (void) block; (void) count;
	return EXT2_ET_UNIMPLEMENTED;
}

static struct struct_io_manager fault_manager = {
	.magic		= EXT2_ET_MAGIC_IO_MANAGER,
	.name		= "extref fault-injecting I/O manager",
	.open		= fault_open,
	.close		= fault_close,
	.set_blksize	= fault_set_blksize,
	.read_blk	= fault_read_blk,
	.write_blk	= fault_write_blk,
	.flush		= fault_flush,
	.write_byte	= fault_write_byte,
	.get_stats	= fault_get_stats,
	.read_blk64	= fault_read_blk64,
	.write_blk64	= fault_write_blk64,
	.discard	= fault_discard,
	/* no zeroout: libext2fs falls back to writes, which are counted */
};

io_manager extref_fault_io_manager = &fault_manager;

static errcode_t fault_open(const char *name, int flags, io_channel *channel)
{
	io_channel io = NULL;
	struct fault_data *d = NULL;
	const char *spec = getenv("EXTREF_FAULT");
	errcode_t err;

	if (!name)
		return EXT2_ET_BAD_DEVICE_NAME;
	err = ext2fs_get_memzero(sizeof(*io), &io);
	if (err)
		return err;
	err = ext2fs_get_memzero(sizeof(*d), &d);
	if (err)
		goto fail;
	d->fd = -1;
	d->stats.num_fields = 2;
	err = parse_mode(spec && *spec ? spec : "count", d);
	if (err)
		goto fail;
	err = ext2fs_get_mem(strlen(name) + 1, &io->name);
	if (err)
		goto fail;
	strcpy(io->name, name);
	d->fd = open(name, (flags & IO_FLAG_RW) ? O_RDWR : O_RDONLY);
	if (d->fd < 0) {
		err = errno;
		goto fail;
	}
	io->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	io->manager = extref_fault_io_manager;
	io->block_size = 1024;
	io->refcount = 1;
	io->private_data = d;
	*channel = io;
	return 0;
fail:
	if (d && d->fd >= 0)
		close(d->fd);
	if (d)
		ext2fs_free_mem(&d);
	if (io && io->name)
		ext2fs_free_mem(&io->name);
	ext2fs_free_mem(&io);
	return err;
}

#endif /* EXTREF_FAULT_INJECTION */
