/*
 * shrink_int.h --- the walk of extref_build_shrink (build_shrink.c), in
 * its parts: the checks on the one open of the image (shrink_check.c),
 * what the copy keeps of it (shrink_keep.c), a copy built
 * (shrink_copy.c, shrink_mke2fs.c), the hidden directory and the
 * replacement (shrink_replace.c).
 */
#ifndef EXTREF_SHRINK_INT_H
#define EXTREF_SHRINK_INT_H

#include <limits.h>
#include "build_int.h"
#include "source_img.h"

/* What the copy keeps of the image, as mke2fs's arguments. */
struct xr_shrink_keep {
	unsigned int	blocksize;
	unsigned int	inode_size;
	int		journal;
	char		isize[16];
	char		uuid[40];
	char		label[EXT2_LABEL_LEN + 1];
	char		ext[64];		/* hash_seed=, or "" */
	char		features[1024];
};

/* The walk's state. */
struct xr_shrink {
	const char	*image;
	const struct extref_build_shrink_opts *o;
	struct extref_build_shrink_result *res;
	extref_image_lock_t lock;
	struct xr_src	src;		/* the image, open once (src.fs) */
	struct xr_shrink_keep keep;
	char		dir[PATH_MAX - 16];	/* the hidden directory, or "" */
	char		first[PATH_MAX], copy[PATH_MAX];
};

/* A callback of o (each may be NULL). */
void xr_shrink_note(const struct xr_shrink *s, unsigned int what);
/* res->why, printf-like; returns err. */
errcode_t xr_shrink_why(struct xr_shrink *s, errcode_t err, const char *fmt,
			...) __attribute__((format(printf, 3, 4)));

/* shrink_check.c: the refusals under the lock; s->src holds the image,
 * open read-only, attached and scanned; s->keep filled. */
errcode_t xr_shrink_check(struct xr_shrink *s);

/* shrink_keep.c: what the copy keeps of fs. */
void xr_shrink_keep_of(ext2_filsys fs, struct xr_shrink_keep *k);

/* shrink_mke2fs.c: path made by the stock mke2fs, bytes long, with
 * inodes and journal_mib (0: no journal) and what s keeps. */
errcode_t xr_shrink_mke2fs(struct xr_shrink *s, const char *path,
			   __u64 bytes, __u64 inodes, unsigned int journal_mib,
			   const char *source);

/* shrink_copy.c: a copy of src (opened and scanned) at path, deduplicated
 * with mode; *blocks its size. */
errcode_t xr_shrink_copy(struct xr_shrink *s, struct xr_src *src,
			 const char *source, const char *path, int mode,
			 __u64 *blocks);

/* shrink_replace.c: the hidden directory made (and registered), or
 * removed with what it holds; the copy put in the image's place. */
errcode_t xr_shrink_dir(struct xr_shrink *s);
void xr_shrink_dir_remove(struct xr_shrink *s);
errcode_t xr_shrink_replace(struct xr_shrink *s);

#endif /* EXTREF_SHRINK_INT_H */
