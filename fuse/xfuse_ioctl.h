/*
 * xfuse_ioctl.h --- extref-fuse's private ioctls (docs/extref-fuse.8,
 * REFLINKS): what the kernel does not forward to a FUSE server (FICLONE,
 * FICLONERANGE, FIDEDUPERANGE, FS_IOC_FIEMAP: the VFS answers them
 * itself, EOPNOTSUPP) carried in commands it does forward, those whose
 * size the command number encodes (_IOWR).  The LD_PRELOAD shim
 * (fuse/shim/preload.c) makes them from the standard calls; the server
 * answers them in fuse/ioctl.c.
 *
 * Every command is issued on the destination: the file the clone or
 * dedupe writes to, or the file mapped.  A source is named by its inode
 * number (st_ino on the mount: the server uses the image's inode numbers).
 * magic must be XFUSE_IOC_MAGIC (else ENOTTY: not ours).
 */
#ifndef XFUSE_IOCTL_H
#define XFUSE_IOCTL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define XFUSE_IOC_MAGIC		0x78726631U	/* "xrf1" */

/* Clone (FICLONE, FICLONERANGE): len 0 means to the source's EOF. */
struct xfuse_clone {
	__u32	magic;
	__u32	flags;		/* 0 */
	__u64	src_ino;
	__u64	src_offset;
	__u64	src_length;
	__u64	dest_offset;
	__u64	done;		/* out: bytes linked */
};

/* Dedupe one destination (FIDEDUPERANGE's one dest_fd). */
struct xfuse_dedupe {
	__u32	magic;
	__u32	flags;		/* 0 */
	__u64	src_ino;
	__u64	src_offset;
	__u64	src_length;
	__u64	dest_offset;
	__u64	bytes_deduped;	/* out */
	__s32	status;		/* out: 0 same, 1 differs (FIDEDUPERANGE's) */
	__u32	pad;
};

/* One extent, as struct fiemap_extent says it (bytes). */
struct xfuse_extent {
	__u64	logical;
	__u64	physical;
	__u64	length;
	__u32	flags;		/* FIEMAP_EXTENT_* */
	__u32	pad;
};

#define XFUSE_FIEMAP_CHUNK	32

/*
 * A piece of FS_IOC_FIEMAP: the extents that meet [start, start +
 * length), trimmed to it (in whole blocks), first to last, at most count
 * of them (count 0: none filled, mapped says how many there are);
 * FIEMAP_EXTENT_LAST on the last one in the range, as the kernel's
 * iomap_fiemap marks it.  The shim loops from the end of the last one
 * returned until one carries FIEMAP_EXTENT_LAST or fewer than count
 * come back.
 */
struct xfuse_fiemap {
	__u32	magic;
	__u32	flags;		/* FIEMAP_FLAG_SYNC only */
	__u64	start;
	__u64	length;
	__u32	count;		/* in: 0 .. XFUSE_FIEMAP_CHUNK */
	__u32	mapped;		/* out */
	struct xfuse_extent ext[XFUSE_FIEMAP_CHUNK];
};

#define XFUSE_IOC_CLONE		_IOWR('X', 0xe0, struct xfuse_clone)
#define XFUSE_IOC_DEDUPE	_IOWR('X', 0xe1, struct xfuse_dedupe)
#define XFUSE_IOC_FIEMAP	_IOWR('X', 0xe2, struct xfuse_fiemap)

#endif /* XFUSE_IOCTL_H */
