/*
 * build_int.h --- the image-file steps of the builder (extref_build_*),
 * inside the library: lean.c gives a new filesystem its tree without
 * reading every bitmap, punch.c hands the blocks a run freed back to the
 * host, format.c's channel of a new image flushes nothing until one
 * fsync at the end, build_ident.c derives a reproducible build's UUID
 * and hash seed.
 */
#ifndef EXTREF_BUILD_INT_H
#define EXTREF_BUILD_INT_H

#include <ext2fs/ext2fs.h>
#include "extref.h"
#include "extref_builder.h"

/* A new filesystem's fewest blocks: our floor, before mke2fs's. */
#define XR_BUILD_MIN_BLOCKS	64

/* lean.c: the tree's block without reading every bitmap. */
struct xr_lean {
	int		active;		/* xr_lean_begin() took the bitmap */
	dgrp_t		group;		/* the group whose bitmap is loaded */
	char		*buf;		/* one block */
	void		*gd;		/* the descriptors as opened */
};
/* 0: fs->block_map is the partial bitmap; -1: declined (nothing done). */
int xr_lean_begin(ext2_filsys fs, struct xr_lean *l);
/* Write what changed; the close then writes only the superblocks. */
errcode_t xr_lean_end(ext2_filsys fs, struct xr_lean *l);
void xr_lean_free(struct xr_lean *l);

/* punch.c: the blocks a run freed leave the image file. */
struct xr_punch_range {
	blk64_t		start, len;
};
struct xr_punch_list {
	struct xr_punch_range *v;
	size_t		n, cap;
	unsigned int	blocksize;
};
/* A copy of fs's block bitmap as it is now, to compare with later. */
errcode_t xr_punch_snapshot(ext2_filsys fs, ext2fs_block_bitmap *before);
/* The runs of blocks in use in before and free in fs now, into l (empty
 * on entry); before is freed. */
errcode_t xr_punch_plan(ext2_filsys fs, ext2fs_block_bitmap before,
			struct xr_punch_list *l);
/*
 * Once the frees are on disk (fs closed): punch l's runs out of the
 * image file, after an fsync, those blocks only that the image read back
 * from the disk has free (none while its journal needs recovery).
 * *bytes counts what was punched.  A block device, or a filesystem that
 * cannot punch, is left alone (0).
 */
errcode_t xr_punch_apply(const char *image, struct xr_punch_list *l,
			 __u64 *bytes);
void xr_punch_free(struct xr_punch_list *l);

/* format.c: the one fsync of a new image file. */
errcode_t xr_build_sync(const char *path);
/* The options' clock on fs (EXTREF_BUILD_EPOCH). */
void xr_build_clock(ext2_filsys fs, const struct extref_build_opts *o);

/* build_populate.c: image (new, just formatted) opened without its tree
 * nor journal transactions, o's clock; filled by fill, its quotas
 * recomputed, closed (aborted on error). */
typedef errcode_t (*xr_build_fill_func)(extref_fs_t xfs, void *arg);
errcode_t xr_build_fill(const char *image, const struct extref_build_opts *o,
			xr_build_fill_func fill, void *arg);

/* build_look.c: whether image's journal needs recovery, and the first
 * group whose descriptor's checksum is wrong (-1: none); one read-only
 * open. */
errcode_t xr_build_look(const char *image, int *dirty, int *bad);
/* The journal replayed by a read-write open under the caller's lock;
 * note told how many transactions. */
errcode_t xr_build_replay(const char *image, extref_note_func note,
			  void *priv);

/* build_ident.c: a build's UUID and directory hash seed (both as
 * text, lowercase) from epoch, label (may be NULL) and the source's
 * digest (XR_DIGEST_SIZE bytes, or NULL: no source); the seed's
 * namespace is uuid_given when that parses as a UUID (may be NULL). */
#define XR_DIGEST_SIZE	32
void xr_build_ident(long long epoch, const char *label,
		    const unsigned char *digest, const char *uuid_given,
		    char uuid[37], char seed[37]);

/* convert_left.c: whether undo is an undo file an interrupted --convert
 * left (it holds e2fsprogs' undo header). */
int xr_undo_left(const char *undo);
/* Whether a writer holds image now (its undo file is then its own): the
 * write lock tried, and given back. */
int xr_held_by_a_writer(const char *image);

/*
 * build_convert.c, build_undo.c: e2fsprogs 1.47.0's undo io manager frees
 * the block map it makes at its first write with the 32-bit bitmap call,
 * which ignores a 64-bit map: a leak of some 300 bytes a run, not ours.
 * Sanitized builds are told to ignore the allocations of that first
 * write (between undo_leak_off() and undo_leak_on()), and nothing else.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define undo_leak_off()		__lsan_disable()
#define undo_leak_on()		__lsan_enable()
#else
#define undo_leak_off()		do { } while (0)
#define undo_leak_on()		do { } while (0)
#endif

/* update_total.c: the update's bar given its end (the source's bytes):
 * u's progress wrapped from begin to end. */
struct xr_update_total {
	extref_progress_func	fn;
	void			(*note)(int what, unsigned int n, void *priv);
	void			*priv;
	struct extref_update	*u;
	__u64			total;
};
void xr_update_total_begin(struct xr_update_total *t, const char *dir,
			   int layer_fd, struct extref_update *u);
void xr_update_total_cb(const char *phase, __u64 done, __u64 total,
			void *priv);
void xr_update_total_end(struct xr_update_total *t);

#endif /* EXTREF_BUILD_INT_H */
