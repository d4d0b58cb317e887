/*
 * extref_fsck_int.h --- private state of the checker.
 */
#ifndef EXTREF_FSCK_INT_H
#define EXTREF_FSCK_INT_H

#include "extref_fsck.h"
#include "base/extref_vec.h"
#include "base/xr_search.h"

struct xr_problem {
	int		code;
	const char	*name;
	const char	*description;
	const char	*fix;		/* what the repair does; NULL: none */
	int		preen_ok;
};

/* One extent mapping: 16 bytes, so memory grows with mappings only. */
struct xr_mapping {
	blk64_t		pblk;
	__u32		ino;
	__u16		len;		/* at most XR_MAP_MAX_LEN */
	__u16		count;		/* identical mappings merged */
};
#define XR_MAP_MAX_LEN	32768	/* an ext4 extent's largest length */

/*
 * The probe's mapping (fsck_lean.c): 8 bytes, block << 31 | (len - 1) << 16
 * | count, without the inode, which only a problem's message needs.
 */
#define XR_LEAN_PBLK_SHIFT	31
#define XR_LEAN_MAX_BLOCKS	(1ULL << 33)	/* blocks it can number */

/* A metadata range (never shared). */
struct xr_meta {
	blk64_t		pblk;
	blk64_t		len;
	__u32		ino;		/* 0 for group metadata */
	__u32		kind;
};
#define XR_META_GROUP	0	/* superblock, descriptors, bitmaps, tables */
#define XR_META_INDEX	1	/* extent index or indirect block */
#define XR_META_XATTR	2	/* external xattr block */
#define XR_META_TREE	3	/* a block of inode 5 */

/* An extent tree block waiting to be read (fsck_extents.c). */
struct xr_node_ref {
	blk64_t		pblk;
	__u32		ino;
	__u16		depth;		/* its eh_depth, as its parent says */
	__u16		pad;
};

/* A directory entry's inode and the directory (fsck_names.c). */
struct xr_parent {
	__u32		ino;
	__u32		dir;
};


/* A file's extent tree problem met by the scan, reported after it. */
struct xr_scan_bad {
	blk64_t		blk;		/* the node two parents point to */
	errcode_t	why;		/* 0: blk is also a node of other */
	__u32		ino;
	__u32		other;
};

/* A problem found before its repair is decided (tree problems). */
struct xr_pending_problem {
	int		code;
	char		*detail;
};

struct xr_fsck {
	ext2_filsys			fs;
	blk64_t				first_block, nblocks;	/* of fs */
	const struct extref_fsck_opts	*opts;
	struct extref_fsck_result	*res;

	struct xr_mapping	*map;		/* data mappings */
	size_t			nmap, capmap;
	__u64			*lean;		/* or, in the probe, these */
	size_t			caplean;
	__u32			*lean_hash;	/* recent keys (fsck_lean.c) */
	size_t			lean_tries, lean_hits;
	int			lean_hash_tried;
	struct xr_meta		*meta;
	size_t			nmeta, capmeta;
	struct xr_node_ref	*nodes;		/* extent blocks still to read */
	size_t			nnodes, capnodes;
	struct xr_scan_bad	*bad;		/* extent trees that failed */
	size_t			nbad, capbad;

	__u32			*dirs;		/* directories met by the scan */
	size_t			ndirs, capdirs;
	struct xr_parent	*parents;	/* loaded on the first name */
	size_t			nparents, capparents;
	int			parents_loaded;

	struct extref_rec	*uns;		/* ranges to copy; count:
						   XR_UNS_KEEP_* */
	size_t			nuns, capuns;

	struct xr_pending_problem *pend;	/* tree problems to report */
	size_t			npend, cappend;

	int			had_feature;	/* shared_blocks was set */
	int			plain;		/* not an extref image at all */
	int			tree_present;	/* inode 5 holds a header */
	int			tree_bad;	/* structure problems found */
	int			need_rebuild;
	int			preen_stop;	/* a problem -p may not fix */
	int			no_fix;		/* report only, whatever the mode */
	int			extents_bad;	/* a file's extent tree failed */
	int			probe;		/* silent first look (lean) */
	int			probe_dirty;	/* it met a problem */
	unsigned		progress_calls;	/* progress reports made */
	unsigned		progress_skip;	/* ... the probe made already */
	errcode_t		err;		/* first operational error */
	/* a rebuild that writes its new blocks early (fsck_txn.c): spill
	 * once spill_half blocks are held since the room was spill_mark */
	blk64_t			spill_half;	/* 0: it does not */
	blk64_t			spill_mark;
};

/*
 * The i-th data mapping, whichever form the mappings take (in the
 * probe, the inode is not kept: 0).
 */
static inline blk64_t xr_map_pblk(const struct xr_fsck *c, size_t i)
{
	return c->lean ? c->lean[i] >> XR_LEAN_PBLK_SHIFT : c->map[i].pblk;
}

static inline blk64_t xr_map_len(const struct xr_fsck *c, size_t i)
{
	return c->lean ? ((c->lean[i] >> 16) & 0x7fff) + 1 : c->map[i].len;
}

static inline unsigned xr_map_count(const struct xr_fsck *c, size_t i)
{
	return c->lean ? (unsigned)(c->lean[i] & 0xffff) : c->map[i].count;
}

static inline ext2_ino_t xr_map_ino(const struct xr_fsck *c, size_t i)
{
	return c->lean ? 0 : c->map[i].ino;
}

static inline __u64 xr_lean_key(blk64_t pblk, unsigned len)
{
	return ((__u64)pblk << XR_LEAN_PBLK_SHIFT) |
	       ((__u64)(len - 1) << 16) | 1;
}

/* fsck_scan.c, fsck_lean.c: what xr_fsck_map below calls */
errcode_t xr_fsck_add_mapping(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			      ext2_ino_t ino);
errcode_t xr_fsck_lean_add_key(struct xr_fsck *c, __u64 key);
#define XR_LEAN_HASH_FROM	16384	/* keys before the hash is tried */

/*
 * The probe's record of one piece of a mapping: the same blocks as the
 * last key (any inode's: the probe keeps no inode) count on it, below
 * the count's limit; else fsck_lean.c looks further or appends.
 */
static inline errcode_t xr_fsck_lean_put(struct xr_fsck *c, __u64 key)
{
	__u64 *last = c->nmap ? &c->lean[c->nmap - 1] : NULL;

	if (last && (*last | 0xffff) == (key | 0xffff) &&
	    (*last & 0xffff) != 0xffff) {
		(*last)++;
		return 0;
	}
	if (c->lean_hash || c->nmap >= c->caplean ||
	    (!c->lean_hash_tried && c->nmap >= XR_LEAN_HASH_FROM))
		return xr_fsck_lean_add_key(c, key);
	c->lean[c->nmap++] = key;
	return 0;
}

/* Record a mapping (xr_fsck_add_mapping), the probe's common case inline. */
static inline errcode_t xr_fsck_map(struct xr_fsck *c, blk64_t pblk,
				    blk64_t len, ext2_ino_t ino)
{
	if (!c->probe || len > XR_MAP_MAX_LEN)
		return xr_fsck_add_mapping(c, pblk, len, ino);
	c->res->mappings++;
	return xr_fsck_lean_put(c, xr_lean_key(pblk, len));
}

/* problem.c */
const struct xr_problem *xr_problem_find(int code);
int xr_problem(struct xr_fsck *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
errcode_t xr_problem_defer(struct xr_fsck *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int xr_problems_flush(struct xr_fsck *c);

/* fsck_progress.c (the passes' and the driver's) */
void xr_fsck_progress(struct xr_fsck *c, int pass, __u64 done, __u64 total);
/* fsck_lean.c (the probe's mappings) */
int xr_fsck_lean_fits(const struct xr_fsck *c);
errcode_t xr_fsck_lean_add(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			   ext2_ino_t ino);
void xr_fsck_lean_sort(struct xr_fsck *c);
size_t xr_fsck_lean_first(const struct xr_fsck *c, blk64_t b);
/* fsck_scan.c (pass 1) */
errcode_t xr_fsck_scan(struct xr_fsck *c);
errcode_t xr_fsck_add_meta(struct xr_fsck *c, blk64_t pblk, blk64_t len,
			   ext2_ino_t ino, int kind);
/* fsck_extents.c (pass 1, extent trees) */
int xr_fsck_in_fs(const struct xr_fsck *c, blk64_t pblk, blk64_t len);
errcode_t xr_fsck_extent_root(struct xr_fsck *c, ext2_ino_t ino,
			      const struct ext2_inode *inode);
errcode_t xr_fsck_extent_nodes(struct xr_fsck *c);
errcode_t xr_fsck_scan_bad(struct xr_fsck *c, ext2_ino_t ino, errcode_t why,
			   ext2_ino_t other, blk64_t blk);
/* fsck_names.c */
errcode_t xr_fsck_note_dir(struct xr_fsck *c, ext2_ino_t ino);
const char *xr_fsck_ino_name(struct xr_fsck *c, ext2_ino_t ino, char *buf,
			     size_t len);
const char *xr_fsck_range(blk64_t s, blk64_t e, char *buf, size_t len);
errcode_t xr_fsck_owner_inos(struct xr_fsck *c, blk64_t s, blk64_t e,
			     __u32 **v, size_t *n);
errcode_t xr_fsck_owners(struct xr_fsck *c, blk64_t s, blk64_t e,
			 size_t max, char **out);
void xr_fsck_names_free(struct xr_fsck *c);
#define XR_NAME_LEN	256	/* room for "N (/path)", the path cut */
/* fsck_sort.c */
void xr_sort_mappings(struct xr_mapping *v, size_t n);
void xr_sort_meta(struct xr_meta *v, size_t n);
void xr_sort_nodes(struct xr_node_ref *v, size_t n);
void xr_sort_parents(struct xr_parent *v, size_t n);
void xr_sort_keys(__u64 *v, size_t n, int min_shift);

/* fsck_sweep.c */
typedef errcode_t (*xr_rec_sink)(const struct extref_rec *r, void *priv);
void xr_fsck_sort(struct xr_fsck *c);
size_t xr_fsck_first_map(const struct xr_fsck *c, blk64_t b);
errcode_t xr_fsck_sweep(struct xr_fsck *c, xr_rec_sink sink, void *priv);
void xr_fsck_check_metadata(struct xr_fsck *c);
errcode_t xr_fsck_check_bitmap(struct xr_fsck *c);
errcode_t xr_fsck_read_bitmaps(struct xr_fsck *c, int block_only);
/* fsck_treeblocks.c (pass 1: inode 5's blocks against other owners) */
errcode_t xr_fsck_check_tree_blocks(struct xr_fsck *c);
/* fsck_compare.c (passes 2, 3) */
errcode_t xr_fsck_structure(struct xr_fsck *c);
errcode_t xr_fsck_compare(struct xr_fsck *c);
/* fsck_foreign.c (pass 3: files another tool may have changed) */
errcode_t xr_fsck_foreign(struct xr_fsck *c);
/* fsck_unshare.c */
/*
 * keep: how many mappings of each block keep it, those of its oldest
 * owners (the rest get copies): XR_UNS_KEEP_NONE for a block that is
 * metadata (every file copies), the record's count for a count too low,
 * or XR_UNS_KEEP_SPECIAL: directories and reserved inodes keep theirs.
 */
#define XR_UNS_KEEP_NONE	0U
#define XR_UNS_KEEP_FIRST	1U
#define XR_UNS_KEEP_SPECIAL	0xffffffffU
errcode_t xr_fsck_note_unshare(struct xr_fsck *c, blk64_t s, blk64_t e,
			       __u32 keep);
errcode_t xr_fsck_unshare(struct xr_fsck *c);
/* fsck_special.c */
int xr_fsck_special_ino(const struct xr_fsck *c, ext2_ino_t ino);
void xr_fsck_check_special(struct xr_fsck *c);
int xr_fsck_range_special(const struct xr_fsck *c, blk64_t s, blk64_t e);

/* fsck_repair.c */
errcode_t xr_fsck_rebuild(struct xr_fsck *c);
/* fsck_txn.c: a repair as the journal's transactions (no-ops without) */
errcode_t xr_fsck_tx_begin(struct xr_fsck *c, int atomic);
errcode_t xr_fsck_tx_end(struct xr_fsck *c, errcode_t err);
errcode_t xr_fsck_tx_split(struct xr_fsck *c);
errcode_t xr_fsck_tx_before_rebuild(struct xr_fsck *c);
errcode_t xr_fsck_tx_rebuild_point(struct xr_fsck *c);
/* fsck_trust.c: a read-only run, fs's bitmaps left as they came */
errcode_t xr_fsck_look(ext2_filsys fs, const struct extref_fsck_opts *o,
		       struct extref_fsck_result *res);

#endif /* EXTREF_FSCK_INT_H */
