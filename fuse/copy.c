/*
 * copy.c --- copy_file_range, the one way to a reflink the kernel gives
 * a FUSE server (it answers FICLONE itself, with EOPNOTSUPP): the part of
 * the range whose blocks line up in both files is cloned
 * (extref_clone_range: the blocks are shared, their counts raised), the
 * unaligned head and tail are copied.  Plain cp(1) tries FICLONE, then
 * copy_file_range, and so makes reflinks.  The whole request is one
 * transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include "xfuse.h"

#define COPY_CHUNK	(1U << 20)
/* one request at most (cp loops; FUSE's reply holds 32 bits) */
#define COPY_MAX	(1ULL << 30)
#define COPY_UNALIGNED_MAX	(16ULL << 20)

/* Copy len bytes through a buffer (the head and tail, or everything
 * when the two offsets are not aligned alike). */
static errcode_t copy_bytes(ext2_ino_t src, __u64 soff, ext2_ino_t dst,
			    __u64 doff, __u64 len)
{
	char *buf = malloc(COPY_CHUNK);
	errcode_t err = buf ? 0 : EXT2_ET_NO_MEMORY;
	__u64 got;

	while (!err && len) {
		__u64 n = len < COPY_CHUNK ? len : COPY_CHUNK;

		err = extref_pread(xf.xfs, src, soff, buf, n, &got);
		if (!err && got != n)
			err = EXT2_ET_SHORT_READ;
		if (!err)
			err = extref_pwrite(xf.xfs, dst, doff, buf, n);
		soff += n;
		doff += n;
		len -= n;
	}
	free(buf);
	return err;
}

/* Head copied, whole blocks cloned, tail copied. */
static errcode_t copy_range(ext2_ino_t src, __u64 soff, ext2_ino_t dst,
			    __u64 doff, __u64 len, __u64 dsize)
{
	__u64 bs = xf.fs->blocksize, head = len, mid = 0, done;
	errcode_t err;

	if (soff % bs == doff % bs) {
		head = (bs - soff % bs) % bs;
		if (head > len)
			head = len;
		mid = (len - head) / bs * bs;
		/* a clone starts inside or at the end of what dst holds */
		if (doff + head > dsize && doff > dsize)
			head = len, mid = 0;
	}
	err = copy_bytes(src, soff, dst, doff, head);
	if (!err && mid)
		err = extref_clone_range(xf.xfs, src, soff + head, dst,
					 doff + head, mid, &done);
	if (!err)
		err = copy_bytes(src, soff + head + mid, dst, doff + head + mid,
				 len - head - mid);
	return err;
}

ssize_t xf_copy_file_range(const char *path_in, struct fuse_file_info *fi_in,
			   off_t off_in, const char *path_out,
			   struct fuse_file_info *fi_out, off_t off_out,
			   size_t len, int flags)
{
	struct ext2_inode_large si, di;
	ext2_ino_t src, dst;
	__u64 size;
	errcode_t err;
	int res;

	if (flags || off_in < 0 || off_out < 0)
		return -EINVAL;
	src = xf_fh_ino(path_in, fi_in, &res);
	if (!res)
		dst = xf_fh_ino(path_out, fi_out, &res);
	if (!res)
		res = xf_read_inode(src, &si);
	if (!res)
		res = xf_read_inode(dst, &di);
	if (res)
		return res;
	size = EXT2_I_SIZE(&si);
	if ((__u64)off_in >= size)
		return 0;
	if (len > size - off_in)
		len = size - off_in;
	if (len > COPY_MAX)
		len = COPY_MAX;
	/* a copy, not a clone: a journal-sized piece at a time */
	if (off_in % xf.fs->blocksize != off_out % xf.fs->blocksize &&
	    len > COPY_UNALIGNED_MAX)
		len = COPY_UNALIGNED_MAX;
	err = extref_tx_begin(xf.xfs);
	if (!err)
		err = extref_tx_end(xf.xfs, copy_range(src, off_in, dst,
				    off_out, len, EXT2_I_SIZE(&di)));
	return err ? xf_err(err) : (ssize_t)len;
}
