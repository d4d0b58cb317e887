/*
 * preload.c --- libextref-preload.so, an LD_PRELOAD shim: FICLONE,
 * FICLONERANGE, FIDEDUPERANGE and FS_IOC_FIEMAP on a file of an
 * extref-fuse mount, which the kernel answers itself with EOPNOTSUPP on
 * any FUSE mount, become extref-fuse's private ioctls
 * (fuse/xfuse_ioctl.h), which it forwards; the answers come back with
 * the kernel's conventions.  Every other ioctl, and these four on any
 * other file, go to the real ioctl() unchanged.
 *
 * A file is on an extref-fuse mount when its filesystem is FUSE's
 * (fstatfs) and the server answers a one-byte private fiemap (another
 * FUSE server answers ENOTTY, EOPNOTSUPP or ENOSYS).  What the kernel
 * checks of the descriptors themselves (open modes, same mount) is
 * checked here; the rest (ranges, alignment, permissions, contents) is
 * the server's, with the kernel's rules.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include "../xfuse_ioctl.h"

#define XF_FUSE_SUPER_MAGIC	0x65735546
#define XF_FIEMAP_MAX	(0xffffffffU / sizeof(struct fiemap_extent))

typedef int (*ioctl_fn)(int, unsigned long, ...);

static int real_ioctl(int fd, unsigned long req, void *arg)
{
	static ioctl_fn real;

	if (!real)
		real = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(fd, req, arg);
}

/* Whether fd is a file of an extref-fuse mount. */
static int ours(int fd)
{
	struct xfuse_fiemap probe;
	struct statfs sf;
	int saved = errno, res;

	if (fstatfs(fd, &sf) || sf.f_type != XF_FUSE_SUPER_MAGIC) {
		errno = saved;
		return 0;
	}
	memset(&probe, 0, sizeof(probe));
	probe.magic = XFUSE_IOC_MAGIC;
	probe.length = 1;
	res = real_ioctl(fd, XFUSE_IOC_FIEMAP, &probe);
	res = res == 0 || (errno != ENOTTY && errno != EOPNOTSUPP &&
			   errno != ENOSYS && errno != EINVAL);
	errno = saved;
	return res;
}

/* -1 with errno set to err. */
static int fail(int err)
{
	errno = err;
	return -1;
}

/* The descriptors as the kernel checks them before a clone: the source
 * open (EBADF), on the same mount (EXDEV); both regular files (EISDIR
 * for a directory, EINVAL for a device, FIFO or socket); the source
 * readable, the destination writable and not append-only (EBADF). */
static int clone_fds(int src, int dst, struct stat *sst)
{
	struct stat dstat;
	int sfl, dfl;

	if (fstat(src, sst) || (sfl = fcntl(src, F_GETFL)) < 0)
		return fail(EBADF);
	if (fstat(dst, &dstat) || (dfl = fcntl(dst, F_GETFL)) < 0)
		return fail(EBADF);
	if (sst->st_dev != dstat.st_dev)
		return fail(EXDEV);
	if (S_ISDIR(sst->st_mode) || S_ISDIR(dstat.st_mode))
		return fail(EISDIR);
	if (!S_ISREG(sst->st_mode) || !S_ISREG(dstat.st_mode))
		return fail(EINVAL);
	if ((sfl & O_ACCMODE) == O_WRONLY || (dfl & O_ACCMODE) == O_RDONLY ||
	    (dfl & O_APPEND))
		return fail(EBADF);
	return 0;
}

static int do_clone(int dst, int src, __u64 soff, __u64 len, __u64 doff)
{
	struct xfuse_clone c;
	struct stat sst;

	if (clone_fds(src, dst, &sst))
		return -1;
	memset(&c, 0, sizeof(c));
	c.magic = XFUSE_IOC_MAGIC;
	c.src_ino = sst.st_ino;
	c.src_offset = soff;
	c.src_length = len;
	c.dest_offset = doff;
	if (real_ioctl(dst, XFUSE_IOC_CLONE, &c))
		return -1;
	/* the caller's cached pages of what changed go now (the server
	 * drops the kernel's cache too, from a thread of its own) */
	(void)posix_fadvise(dst, (off_t)doff, (off_t)len, POSIX_FADV_DONTNEED);
	return 0;
}

/* One destination of FIDEDUPERANGE: its status and bytes_deduped. */
static void dedupe_one(int src, const struct stat *sst,
		       const struct file_dedupe_range *r,
		       struct file_dedupe_range_info *i)
{
	struct xfuse_dedupe d;
	struct stat dstat;
	int dfl;

	i->bytes_deduped = 0;
	if (i->reserved) {
		i->status = -EINVAL;
		return;
	}
	if (fstat((int)i->dest_fd, &dstat) ||
	    (dfl = fcntl((int)i->dest_fd, F_GETFL)) < 0) {
		i->status = -EBADF;
		return;
	}
	if (dstat.st_dev != sst->st_dev) {
		i->status = -EXDEV;
		return;
	}
	if (S_ISDIR(dstat.st_mode)) {
		i->status = -EISDIR;
		return;
	}
	/* a device, FIFO or socket: no remap there (the kernel's EINVAL);
	 * the private ioctl would go to its driver */
	if (!S_ISREG(dstat.st_mode)) {
		i->status = -EINVAL;
		return;
	}
	(void)src;
	memset(&d, 0, sizeof(d));
	d.magic = XFUSE_IOC_MAGIC;
	d.src_ino = sst->st_ino;
	d.src_offset = r->src_offset;
	d.src_length = r->src_length;
	d.dest_offset = i->dest_offset;
	if (real_ioctl((int)i->dest_fd, XFUSE_IOC_DEDUPE, &d)) {
		i->status = -errno;
		return;
	}
	i->status = d.status;
	i->bytes_deduped = d.status ? 0 : d.bytes_deduped;
}

/* FIDEDUPERANGE: the source's own checks fail the call, as the kernel's
 * do; each destination gets its status. */
static int do_dedupe(int src, struct file_dedupe_range *r)
{
	struct stat sst;
	int sfl;
	__u16 k;

	/* the kernel copies the request into one page */
	if (sizeof(*r) + (size_t)r->dest_count * sizeof(r->info[0]) > 4096)
		return fail(ENOMEM);
	if (r->reserved1 || r->reserved2)
		return fail(EINVAL);
	if (fstat(src, &sst) || (sfl = fcntl(src, F_GETFL)) < 0)
		return fail(EBADF);
	if (S_ISDIR(sst.st_mode))
		return fail(EISDIR);
	if (!S_ISREG(sst.st_mode))
		return fail(EINVAL);
	if (r->src_offset + r->src_length < r->src_offset ||
	    r->src_offset + r->src_length > 0x7fffffffffffffffULL ||
	    r->src_offset + r->src_length > (__u64)sst.st_size)
		return fail(EINVAL);
	(void)sfl;
	for (k = 0; k < r->dest_count; k++)
		dedupe_one(src, &sst, r, &r->info[k]);
	return 0;
}

/* FS_IOC_FIEMAP, in pieces of XFUSE_FIEMAP_CHUNK extents. */
static int do_fiemap(int fd, struct fiemap *fm)
{
	struct xfuse_fiemap p;
	__u64 start = fm->fm_start, end, next, len = fm->fm_length;
	__u32 want = fm->fm_extent_count, got = 0, i;

	if (want > XF_FIEMAP_MAX)
		return fail(EINVAL);
	if (fm->fm_flags & ~FIEMAP_FLAG_SYNC) {
		fm->fm_flags &= ~FIEMAP_FLAG_SYNC;
		return fail(EBADR);
	}
	if (len == 0)
		return fail(EINVAL);
	end = start + len < start ? ~0ULL : start + len;
	for (;;) {
		memset(&p, 0, sizeof(p));
		p.magic = XFUSE_IOC_MAGIC;
		p.flags = fm->fm_flags;
		p.start = start;
		p.length = end - start;
		p.count = want == 0 ? 0 : want - got < XFUSE_FIEMAP_CHUNK ?
			  want - got : XFUSE_FIEMAP_CHUNK;
		if (real_ioctl(fd, XFUSE_IOC_FIEMAP, &p))
			return -1;
		if (p.count == 0) {
			got = p.mapped;
			break;
		}
		for (i = 0; i < p.mapped; i++) {
			struct fiemap_extent *e = &fm->fm_extents[got + i];

			memset(e, 0, sizeof(*e));
			e->fe_logical = p.ext[i].logical;
			e->fe_physical = p.ext[i].physical;
			e->fe_length = p.ext[i].length;
			e->fe_flags = p.ext[i].flags;
		}
		got += p.mapped;
		if (p.mapped < p.count || got == want ||
		    (p.ext[p.mapped - 1].flags & FIEMAP_EXTENT_LAST))
			break;
		next = p.ext[p.mapped - 1].logical +
		       p.ext[p.mapped - 1].length;
		if (next <= start || next >= end)
			break;		/* (a server that does not advance) */
		start = next;
	}
	fm->fm_mapped_extents = got;
	return 0;
}

int ioctl(int fd, unsigned long req, ...)
{
	struct file_clone_range *cr;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	switch (req) {
	case FICLONE:
		if (ours(fd))
			return do_clone(fd, (int)(long)arg, 0, 0, 0);
		break;
	case FICLONERANGE:
		if (ours(fd)) {
			cr = arg;
			return do_clone(fd, (int)cr->src_fd, cr->src_offset,
					cr->src_length, cr->dest_offset);
		}
		break;
	case FIDEDUPERANGE:
		if (ours(fd))
			return do_dedupe(fd, arg);
		break;
	case FS_IOC_FIEMAP:
		if (ours(fd))
			return do_fiemap(fd, arg);
		break;
	}
	return real_ioctl(fd, req, arg);
}
