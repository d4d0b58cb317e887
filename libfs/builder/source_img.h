/*
 * source_img.h --- an ext4 or extref image read as a build's source
 * (source_img.c): opened read-only, never replayed; its regular files'
 * block runs; which of its blocks more than one file maps.
 */
#ifndef EXTREF_SOURCE_IMG_H
#define EXTREF_SOURCE_IMG_H

#include "populate_int.h"

/* One run of a file: lblk..+len at pblk, in the source's blocks. */
struct xr_src_run {
	blk64_t		lblk, pblk, len;
};

struct xr_src_runs {
	struct xr_src_run	*v;
	size_t			n, cap;
};

/* A range of source blocks two files or more map (sorted, disjoint). */
struct xr_src_range {
	blk64_t		start, len;
};

struct xr_src {
	ext2_filsys		fs;
	struct xr_src_range	*shared;
	size_t			nshared;
	/* what the scan found, for sizing an image */
	__u64			inodes, files, runs;
	__u64			dir_bytes;	/* directories' sizes */
	__u64			meta;		/* slow symlinks, xattr blocks */
	__u64			inline_files;	/* regular files, data inline */
	__u64			inline_dirs;	/* directories inline */
	__u64			distinct;	/* source blocks files map */
};

/* Open image read-only (no journal replay: one needing recovery is
 * refused, EXTREF_ERR_SOURCE_RECOVERY; nor one mounted read-write). */
errcode_t xr_src_open(const char *image, struct xr_src *s);
/* The same with fs, opened read-only by the caller: s owns it from here
 * (closed by xr_src_close, on error too). */
errcode_t xr_src_attach(ext2_filsys fs, struct xr_src *s);
/* Scan every inode: the shared ranges and the sizing counts. */
errcode_t xr_src_scan(struct xr_src *s);
void xr_src_close(struct xr_src *s);
/* What the scanned source takes in an image of bs-byte blocks
 * (extref_image_measure). */
void xr_src_measure(const struct xr_src *s, unsigned int bs,
		    struct extref_source_size *out);
/* The written runs of regular file ino, in file order, within its size;
 * a run outside the filesystem's data or out of order is
 * EXTREF_ERR_SOURCE_MAP.  Unwritten extents read as holes. */
errcode_t xr_src_runs(struct xr_src *s, ext2_ino_t ino,
		      struct ext2_inode_large *in, struct xr_src_runs *r);
/* Is source block b mapped by two files or more? */
int xr_src_is_shared(const struct xr_src *s, blk64_t b);

#endif /* EXTREF_SOURCE_IMG_H */
