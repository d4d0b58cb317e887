/*
 * need_int.h --- the dry run of an update (update_need.c): the image's
 * index of update_int.h, and what the walk of the source counts.
 *
 * need_walk.c walks a source directory as update_walk.c does, name by
 * name against the image's directories (what is kept, what is new, the
 * directory entries added); need_layer.c reads an archive as
 * update_layer.c applies it, entry by entry against the image's paths;
 * need_file.c counts one regular file as update_file.c would put it
 * (kept, a reflink, or block by block); need_dir.c the directory blocks
 * the entries added take.
 */
#ifndef EXTREF_NEED_INT_H
#define EXTREF_NEED_INT_H

#include "update_int.h"

struct xr_need {
	struct xr_upd		up;	/* the index, its buffers, fs */
	struct extref_update	dummy;	/* up.u: no progress */
	struct extref_update_need *n;
	struct xr_pop_table	links;	/* (dev, ino) of a file met */
	ext2_ino_t		fake_ino; /* stand-ins for the files and
					     directories made, past the
					     image's */
	__u64			inodes;	/* made */
	__u64			data;	/* data blocks written */
	__u64			extent_blocks; /* extent-tree nodes */
	__u64			dir_blocks;
	__u64			other;	/* slow symlinks' blocks */
	__u64			runs;	/* clone runs: tree records */
};

/* A stand-in inode number for a file or directory the update makes:
 * past the image's, so that it is never one of them. */
static inline ext2_ino_t xr_need_fake_ino(struct xr_need *nd)
{
	if (!++nd->fake_ino)
		nd->fake_ino = nd->up.fs->super->s_inodes_count + 1;
	return nd->fake_ino;
}

/* A source file's bytes, read from its start on: len bytes at off into
 * buf, *got of them (0: its end). */
struct xr_need_src {
	errcode_t	(*read)(void *priv, char *buf, size_t len, __u64 off,
				size_t *got);
	void		*priv;
};

/* need_file.c: the regular file src (size bytes); old: the file at its
 * name that the update may keep, or 0.  *ino: old when kept, else a
 * stand-in (xr_need_fake_ino). */
errcode_t xr_need_file(struct xr_need *nd, const struct xr_need_src *src,
		       __u64 size, ext2_ino_t old, ext2_ino_t *ino);
/* need_dir.c: the bytes the entry of a name of len takes; the new
 * blocks the directory dir (the image's, or a new one: 0 or a
 * stand-in) takes for added more bytes of entries. */
__u64 xr_need_dirent_len(size_t len);
__u64 xr_need_dir_blocks(const struct xr_need *nd, ext2_ino_t dir,
			 __u64 added);
/* need_walk.c: the source dir into the image's directory at. */
errcode_t xr_need_walk(struct xr_need *nd, const char *dir, const char *at);
/* need_layer.c: the archive on fd (read from where it is) applied at
 * the image's root as one more layer. */
errcode_t xr_need_layer(struct xr_need *nd, int fd);
/* The counts into nd->n (blocks, inodes). */
void xr_need_total(struct xr_need *nd);

#endif /* EXTREF_NEED_INT_H */
