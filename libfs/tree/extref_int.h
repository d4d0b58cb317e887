/*
 * extref_int.h --- private structures of libextref.
 *
 * The tree is held in memory as decoded nodes (struct xr_node).  A node is
 * read from disk the first time a walk needs it and stays cached until the
 * tree is freed.  Changes are made to the cached nodes only; commit.c
 * writes them copy-on-write (every changed node goes to a block that the
 * committed tree does not use) and then the header, the commit point.
 */
#ifndef EXTREF_INT_H
#define EXTREF_INT_H

#include "extref.h"
#include "base/extref_vec.h"
#include "base/xr_fault.h"
#include "xr_hdr.h"

/* An interior entry in memory. */
struct xr_key {
	blk64_t		key;
	__u32		child;		/* lblk of the child on disk, 0 if new */
	struct xr_node	*ptr;		/* cached child, NULL until loaded */
};

struct xr_node {
	__u32		lblk;		/* committed location, 0 if never written */
	int		level;		/* 0 = leaf */
	int		nr;
	int		dirty;		/* changed since the last commit */
	union {
		struct extref_rec	*recs;	/* level 0 */
		struct xr_key		*keys;	/* level > 0 */
	} u;
};

/* A growable array of lblks. */
struct xr_lblk_vec {
	__u32		*v;
	size_t		n, cap;
};

struct extref_tree {
	ext2_filsys	fs;
	int		flags;
	__u32		seed;		/* crc32c seed */
	unsigned int	bs;
	unsigned int	cap;		/* entries per node in use */
	unsigned int	disk_cap;	/* entries per node the block holds */

	/* The header as last committed, decoded (xr_hdr.h). */
	struct extref_tree_hdr	hdr;

	/* The tree in memory. */
	struct xr_node	*root;		/* NULL for an empty tree */
	int		depth;
	__u64		nrecords;
	int		dirty;
	__u32		ndirty;		/* nodes dirty (at least): each one a
					   block of the next commit */
	errcode_t	broken;		/* sticky error after a failed update */
	int		all_read;	/* every node read and checked */

	/* Blocks of inode 5. */
	__u32		nblocks;	/* lblks in use by the format */
	blk64_t		*pmap;		/* lblk -> physical block, 0 unmapped */
	__u8		*pmap_own;	/* lblk proven the tree's own (owned.c) */
	__u32		pmap_len;	/* entries of pmap known */
	__u32		open_nblocks;	/* h_nblocks when opened */
	ext2fs_block_bitmap meta_blocks;	/* owned.c, built on demand */
	ext2fs_block_bitmap own_blocks;
	ext2fs_block_bitmap own_twice;
	ext2fs_block_bitmap foreign;

	/* Free nodes: the committed chain in order, head first. */
	struct xr_lblk_vec free;
	int		free_damaged;	/* chain ended early on load */
	/* Blocks freed since the last commit: free after it. */
	struct xr_lblk_vec pending;

	__u64		generation;
	__u32		stamp;		/* h_stamp of the next header write */
	char		*buf;		/* one block of scratch */
};

/* vec.c: extref_vec.h */

/* csum.c */
__u32 xr_block_csum(__u32 seed, const void *block, unsigned int bs,
		    unsigned int csum_off);
__u32 xr_header_csum(__u32 seed, const void *block);

/* ondisk.c */
void xr_hdr_encode(__u32 seed, const struct extref_tree_hdr *h, void *block,
		   unsigned int bs);
void xr_node_encode(const struct extref_tree *t, const struct xr_node *n,
		    __u32 lblk, void *block);
void xr_free_encode(const struct extref_tree *t, __u32 lblk, __u32 next,
		    void *block);

/* verify.c: pure validators over raw blocks and decoded nodes. */
struct xr_bounds {
	blk64_t		lo;		/* every start >= lo */
	blk64_t		hi;		/* every start < hi (0 = no limit) */
	int		exact;		/* the first key must equal lo */
};
errcode_t xr_check_header(const void *block, unsigned int bs, __u32 seed,
			  const __u8 *uuid, __u64 max_nblocks);
errcode_t xr_check_node_block(const void *block, unsigned int bs,
			      __u32 seed, __u32 lblk);
errcode_t xr_check_free_block(const void *block, unsigned int bs,
			      __u32 seed, __u32 lblk, __u32 nblocks);
errcode_t xr_check_rec(const struct extref_rec *r, blk64_t first_data,
		       blk64_t fs_blocks);
errcode_t xr_check_node(const struct extref_tree *t, const struct xr_node *n,
			int level, const struct xr_bounds *b);

/* node.c */
errcode_t xr_node_new(struct extref_tree *t, int level, struct xr_node **ret);
void xr_node_release(struct extref_tree *t, struct xr_node *n);
/* n changed since the last commit (counted in t->ndirty). */
static inline void xr_node_touch(struct extref_tree *t, struct xr_node *n)
{
	if (!n->dirty) {
		n->dirty = 1;
		t->ndirty++;
	}
}
/* n as on disk again. */
static inline void xr_node_clean(struct extref_tree *t, struct xr_node *n)
{
	if (n->dirty) {
		n->dirty = 0;
		t->ndirty--;
	}
}
void xr_node_free_mem(struct xr_node *n);
void xr_subtree_free_mem(struct xr_node *n);
errcode_t xr_node_read(struct extref_tree *t, __u32 lblk, int level,
		       const struct xr_bounds *b, struct xr_node **ret);
blk64_t xr_node_low_key(const struct xr_node *n, int i);
errcode_t xr_lblk_push(struct xr_lblk_vec *v, __u32 lblk);

/* pmap.c: blocks of inode 5. */
errcode_t xr_pmap_load(struct extref_tree *t);
errcode_t xr_pmap_grow(struct extref_tree *t, __u32 lblk);
errcode_t xr_read_lblk(struct extref_tree *t, __u32 lblk, void *buf);
errcode_t xr_write_lblk(struct extref_tree *t, __u32 lblk, const void *buf);

/* owned.c: a block is proven the tree's own before it is written. */
errcode_t xr_lblk_prove(struct extref_tree *t, __u32 lblk);
void xr_lblk_fresh(struct extref_tree *t, __u32 lblk);
errcode_t xr_lblks_prove_from(struct extref_tree *t, __u32 from);
void xr_owned_free(struct extref_tree *t);

/* btree.c */
void xr_child_bounds(const struct xr_node *n, int i,
		     const struct xr_bounds *pb, struct xr_bounds *cb);
errcode_t xr_child(struct extref_tree *t, struct xr_node *n, int i,
		   const struct xr_bounds *pb, struct xr_node **ret);
errcode_t xr_insert(struct extref_tree *t, const struct extref_rec *r);
errcode_t xr_delete(struct extref_tree *t, blk64_t start);
errcode_t xr_set_count(struct extref_tree *t, blk64_t start, __u32 count);
typedef int (*xr_visit_func)(const struct extref_rec *r, void *priv);
errcode_t xr_visit(struct extref_tree *t, blk64_t lo, blk64_t hi,
		   xr_visit_func f, void *priv);
errcode_t xr_tree_read_all(struct extref_tree *t);

/* commit.c */
errcode_t xr_write_header(struct extref_tree *t, int sync_after);

/* freelist.c */
errcode_t xr_free_load(struct extref_tree *t);
errcode_t xr_lblk_alloc(struct extref_tree *t, __u32 *ret);

/* stamp.c: the header's h_stamp (FORMAT.md, "What a writer trusts"). */
__u32 xr_tree_stamp(extref_tree_t t);
__u64 xr_tree_generation(extref_tree_t t);
void xr_tree_stamp_clear(extref_tree_t t);
errcode_t xr_tree_write_stamp(extref_tree_t t, __u32 stamp);
__u32 xr_state_stamp(extref_tree_t t);
/*
 * The superblock as a writer of this library left it at its last close
 * (h_seen_*: FORMAT.md section 11, "Foreign writers").
 */
struct xr_seen {
	__u32	flags;		/* EXTREF_SEEN_* */
	__u32	csum;		/* xr_seen_csum of the superblock */
	__u64	sec;		/* the library's clock at that close */
	__u32	nsec;
	__u64	mtime;		/* s_mtime, s_mnt_count */
	__u16	mnt_count;
};
__u32 xr_seen_csum(extref_tree_t t, const struct ext2_super_block *sb);
void xr_tree_seen(extref_tree_t t, struct xr_seen *s);
void xr_tree_set_seen(extref_tree_t t, const struct xr_seen *s);
void xr_seen_take(extref_tree_t t, const struct ext2_super_block *sb,
		  struct xr_seen *s);
int xr_seen_foreign(extref_tree_t t, const struct ext2_super_block *sb);
errcode_t xr_tree_write_seen(extref_tree_t t, const struct xr_seen *s);

/* tree_open.c */
errcode_t xr_tree_init(ext2_filsys fs, int flags, struct extref_tree **ret);
errcode_t xr_tree_open_header(ext2_filsys fs, struct extref_tree **ret);
__u64 xr_ino5_max_blocks(ext2_filsys fs, struct ext2_inode *inode);

/* format.c: 0 when nothing lives in inode 5, else EXTREF_ERR_INO5_BUSY */
errcode_t xr_ino5_is_empty(ext2_filsys fs);
/* convert.c: extref_convert's refusals alone (nothing written) */
errcode_t xr_convert_check(ext2_filsys fs);

#endif /* EXTREF_INT_H */
