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

/* What a source says of one entry. */
struct xr_pop_meta {
	__u16		mode;		/* type and permission bits */
	__u32		uid, gid;
	__u32		major, minor;	/* devices */
	struct timespec	atime, mtime, ctime, crtime;
	int		has_crtime;
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
#define XR_POP_STAGE_BYTES	(1024 * 1024)

struct xr_pop {
	ext2_filsys		fs;
	struct extref_populate	*req;
	int			isz;		/* inode size */
	struct ext2_inode_large	*in;		/* isz bytes */
	char			*stage;		/* XR_POP_STAGE_BYTES */
	char			*blk;		/* one block */
	char			*zero;		/* one block of zeros */
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
};

/* populate_data.c */
errcode_t xr_pop_data_begin(struct xr_pop *p, ext2_ino_t ino,
			    struct ext2_inode_large *in,
			    struct xr_pop_data *d);
/* The bytes at off (increasing from call to call) of the file. */
errcode_t xr_pop_data_put(struct xr_pop_data *d, __u64 off, const void *buf,
			  size_t len);
/* Everything put is in the image; the inode (in) is not written. */
errcode_t xr_pop_data_end(struct xr_pop_data *d);
void xr_pop_data_abort(struct xr_pop_data *d);

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

/* populate_acl.c: libarchive's ACLs as Linux's xattr (version 2). */
struct archive_entry;
errcode_t xr_pop_archive_acl(struct archive_entry *e, int type,
			     void **buf, size_t *len);

/* populate_dir.c, populate_archive.c */
errcode_t xr_pop_walk_dir(struct xr_pop *p, const char *dir);
/* populate_dir.c's readers, for the update path (update_walk.c). */
struct statx;
void xr_pop_meta_of(const struct statx *st, struct xr_pop_meta *m);
errcode_t xr_pop_read_xattrs(const char *path, struct xr_pop_xattrs *x);
/* The names of the directory on fd, sorted (strcmp); each malloc'd. */
errcode_t xr_pop_list_dir(int fd, char ***names, size_t *n);
errcode_t xr_pop_read_archive(struct xr_pop *p, int fd);
/* Record where the error is (and why); keeps the first. */
void xr_pop_fail(struct xr_pop *p, const char *where, const char *why);

#endif /* EXTREF_POPULATE_INT_H */
