/*
 * need_int.h --- the dry run of an update (update_need.c): the image's
 * index of update_int.h, and what the walk of the source counts.
 *
 * need_walk.c walks the source as update_walk.c does, name by name
 * against the image's directories (what is kept, what is new, the
 * directory entries added); need_file.c counts one regular file as
 * update_file.c would put it (kept, a reflink, or block by block).
 */
#ifndef EXTREF_NEED_INT_H
#define EXTREF_NEED_INT_H

#include "update_int.h"

struct xr_need {
	struct xr_upd		up;	/* the index, its buffers, fs */
	struct extref_update	dummy;	/* up.u: no progress */
	struct extref_update_need *n;
	struct xr_pop_table	links;	/* (dev, ino) of a file met */
	ext2_ino_t		fake_ino; /* stand-ins for the files
					     counted, past the image's */
	__u64			inodes;	/* made */
	__u64			data;	/* data blocks written */
	__u64			extent_blocks; /* extent-tree nodes */
	__u64			dir_blocks;
	__u64			other;	/* slow symlinks' blocks */
	__u64			runs;	/* clone runs: tree records */
};

/* need_file.c: the regular file on fd (size bytes); old: the image's
 * regular file at its name, or 0. */
errcode_t xr_need_file(struct xr_need *nd, int fd, __u64 size,
		       ext2_ino_t old);
/* need_walk.c: the source dir into the image's directory at. */
errcode_t xr_need_walk(struct xr_need *nd, const char *dir, const char *at);
/* The counts into nd->n (blocks, inodes). */
void xr_need_total(struct xr_need *nd);

#endif /* EXTREF_NEED_INT_H */
