/*
 * seek.c --- lseek's SEEK_DATA and SEEK_HOLE (the kernel answers the
 * other whences itself), from the file's extent mappings: an unwritten
 * extent reads as zeros and counts as a hole, as ext4 reports one
 * without cached pages.  A file without extents (inline data) is data
 * up to its size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include "xfuse.h"

struct seek {
	__u64	bs, pos;	/* the answer so far */
	int	whence;
	int	found;		/* SEEK_DATA: pos is in data */
};

static errcode_t seek_cb(const struct extref_mapping *m, void *priv)
{
	struct seek *s = priv;
	__u64 start = m->lblk * s->bs, end = (m->lblk + m->len) * s->bs;

	if (m->unwritten || end <= s->pos)
		return 0;
	if (s->whence == SEEK_DATA) {
		if (start > s->pos)
			s->pos = start;
		s->found = 1;
		return EXTREF_ITER_STOP;
	}
	if (start > s->pos)		/* a hole before this extent */
		return EXTREF_ITER_STOP;
	s->pos = end;			/* data up to its end */
	return 0;
}

off_t xf_lseek(const char *path, off_t off, int whence,
	       struct fuse_file_info *fi)
{
	struct ext2_inode_large in;
	struct seek s = { xf.fs->blocksize, (__u64)off, whence, 0 };
	ext2_ino_t ino;
	__u64 size;
	errcode_t err;
	int res;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	ino = xf_fh_ino(path, fi, &res);
	if (!res)
		res = xf_read_inode(ino, &in);
	if (res)
		return res;
	size = EXT2_I_SIZE(&in);
	if (off < 0 || (__u64)off >= size)
		return -ENXIO;
	if (!(in.i_flags & EXT4_EXTENTS_FL))
		return whence == SEEK_DATA ? off : (off_t)size;
	err = extref_iterate_mappings(xf.xfs, ino, seek_cb, &s);
	if (err)
		return xf_err(err);
	if (whence == SEEK_DATA)
		return s.found && s.pos < size ? (off_t)s.pos : -ENXIO;
	return s.pos < size ? (off_t)s.pos : (off_t)size;
}
