/*
 * ioctl.c --- the private ioctls of xfuse_ioctl.h: clone, dedupe and a
 * piece of a fiemap, which the kernel forwards (their size is in the
 * command number) where it answers FICLONE, FICLONERANGE, FIDEDUPERANGE
 * and FS_IOC_FIEMAP itself with EOPNOTSUPP.  The LD_PRELOAD shim
 * (fuse/shim/preload.c) turns the standard calls into these.  And the
 * inode flags' FS_IOC_GETFLAGS / FS_IOC_SETFLAGS (chattr, lsattr), which
 * the kernel forwards itself.
 *
 * The destination is the open file the ioctl is issued on; the source an
 * inode number.  The library applies the kernel's rules and checks the
 * caller's permissions on both files (its identity: ctx.c), as for an
 * open (read on the source, write on the destination).  A source named
 * by number skips the search permission of the directories above it: it
 * is taken only from root and from the user the server runs as (who can
 * read the image anyway), EPERM for others (allow_other).  Each clone or
 * dedupe is one library call, and so one transaction.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "xfuse.h"
#include "extref_extent.h"
#include "xfuse_ioctl.h"

#define XF_FIEMAP_SYNC		0x00000001	/* FIEMAP_FLAG_SYNC */
#define XF_EXTENT_LAST		0x00000001
#define XF_EXTENT_UNWRITTEN	0x00000800
#define XF_EXTENT_SHARED	0x00002000

/* The destination (the handle) and the source's number, checked. */
static int two_files(struct fuse_file_info *fi, __u64 src_ino,
		     ext2_ino_t *src, ext2_ino_t *dst)
{
	const struct fuse_context *ctx = fuse_get_context();
	int res;

	if (!fi || !fi->fh)
		return -EBADF;
	res = xf_handle_ino(fi, dst);
	if (res)
		return res;
	if (ctx->uid != 0 && ctx->uid != getuid())
		return -EPERM;
	if (src_ino == 0 || src_ino > xf.fs->super->s_inodes_count)
		return -EBADF;
	*src = (ext2_ino_t)src_ino;
	xf_identity();
	return 0;
}

/*
 * The kernel learns of a clone only from us: its cached size and pages
 * of the destination are dropped (it does so itself after a
 * copy_file_range, never after an ioctl), from inval.c's thread.
 */
static void forget_cached(const char *path)
{
	if (path)
		xf_inval(path);
}

static int do_clone(const char *path, struct fuse_file_info *fi,
		    struct xfuse_clone *c)
{
	ext2_ino_t src, dst;
	int res = c->flags ? -EINVAL : two_files(fi, c->src_ino, &src, &dst);

	c->done = 0;
	if (!res)
		res = xf_err(extref_clone_range(xf.xfs, src, c->src_offset,
						dst, c->dest_offset,
						c->src_length, &c->done));
	if (!res && c->done)
		forget_cached(path);
	return res;
}

static int do_dedupe(struct fuse_file_info *fi, struct xfuse_dedupe *d)
{
	ext2_ino_t src, dst;
	int differs = 0;
	int res = d->flags ? -EINVAL : two_files(fi, d->src_ino, &src, &dst);

	d->bytes_deduped = 0;
	d->status = 0;
	if (!res)
		res = xf_err(extref_dedupe_range(xf.xfs, src, d->src_offset,
						 dst, d->dest_offset,
						 d->src_length,
						 &d->bytes_deduped, &differs));
	if (!res && differs) {
		d->bytes_deduped = 0;
		d->status = 1;		/* FILE_DEDUPE_RANGE_DIFFERS */
	}
	return res;
}

/* ----- fiemap ----- */

/*
 * As the kernel's iomap_fiemap reports for ext4 and XFS: each extent
 * (contiguous runs with equal flags merged) trimmed to the range asked,
 * widened to whole blocks; FIEMAP_EXTENT_LAST on the last one in the
 * range, unless the array filled before it.
 */
struct fm {
	struct xfuse_fiemap	*f;
	__u64			rs, re;		/* the range, in whole blocks */
	struct xfuse_extent	cur;		/* being merged */
	struct xfuse_extent	pend;		/* in range, not yet kept */
	int			have, have_pend, full;
};

/* Keep e (or only count it, count 0). */
static void fm_keep(struct fm *c, const struct xfuse_extent *e)
{
	struct xfuse_fiemap *f = c->f;

	if (f->count && f->mapped == f->count) {
		c->full = 1;
		return;
	}
	if (f->count)
		f->ext[f->mapped] = *e;
	f->mapped++;
}

/* A whole merged extent: the one pending is kept, this one (trimmed)
 * pends when it meets the range. */
static void fm_offer(struct fm *c, const struct xfuse_extent *e)
{
	struct xfuse_extent t = *e;
	__u64 end = e->logical + e->length;

	if (end <= c->rs || e->logical >= c->re)
		return;
	if (t.logical < c->rs) {
		t.physical += c->rs - t.logical;
		t.logical = c->rs;
	}
	if (end > c->re)
		end = c->re;
	t.length = end - t.logical;
	if (c->have_pend)
		fm_keep(c, &c->pend);
	c->pend = t;
	c->have_pend = 1;
}

static errcode_t fm_map(const struct extref_mapping *m, void *priv)
{
	struct fm *c = priv;
	__u64 bs = xf.fs->blocksize;
	struct xfuse_extent e;

	memset(&e, 0, sizeof(e));
	e.logical = m->lblk * bs;
	e.physical = m->pblk * bs;
	e.length = m->len * bs;
	e.flags = (m->unwritten ? XF_EXTENT_UNWRITTEN : 0) |
		  (m->shared ? XF_EXTENT_SHARED : 0);
	if (c->have && c->cur.logical + c->cur.length == e.logical &&
	    c->cur.physical + c->cur.length == e.physical &&
	    c->cur.flags == e.flags) {
		c->cur.length += e.length;
		return 0;
	}
	if (c->have)
		fm_offer(c, &c->cur);
	c->cur = e;
	c->have = 1;
	return c->full || e.logical >= c->re ? EXTREF_ITER_STOP : 0;
}

static int do_fiemap(const char *path, struct fuse_file_info *fi,
		     struct xfuse_fiemap *f)
{
	struct ext2_inode_large in;
	struct fm c;
	__u64 bs;
	ext2_ino_t ino;
	errcode_t err;
	int res;

	f->mapped = 0;
	if ((f->flags & ~XF_FIEMAP_SYNC) || f->count > XFUSE_FIEMAP_CHUNK ||
	    f->length == 0)
		return -EINVAL;
	/* the handle, or the path of a directory (no handle: no opendir) */
	ino = xf_fh_ino(path, fi, &res);
	if (!res)
		res = xf_read_inode(ino, &in);
	if (res)
		return res;
	memset(&c, 0, sizeof(c));
	c.f = f;
	bs = xf.fs->blocksize;
	c.rs = f->start / bs * bs;
	c.re = f->start + f->length < f->start ||
	       f->start + f->length > ~0ULL - bs ? ~0ULL :
	       (f->start + f->length + bs - 1) / bs * bs;
	/* inline data and block-mapped files have no extents to show */
	if (!(in.i_flags & EXT4_EXTENTS_FL))
		return 0;
	err = extref_iterate_mappings(xf.xfs, ino, fm_map, &c);
	if (err)
		return xf_err(err);
	if (c.have && !c.full)
		fm_offer(&c, &c.cur);
	if (c.have_pend && !c.full) {
		c.pend.flags |= XF_EXTENT_LAST;
		fm_keep(&c, &c.pend);
	}
	return 0;
}

/*
 * The inode flags: FS_IOC_GETFLAGS and FS_IOC_SETFLAGS (an int of ext4
 * flags) and FS_IOC_FSGETXATTR and FS_IOC_FSSETXATTR (struct fsxattr:
 * the same flags as XFS names them, and the project id), which the
 * kernel sends for chattr, lsattr and xfs_io's (fuse_fileattr_get/set;
 * a SETFLAGS is preceded by an FSGETXATTR).
 */
#define XF_IOC_GETFLAGS		0x80086601U
#define XF_IOC_SETFLAGS		0x40086602U
#define XF_IOC_FSGETXATTR	0x801c581fU
#define XF_IOC_FSSETXATTR	0x401c5820U

struct xf_fsxattr {			/* struct fsxattr */
	__u32	xflags, extsize, nextents, projid, cowextsize;
	unsigned char pad[8];
};

/* ext4's flags and their FS_XFLAG_* (ext4_iflags_to_xflags). */
static const __u32 xflag_map[][2] = {
	{ EXT2_SYNC_FL, 0x20 }, { EXT2_IMMUTABLE_FL, 0x08 },
	{ EXT2_APPEND_FL, 0x10 }, { EXT2_NODUMP_FL, 0x80 },
	{ EXT2_NOATIME_FL, 0x40 }, { EXT4_PROJINHERIT_FL, 0x200 },
};
#define XF_NXFLAGS	(sizeof(xflag_map) / sizeof(xflag_map[0]))

static __u32 to_xflags(__u32 flags)
{
	__u32 x = 0;
	size_t i;

	for (i = 0; i < XF_NXFLAGS; i++)
		if (flags & xflag_map[i][0])
			x |= xflag_map[i][1];
	return x;
}

/* flags with the mapped ones as xflags says; an xflag ext4 has no flag
 * for is dropped, as the kernel drops it for ext4 (fileattr_fill_xflags). */
static void from_xflags(__u32 x, __u32 *flags)
{
	size_t i;

	for (i = 0; i < XF_NXFLAGS; i++) {
		*flags &= ~xflag_map[i][0];
		if (x & xflag_map[i][1])
			*flags |= xflag_map[i][0];
	}
}

static int get_fsxattr(ext2_ino_t ino, __u32 flags, struct xf_fsxattr *x)
{
	struct ext2_inode_large in;
	int res = xf_read_inode(ino, &in);

	memset(x, 0, sizeof(*x));
	x->xflags = to_xflags(flags);
	if (!res && EXT2_INODE_SIZE(xf.fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	    in.i_extra_isize >= 32)
		x->projid = in.i_projid;
	return res;
}

static int do_flags(const char *path, struct fuse_file_info *fi,
		    unsigned int req, void *data)
{
	struct xf_fsxattr x, now;
	ext2_ino_t ino;
	__u32 flags;
	int res;

	if (!data)
		return -EINVAL;
	ino = xf_fh_ino(path, fi, &res);
	if (!res)
		res = xf_err(extref_get_flags(xf.xfs, ino, &flags));
	if (!res && req == XF_IOC_GETFLAGS)
		memcpy(data, &flags, sizeof(flags));
	if (!res && (req == XF_IOC_FSGETXATTR || req == XF_IOC_FSSETXATTR))
		res = get_fsxattr(ino, flags, &now);
	if (res || req == XF_IOC_GETFLAGS)
		return res;
	if (req == XF_IOC_FSGETXATTR) {
		memcpy(data, &now, sizeof(now));
		return 0;
	}
	if (xf.ro)
		return -EROFS;
	if (req == XF_IOC_SETFLAGS) {
		memcpy(&flags, data, sizeof(flags));
	} else {
		memcpy(&x, data, sizeof(x));
		/* a project id is not changed here */
		if (x.projid != now.projid)
			return -EOPNOTSUPP;
		from_xflags(x.xflags, &flags);
	}
	res = xf_err(extref_set_flags(xf.xfs, ino, flags));
	/* the change time moved: the kernel's cached attributes go */
	if (!res && path)
		xf_inval(path);
	return res;
}

int xf_ioctl(const char *path, int cmd, void *arg,
	     struct fuse_file_info *fi, unsigned int flags, void *data)
{
	unsigned int req = (unsigned int)cmd;	/* int in libfuse < 3.15 */

	(void)arg;
	if (flags & FUSE_IOCTL_COMPAT)
		return -ENOSYS;
	if (req == XF_IOC_GETFLAGS || req == XF_IOC_SETFLAGS ||
	    req == XF_IOC_FSGETXATTR || req == XF_IOC_FSSETXATTR)
		return do_flags(path, fi, req, data);
	/* only ours: their size, and so data's, is in the number */
	if (req != XFUSE_IOC_CLONE && req != XFUSE_IOC_DEDUPE &&
	    req != XFUSE_IOC_FIEMAP)
		return -ENOTTY;
	if (!data || *(const __u32 *)data != XFUSE_IOC_MAGIC)
		return -ENOTTY;
	if (req == XFUSE_IOC_FIEMAP)
		return do_fiemap(path, fi, data);
	if (xf.ro)
		return -EROFS;
	return req == XFUSE_IOC_CLONE ? do_clone(path, fi, data) :
					do_dedupe(fi, data);
}
