/*
 * update_int.h --- an existing image updated from a host directory
 * (extref_update_dir).
 *
 * update.c holds the entry point (the transaction, the target
 * directory); update_index.c hashes the data the image already holds
 * (every whole block, every file) into tables; update_walk.c walks the
 * source and puts each entry into the image, making inodes with the
 * populate path's makers (populate_inode.c); update_file.c writes one
 * regular file, sharing what the tables find (confirmed byte for byte)
 * and writing the rest; update_xattr.c makes an inode's extended
 * attributes equal the source's; update_check.c finds what would
 * stop the walk before anything changes.
 */
#ifndef EXTREF_UPDATE_INT_H
#define EXTREF_UPDATE_INT_H

#include "populate_int.h"

/* A whole block of a file: its hash, and where it is. */
struct xr_upd_blk {
	__u64		hash;
	ext2_ino_t	ino;		/* 0: a free slot */
	__u32		lblk;
};

/* A regular file: the hash of its block hashes, and its size. */
struct xr_upd_file {
	__u64		hash;
	__u64		size;
	ext2_ino_t	ino;		/* 0: a free slot */
};

/* Open addressing tables keyed by hash; a key may repeat. */
struct xr_upd_index {
	struct xr_upd_blk	*b;
	size_t			bcap, bn;	/* bcap a power of two */
	struct xr_upd_file	*f;
	size_t			fcap, fn;
	__u64			zero_hash;	/* of a block of zeros */
};

struct xr_upd {
	extref_fs_t		xfs;
	ext2_filsys		fs;
	struct xr_pop		p;		/* the inode makers' state */
	struct extref_populate	preq;		/* their flags */
	struct extref_update	*u;
	struct xr_upd_index	ix;
	struct xr_pop_table	links;		/* (dev, ino) -> image inode */
	struct xr_pop_xattrs	xa;
	char			*a, *b;		/* XR_POP_STAGE_BYTES each */
	__u64			*bh;		/* a source file's block hashes */
	size_t			bh_cap;
	__u64			done;		/* source bytes handled */
	ext2_ino_t		at_dir;		/* where a missing --at goes */
	char			at_name[EXT2_NAME_LEN + 1];
	char			path[4096];	/* the source entry */
	int			layer;		/* an archive, on layer_fd */
	int			layer_fd;
};

/* update_index.c */
__u64 xr_upd_hash(const void *buf, size_t len);
/* The key of a file's last, partial block of r bytes (hash: of the block
 * with zeros past EOF): only a tail of as many bytes matches it. */
__u64 xr_upd_tail_key(__u64 hash, unsigned int r);
/* The hash of a file from its block hashes (n of them) and size. */
__u64 xr_upd_file_hash(const __u64 *bh, size_t n, __u64 size);
/* The same, one block hash at a time: start, add each, end. */
struct xr_upd_fh {
	__u32	a, b;
};
void xr_upd_fh_start(struct xr_upd_fh *fh);
void xr_upd_fh_add(struct xr_upd_fh *fh, __u64 block_hash);
__u64 xr_upd_fh_end(const struct xr_upd_fh *fh, __u64 size);
/* Room for n block hashes in up->bh. */
errcode_t xr_upd_bh_room(struct xr_upd *up, size_t n);
errcode_t xr_upd_index_init(struct xr_upd *up);
void xr_upd_index_free(struct xr_upd_index *ix);
errcode_t xr_upd_add_blk(struct xr_upd_index *ix, __u64 hash,
			 ext2_ino_t ino, __u32 lblk);
errcode_t xr_upd_add_file(struct xr_upd_index *ix, __u64 hash, __u64 size,
			  ext2_ino_t ino);
/* Every whole block and every file of the image's regular files. */
errcode_t xr_upd_index_image(struct xr_upd *up);
/*
 * Visit the entries with hash h, from slot *pos (start at 0); NULL at
 * the end.
 */
const struct xr_upd_blk *xr_upd_blk_next(const struct xr_upd_index *ix,
					 __u64 h, size_t *pos);
const struct xr_upd_file *xr_upd_file_next(const struct xr_upd_index *ix,
					   __u64 h, size_t *pos);

/*
 * update_file.c: the regular file on fd (size bytes, metadata m) for
 * directory dir: *ino is keep when that inode holds the same bytes (0:
 * none may be kept), else a new inode in no directory yet.
 */
errcode_t xr_upd_file(struct xr_upd *up, int fd, ext2_ino_t dir,
		      const struct xr_pop_meta *m, __u64 size,
		      ext2_ino_t keep, ext2_ino_t *ino);
/* Does ino hold exactly the bytes of fd (size bytes)? */
errcode_t xr_upd_same_data(struct xr_upd *up, int fd, __u64 size,
			   ext2_ino_t ino, int *same);

/* update_xattr.c: ino gets x's attributes (exact: and no others). */
errcode_t xr_upd_sync_xattrs(struct xr_upd *up, ext2_ino_t ino,
			     const struct xr_pop_xattrs *x, int exact);

/* update_check.c: refuse, before any change, what the walk would
 * refuse midway (EXTREF_ERR_UPDATE_DIR). */
errcode_t xr_upd_check(struct xr_upd *up, const char *dir, ext2_ino_t ino);

/* update_fit.c: before the first run, the journal grown when an
 * estimate of the update's commit says it will not hold it (0 and
 * nothing changed when it will, or when the free space decides against:
 * the measured rerun of update.c is the fallback). */
/* u->note told what, n (NULL: nothing). */
void xr_upd_say(const struct extref_update *u, int what, unsigned int n);
errcode_t xr_upd_fit_first(extref_fs_t xfs, const char *dir,
			   struct extref_update *u);

/* update_verify.c: every in-use inode's extent tree checked before any
 * change, unless the open's full proof read them all. */
errcode_t xr_upd_verify(struct xr_upd *up);

/* update_delete.c: EXTREF_UPDATE_DELETE.  Remove name (ino) from dir,
 * a directory with everything below it; remove every name of dir that
 * names (n, sorted by strcmp) lacks. */
errcode_t xr_upd_remove_tree(struct xr_upd *up, ext2_ino_t dir,
			     const char *name, ext2_ino_t ino);
errcode_t xr_upd_delete_extra(struct xr_upd *up, ext2_ino_t dir,
			      char **names, size_t n);

/* update_layer.c: the archive on fd applied as one more OCI layer at
 * the image's root (extref_update_layer). */
errcode_t xr_upd_layer(struct xr_upd *up, int fd);
/* update_prescan.c: a layer in a regular file has its names and sizes
 * checked before anything changes (fd back where it was). */
errcode_t xr_upd_layer_prescan(struct xr_upd *up, int fd);
/* update_walk.c: the source directory dir into the image's dir ino. */
errcode_t xr_upd_walk(struct xr_upd *up, const char *dir, ext2_ino_t ino);

#endif /* EXTREF_UPDATE_INT_H */
