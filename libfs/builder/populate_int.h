/*
 * populate_int.h --- the builder's populate path, inside the library.
 *
 * populate.c holds the entry points; populate_dir.c walks a host
 * directory, populate_archive.c reads an archive entry by entry (with
 * populate_acl.c for its ACLs); both describe each entry as an
 * xr_pop_meta and make it with populate_inode.c; a regular file's data
 * goes through populate_data.c (one function writes a file's data, so
 * that a planned allocation can replace it); populate_table.c maps
 * names (an archive's paths, a host file's device and inode) to the
 * image's inodes.
 */
#ifndef EXTREF_POPULATE_INT_H
#define EXTREF_POPULATE_INT_H

#include <time.h>
#include "tree/extref_int.h"
#include "ops/extref_ops_int.h"
#include "extref_builder.h"

/* What a source says of one entry. */
struct xr_pop_meta {
	__u16		mode;		/* type and permission bits */
	__u32		uid, gid;
	__u32		major, minor;	/* devices */
	struct timespec	atime, mtime, ctime, crtime;
	int		has_crtime;
	__u32		generation;	/* i_generation (0: none given) */
	__u32		projid;		/* with has_projid */
	int		has_projid;
};

struct xr_pop_xattr {
	const char	*name;
	const void	*value;
	size_t		len;
};

struct xr_pop_xattrs {
	struct xr_pop_xattr	*v;
	size_t			n, cap;
	char			*store;		/* the source's own buffers */
};

/* Data staged for one write: this many blocks at most. */
#define XR_POP_STAGE_BYTES	(256 * 1024)

struct xr_pop {
	ext2_filsys		fs;
	struct extref_populate	*req;
	int			isz;		/* inode size */
	struct ext2_inode_large	*in;		/* isz bytes */
	char			*stage;		/* XR_POP_STAGE_BYTES */
	char			*blk;		/* one block */
	char			*zero;		/* one block of zeros */
	struct xr_pop_dd	*dd;		/* NULL: every block written */
	struct xr_pop_fdd	*fdd;		/* file dedupe, or NULL */
	int			keep_acr;	/* xr_pop_set_meta leaves the
						 * access, change and creation
						 * times (an update's entry) */
};

/* A regular file's data on its way into the image. */
struct xr_pop_data {
	struct xr_pop		*p;
	ext2_ino_t		ino;
	struct ext2_inode_large	*in;
	ext2_extent_handle_t	h;
	struct ext2fs_extent	cur;		/* the extent growing; e_len 0 */
	int			inserted;	/* an extent is in the tree */
	blk64_t			goal;
	blk64_t			st_lblk, st_n;	/* the staged run */
	blk64_t			part_lblk;	/* the block in p->blk */
	int			part;		/* p->blk holds part_lblk */
	__u64			size;		/* end of the data put */
	__u64			fsig;		/* file dedupe: the signature */
	blk64_t			fblocks;	/* and its non-zero blocks */
};

/* populate_data.c */
/* ext4's largest file with fs's block size (the kernel's ext4_max_size:
 * logical blocks below 2^32-1; without huge_file, i_blocks's limit). */
__u64 xr_pop_max_size(ext2_filsys fs);
/* EXTREF_ERR_FILE_TOO_BIG, the limit told in p, for a file of size
 * bytes past it; else 0.  Every source's file sizes and data pass it. */
errcode_t xr_pop_size_check(struct xr_pop *p, __u64 size);
errcode_t xr_pop_data_begin(struct xr_pop *p, ext2_ino_t ino,
			    struct ext2_inode_large *in,
			    struct xr_pop_data *d);
/* The bytes at off (increasing from call to call) of the file. */
errcode_t xr_pop_data_put(struct xr_pop_data *d, __u64 off, const void *buf,
			  size_t len);
/* Everything put is in the image; the inode (in) is not written. */
errcode_t xr_pop_data_end(struct xr_pop_data *d);
void xr_pop_data_abort(struct xr_pop_data *d);
/* Map lblk..+len of the file to pblk (the extent grows or is emitted). */
errcode_t xr_pop_data_map(struct xr_pop_data *d, blk64_t lblk, blk64_t pblk,
			  blk64_t len);

/* Map lblk..+len to pblk, blocks the caller allocated, wrote and
 * counts; what is staged before them goes in first. */
errcode_t xr_pop_data_share(struct xr_pop_data *d, blk64_t lblk,
			    blk64_t pblk, blk64_t len);

/*
 * One block read past libext2fs's block cache (a byte count, which unix
 * io reads straight from the file after writing out dirty cached
 * blocks): a block read through the cache can stay there, clean and
 * stale, after a write of more than a few blocks goes around it.
 */
errcode_t xr_pop_read_block(ext2_filsys fs, blk64_t blk, void *buf);

/* blockhash.c: a block's 64-bit hash (candidates only, never trusted). */
__u64 xr_block_hash(const void *buf, size_t len);

/* populate_dedupe.c: block dedupe planned as the data goes in. */
struct xr_pop_dd;
/* A table for about hint distinct blocks (it grows past that). */
errcode_t xr_pop_dd_init(struct xr_pop *p, __u64 hint);
/* The staged run of d written, each distinct block once. */
errcode_t xr_pop_dd_write(struct xr_pop_data *d);
/* ino (a regular file, going) gives back its blocks no one else maps. */
errcode_t xr_pop_dd_punch(struct xr_pop *p, ext2_ino_t ino,
			  struct ext2_inode *in);
/* The shared blocks' counts bulk-loaded into the tree. */
errcode_t xr_pop_dd_finish(struct xr_pop *p);
void xr_pop_dd_free(struct xr_pop *p);
/* 0 when the image's tree holds no record, else EXTREF_ERR_INO5_BUSY. */
errcode_t xr_pop_tree_is_empty(ext2_filsys fs);
/* The empty tree of a new image replaced by r (sorted, not overlapping;
 * touching records with one count are merged), in one bulk load. */
errcode_t xr_pop_tree_load(ext2_filsys fs, const struct extref_rec *r,
			   size_t n);

/* populate_fdedupe.c: file dedupe as the files go in. */
struct xr_pop_fdd;
errcode_t xr_pop_fdd_init(struct xr_pop *p);
/* A file's signature with one more non-zero block. */
__u64 xr_pop_fdd_mix(__u64 sig, blk64_t lblk, const void *block,
		     unsigned int bs);
/* d's data all in (the inode not yet written): a copy maps the first. */
errcode_t xr_pop_fdd_end(struct xr_pop_data *d);
errcode_t xr_pop_fdd_punch(struct xr_pop *p, ext2_ino_t ino,
			   struct ext2_inode *in);
errcode_t xr_pop_fdd_finish(struct xr_pop *p);
void xr_pop_fdd_free(struct xr_pop *p);

/* populate_inode.c: one inode of each kind, linked as name in dir. */
errcode_t xr_pop_mkdir(struct xr_pop *p, ext2_ino_t dir, const char *name,
		       const struct xr_pop_meta *m, ext2_ino_t *ino);
errcode_t xr_pop_special(struct xr_pop *p, ext2_ino_t dir, const char *name,
			 const struct xr_pop_meta *m, ext2_ino_t *ino);
errcode_t xr_pop_symlink(struct xr_pop *p, ext2_ino_t dir, const char *name,
			 const struct xr_pop_meta *m, const char *target,
			 ext2_ino_t *ino);
/* A regular file: begin makes it and starts d; the caller puts the
 * data and ends with xr_pop_file_end (which links it). */
errcode_t xr_pop_file_begin(struct xr_pop *p, const struct xr_pop_meta *m,
			    ext2_ino_t dir, struct xr_pop_data *d);
errcode_t xr_pop_file_end(struct xr_pop_data *d, ext2_ino_t dir,
			  const char *name);
errcode_t xr_pop_hardlink(struct xr_pop *p, ext2_ino_t dir, const char *name,
			  ext2_ino_t ino);
/* populate_replace.c: unlink name (ino, not a directory) from dir. */
errcode_t xr_pop_remove(struct xr_pop *p, ext2_ino_t dir, const char *name,
			ext2_ino_t ino);
/* populate_replace.c: unlink name (ino, an empty directory) from dir and
 * free it. */
errcode_t xr_pop_remove_dir(struct xr_pop *p, ext2_ino_t dir,
			    const char *name, ext2_ino_t ino);
/* Give an existing directory (the root, or one met again) m. */
errcode_t xr_pop_set_meta(struct xr_pop *p, ext2_ino_t ino,
			  const struct xr_pop_meta *m, int set_owner,
			  int set_mode);
/* Add the extended attributes x to ino. */
errcode_t xr_pop_set_xattrs(struct xr_pop *p, ext2_ino_t ino,
			    const struct xr_pop_xattrs *x);

/* Append an attribute (name and value stay the caller's); ENOMEM. */
errcode_t xr_pop_xattrs_add(struct xr_pop_xattrs *x, const char *name,
			    const void *value, size_t len);
void xr_pop_xattrs_reset(struct xr_pop_xattrs *x);

/* populate_table.c: a key (bytes) to an inode. */
struct xr_pop_table {
	struct xr_pop_slot	*v;
	size_t			cap, n;
};
errcode_t xr_pop_table_put(struct xr_pop_table *t, const void *key,
			   size_t len, ext2_ino_t ino, int is_dir);
/* 0 when key is absent; else its inode, and *is_dir. */
ext2_ino_t xr_pop_table_get(const struct xr_pop_table *t, const void *key,
			    size_t len, int *is_dir);
void xr_pop_table_free(struct xr_pop_table *t);

/* populate_archive.c: an archive path normalised into out (no "."
 * component, no "//", no trailing "/"; "" the root); -1 for an absolute
 * path, a ".." component or one too long. */
int xr_pop_normalise(const char *in, char *out, size_t len);
/* names.c: why name[0..len), one component of a source's path (last:
 * the path's last), cannot be a name in the image, or NULL when it can;
 * layer: an OCI layer's whiteout rules too.  The one check of every
 * source's names. */
const char *xr_name_why(const char *name, size_t len, int layer, int last);
/* The same for each component of a normalised path. */
const char *xr_path_why(const char *path, int layer);
struct archive_entry;
/* What the archive says of entry e (not a hard link). */
errcode_t xr_pop_archive_meta(struct archive_entry *e,
			      struct xr_pop_meta *m);

/* populate_acl.c: an archive entry's ACLs as Linux's xattrs (version
 * 2), and the mode they give. */
struct archive_entry;
errcode_t xr_pop_archive_acls(struct archive_entry *e,
			      struct xr_pop_xattrs *x, void *bufs[2], int dir,
			      __u16 *mode, char *why, size_t whylen);

/* measure.c: what a source's files take, before the image is made. */
struct xr_measure {
	struct extref_source_size *s;
	unsigned int	bs;
	int		mode;		/* enum extref_dedupe_mode */
	char		*zero, *blk;	/* one block each */
	__u64		*set;		/* hashes seen (0: an empty slot) */
	size_t		mask, n;
	__u64		fsig;		/* this file's signature */
	blk64_t		nblocks;	/* and its non-zero blocks */
	blk64_t		part_lblk;	/* the block in blk */
	int		part;
};
/* extref_source_measure; on error failed (failed_len bytes) names the
 * entry that could not be read (dir itself if it failed there). */
errcode_t xr_measure_dir(const char *dir, unsigned int blocksize, int mode,
			 extref_progress_func progress, void *priv,
			 struct extref_source_size *s, char *failed,
			 size_t failed_len);
errcode_t xr_measure_begin(struct xr_measure *m, struct extref_source_size *s,
			   unsigned int bs, int mode);
void xr_measure_file_begin(struct xr_measure *m);
/* Whole blocks from off (a block boundary); a short last one is padded
 * in p, which has room for it. */
errcode_t xr_measure_blocks(struct xr_measure *m, __u64 off, char *p,
			    size_t len);
/* Bytes at increasing offsets, in pieces of any size. */
errcode_t xr_measure_put(struct xr_measure *m, __u64 off, const void *buf,
			 size_t len);
errcode_t xr_measure_file_end(struct xr_measure *m, __u64 size);
/* Sets s->distinct_blocks for mode NONE; frees m. */
void xr_measure_end(struct xr_measure *m);

/* populate_dir.c, populate_archive.c */
errcode_t xr_pop_walk_dir(struct xr_pop *p, const char *dir);
/* populate_dir.c's readers, for the update path (update_walk.c). */
struct statx;
void xr_pop_meta_of(const struct statx *st, struct xr_pop_meta *m);
errcode_t xr_pop_read_xattrs(const char *path, struct xr_pop_xattrs *x);
/* The names of the directory on fd, sorted (strcmp); each malloc'd. */
errcode_t xr_pop_list_dir(int fd, char ***names, size_t *n);
void xr_pop_free_names(char **names, size_t n);
/*
 * A walk of source directories: path (of size bytes) holds the
 * directory's path; each name in turn is appended ("/name") while fn
 * handles it, told the directory dfd, the image's directory dir and the
 * path's new length.  An error of fn names the entry in p (xr_pop_fail)
 * and ends the walk.
 */
struct xr_pop_dirwalk {
	struct xr_pop	*p;
	char		*path;
	size_t		size;
	errcode_t	(*fn)(void *ctx, int dfd, ext2_ino_t dir,
			      const char *name, size_t plen);
	void		*ctx;
	/* after each whole entry (may be NULL); its error names no entry */
	errcode_t	(*after)(void *ctx);
};
/* Each name of dfd, sorted, its path plen long; with keep set the names
 * are handed over whatever the result (xr_pop_free_names), else freed. */
errcode_t xr_pop_each_name(const struct xr_pop_dirwalk *dw, int dfd,
			   ext2_ino_t dir, size_t plen, char ***keep,
			   size_t *kept);
errcode_t xr_pop_read_archive(struct xr_pop *p, int fd);
/* The archive on fd as layer number layer over what the image holds
 * (populate_layers.c); oci: whiteouts apply. */
errcode_t xr_pop_read_layer(struct xr_pop *p, int fd, unsigned int layer,
			    int oci);
/* populate_image.c: an ext4 or extref image's tree (source_img.c opens
 * it and finds which of its blocks are shared); src (or NULL): the
 * source opened and scanned already, image not used. */
struct xr_src;
errcode_t xr_pop_read_image(struct xr_pop *p, const char *image,
			    struct xr_src *src);
/* populate.c: extref_populate_image from src, opened and scanned. */
errcode_t xr_populate_src(extref_fs_t xfs, struct xr_src *src,
			  struct extref_populate *req);

/* Record where the error is (and why); keeps the first. */
void xr_pop_fail(struct xr_pop *p, const char *where, const char *why);

#endif /* EXTREF_POPULATE_INT_H */
