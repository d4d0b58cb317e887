/*
 * expert.c --- debugfs.extref's expert commands: raw edits that bypass
 * the library's safety, for building corrupted images in tests (in the
 * manner of ocfs2's fswreck and xfs_db -x).
 *
 * Every command needs an image opened with -w but not a loaded tree (the
 * tree may already be damaged).  Tree blocks are located through inode
 * 5's extent map and read and written with the I/O channel directly; the
 * library's tree is never consulted, so nothing it caches is updated.
 * Checksums follow docs/FORMAT.md and are recomputed after an edit
 * unless -n is given or the checksum field itself is set.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"
#include "extref_format.h"


/* A field of an on-disk structure: name, byte offset, width in bytes. */
struct xfield {
	const char	*name;
	unsigned	off;
	unsigned	size;
};

/* A field by name: its place and width in the on-disk structure. */
#define XFIELD(name, type, member) \
	{ name, offsetof(struct type, member), \
	  sizeof(((struct type *)0)->member) }
#define HF(name, member)	XFIELD(name, extref_disk_header, member)
#define NF(name, member)	XFIELD(name, extref_disk_node, member)

static const struct xfield hdr_fields[] = {
	HF("magic", h_magic),		HF("version", h_version),
	HF("depth", h_depth),		HF("compat", h_compat),
	HF("ro_compat", h_ro_compat),	HF("incompat", h_incompat),
	HF("blocksize", h_blocksize),	HF("root", h_root),
	HF("nblocks", h_nblocks),	HF("nrecords", h_nrecords),
	HF("free_head", h_free_head),	HF("free_count", h_free_count),
	HF("generation", h_generation),	HF("stamp", h_stamp),
	HF("checksum", h_checksum),
	{ NULL, 0, 0 }
};

static const struct xfield node_fields[] = {
	NF("magic", n_magic),		NF("level", n_level),
	NF("nr", n_nr),			NF("blkno", n_blkno),
	NF("next", n_next),		NF("generation", n_generation),
	NF("reserved", n_reserved),	NF("checksum", n_checksum),
	{ NULL, 0, 0 }
};

static const struct xfield rec_fields[] = {	/* leaf records */
	{ "start", 0x00, 8 }, { "len", 0x08, 4 }, { "count", 0x0c, 4 },
	{ NULL, 0, 0 }
};

static const struct xfield key_fields[] = {	/* index entries */
	{ "key", 0x00, 8 }, { "child", 0x08, 4 }, { "reserved", 0x0c, 4 },
	{ NULL, 0, 0 }
};

static const struct xfield *find_field(const struct xfield *f,
				       const char *name)
{
	for (; f->name; f++)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

static int bad_field(const struct cmd_args *a, const struct xfield *f,
		     const char *name)
{
	char list[256] = "";

	for (; f->name; f++) {
		if (*list)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, f->name, sizeof(list) - strlen(list) - 1);
	}
	return cmd_fail(a, "unknown field '%s' (one of: %s)", name, list);
}

static int parse_value(const struct cmd_args *a, const struct xfield *f,
		       const char *s, __u64 *val)
{
	if (parse_num_arg(a, s, "value", val))
		return 1;
	if (f->size < 8 && *val >> (f->size * 8))
		return cmd_fail(a, "value %s does not fit field %s (%u bytes)",
				s, f->name, f->size);
	return 0;
}

static void put_le(unsigned char *p, unsigned size, __u64 v)
{
	unsigned i;

	for (i = 0; i < size; i++, v >>= 8)
		p[i] = v & 0xff;
}

static __u64 get_le(const unsigned char *p, unsigned size)
{
	__u64 v = 0;
	unsigned i;

	for (i = size; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}

/* Logical block lblk of inode 5: its physical block, read into buf. */
static int tree_read(const struct cmd_args *a, __u64 lblk, unsigned char *buf,
		     blk64_t *pblk)
{
	errcode_t err;

	*pblk = 0;
	err = ext2fs_bmap2(sh.fs, EXTREF_INO, NULL, NULL, 0, lblk, NULL, pblk);
	if (err)
		return cmd_err(a, err, "mapping lblk %llu of inode %d",
			       (unsigned long long)lblk, EXTREF_INO);
	if (!*pblk)
		return cmd_fail(a, "inode %d maps no block at lblk %llu",
				EXTREF_INO, (unsigned long long)lblk);
	err = io_channel_read_blk64(sh.fs->io, *pblk, 1, buf);
	if (err)
		return cmd_err(a, err, "reading block %llu",
			       (unsigned long long)*pblk);
	return 0;
}

static int tree_write(const struct cmd_args *a, blk64_t pblk,
		      const unsigned char *buf)
{
	errcode_t err;

	err = io_channel_write_blk64(sh.fs->io, pblk, 1, buf);
	if (!err)
		err = io_channel_flush(sh.fs->io);
	if (err)
		return cmd_err(a, err, "writing block %llu",
			       (unsigned long long)pblk);
	return 0;
}

/* Both bitmaps in memory: anything that allocates or frees needs them. */
static int need_bitmaps(const struct cmd_args *a)
{
	errcode_t err = 0;

	if (!sh.fs->block_map || !sh.fs->inode_map)
		err = ext2fs_read_bitmaps(sh.fs);
	if (err)
		return cmd_err(a, err, "reading the bitmaps");
	return 0;
}

/* Set field f of the block at lblk (at byte base), fix the checksum. */
static int edit_block(const struct cmd_args *a, __u64 lblk, unsigned base,
		      const struct xfield *f, const char *value, int header)
{
	unsigned bs = sh.fs->blocksize;
	unsigned char *buf;
	blk64_t pblk;
	__u64 val, old;
	int ret;

	if (parse_value(a, f, value, &val))
		return 1;
	buf = malloc(bs);
	if (!buf)
		return cmd_fail(a, "out of memory");
	ret = tree_read(a, lblk, buf, &pblk);
	if (!ret) {
		old = get_le(buf + base + f->off, f->size);
		put_le(buf + base + f->off, f->size, val);
		/* an edited header carries no stamp: the next writer's open
		 * proves the counts again (FORMAT.md section 11) */
		if (header && strcmp(f->name, "stamp"))
			put_le(buf + offsetof(struct extref_disk_header,
					      h_stamp), 4, 0);
		if (!a->opts['n'] &&
		    !(base == 0 && !strcmp(f->name, "checksum")))
			put_le(buf + (header ? EXTREF_HDR_CSUM_OFFSET :
				      EXTREF_NODE_CSUM_OFFSET), 4,
			       header ? extref_header_csum(sh.fs, buf) :
			       extref_node_csum(sh.fs, buf));
		ret = tree_write(a, pblk, buf);
		if (!ret)
			printf("lblk %llu (block %llu): %s 0x%llx -> 0x%llx\n",
			       (unsigned long long)lblk,
			       (unsigned long long)pblk, f->name,
			       (unsigned long long)old,
			       (unsigned long long)val);
	}
	free(buf);
	return ret;
}

/* set_tree_header [-n] FIELD VALUE */
int impl_set_tree_header(struct cmd_args *a)
{
	const struct xfield *f = find_field(hdr_fields, a->argv[0]);

	if (!f)
		return bad_field(a, hdr_fields, a->argv[0]);
	return edit_block(a, 0, 0, f, a->argv[1], 1);
}

/* set_tree_node [-n] LBLK FIELD VALUE */
int impl_set_tree_node(struct cmd_args *a)
{
	const struct xfield *f = find_field(node_fields, a->argv[1]);
	__u64 lblk;

	if (parse_num_arg(a, a->argv[0], "lblk", &lblk))
		return 1;
	if (!f)
		return bad_field(a, node_fields, a->argv[1]);
	if (lblk == 0)
		return cmd_fail(a, "lblk 0 is the header: use set_tree_header");
	return edit_block(a, lblk, 0, f, a->argv[2], 0);
}

/* set_tree_entry [-n] LBLK INDEX FIELD VALUE: leaf or index per n_level. */
int impl_set_tree_entry(struct cmd_args *a)
{
	unsigned bs = sh.fs->blocksize;
	unsigned char *buf;
	const struct xfield *f;
	struct extref_node_hdr nh;
	blk64_t pblk;
	__u64 lblk, idx;
	int level;

	if (parse_num_arg(a, a->argv[0], "lblk", &lblk) ||
	    parse_num_arg(a, a->argv[1], "index", &idx))
		return 1;
	if (lblk == 0)
		return cmd_fail(a, "lblk 0 is the header, it has no entries");
	if (idx >= EXTREF_NODE_CAPACITY(bs))
		return cmd_fail(a, "index %llu is past a node's capacity (%u)",
				(unsigned long long)idx,
				(unsigned)EXTREF_NODE_CAPACITY(bs));
	buf = malloc(bs);
	if (!buf)
		return cmd_fail(a, "out of memory");
	if (tree_read(a, lblk, buf, &pblk)) {
		free(buf);
		return 1;
	}
	extref_node_hdr_decode(&nh, (const void *)buf);
	level = nh.n_level;
	free(buf);
	f = find_field(level ? key_fields : rec_fields, a->argv[2]);
	if (!f)
		return bad_field(a, level ? key_fields : rec_fields, a->argv[2]);
	return edit_block(a, lblk, sizeof(struct extref_disk_node) +
			  idx * sizeof(struct extref_disk_rec), f, a->argv[3], 0);
}

/*
 * map_raw PATH LBLK PBLK LEN: map [PBLK, PBLK+LEN) at LBLK of PATH with
 * the extent API; no reference count, no bitmap change for the data
 * blocks (a new extent block, if one is needed, is allocated normally).
 */
int impl_map_raw(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	ext2_extent_handle_t h;
	ext2_ino_t ino;
	__u64 lblk, pblk, len, i, size;
	errcode_t err = 0;

	if (resolve_path(a, a->argv[0], &ino) ||
	    parse_num_arg(a, a->argv[1], "lblk", &lblk) ||
	    parse_num_arg(a, a->argv[2], "pblk", &pblk) ||
	    parse_num_arg(a, a->argv[3], "len", &len))
		return 1;
	if (!len || pblk + len > ext2fs_blocks_count(sh.fs->super) ||
	    lblk + len > (1ULL << 32))
		return cmd_fail(a, "range out of bounds");
	if (read_inode(a, ino, &inode))
		return 1;
	if (!(inode.i_flags & EXT4_EXTENTS_FL))
		return cmd_fail(a, "inode %u does not use extents", ino);
	if (need_bitmaps(a))
		return 1;
	err = ext2fs_extent_open2(sh.fs, ino, (struct ext2_inode *)&inode, &h);
	if (err)
		return cmd_err(a, err, "opening the extents of inode %u", ino);
	for (i = 0; !err && i < len; i++)
		err = ext2fs_extent_set_bmap(h, lblk + i, pblk + i, 0);
	ext2fs_extent_free(h);
	if (err)
		return cmd_err(a, err, "mapping lblk %llu of inode %u",
			       (unsigned long long)(lblk + i - 1), ino);
	/* The handle wrote the inode: read it back, then count the blocks. */
	if (read_inode(a, ino, &inode))
		return 1;
	err = ext2fs_iblk_add_blocks(sh.fs, (struct ext2_inode *)&inode, len);
	if (err)
		return cmd_err(a, err, "counting the blocks of inode %u", ino);
	size = (lblk + len) * sh.fs->blocksize;
	if (EXT2_I_SIZE(&inode) < size)
		ext2fs_inode_size_set(sh.fs, (struct ext2_inode *)&inode, size);
	if (write_inode(a, ino, &inode))
		return 1;
	printf("inode %u: lblk %llu-%llu -> block %llu-%llu (raw)\n", ino,
	       (unsigned long long)lblk, (unsigned long long)(lblk + len - 1),
	       (unsigned long long)pblk, (unsigned long long)(pblk + len - 1));
	return 0;
}

/*
 * set_block_bitmap [-c] BLOCK 0|1: the block's bit only, or with -c
 * through ext2fs_block_alloc_stats2 (group and superblock free counts
 * follow, so only the bitmap's meaning is wrong, not its totals).
 */
int impl_set_block_bitmap(struct cmd_args *a)
{
	__u64 blk, v;
	int cur;

	if (parse_num_arg(a, a->argv[0], "block", &blk) ||
	    parse_num_arg(a, a->argv[1], "value", &v))
		return 1;
	if (v > 1)
		return cmd_fail(a, "value must be 0 or 1");
	if (blk < sh.fs->super->s_first_data_block ||
	    blk >= ext2fs_blocks_count(sh.fs->super))
		return cmd_fail(a, "block %llu is outside the filesystem",
				(unsigned long long)blk);
	if (need_bitmaps(a))
		return 1;
	/* freed in the open batch: free, though kept marked until commit */
	cur = ext2fs_test_block_bitmap2(sh.fs->block_map, blk) &&
	      !extref_tx_freed(sh.xfs, blk);
	if (cur == (int)v) {
		printf("block %llu: already %d\n", (unsigned long long)blk, cur);
		return 0;
	}
	if (a->opts['c']) {
		ext2fs_block_alloc_stats2(sh.fs, blk, v ? +1 : -1);
	} else {
		if (v)
			ext2fs_mark_block_bitmap2(sh.fs->block_map, blk);
		else
			ext2fs_unmark_block_bitmap2(sh.fs->block_map, blk);
		ext2fs_mark_bb_dirty(sh.fs);
		extref_tx_note_block(sh.xfs, blk);	/* in the transaction */
	}
	printf("block %llu: %d -> %d%s\n", (unsigned long long)blk, cur,
	       (int)v, a->opts['c'] ? " (free counts updated)" : "");
	return 0;
}

/*
 * drop_tree [-k]: zero inode 5, keeping shared_blocks.  Its blocks are
 * freed in the bitmap first (with -k they stay marked in use, owned by
 * no one).
 */
int impl_drop_tree(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	errcode_t err;

	if (need_bitmaps(a) || read_inode(a, EXTREF_INO, &inode))
		return 1;
	if (!a->opts['k'] && inode.i_mode &&
	    ext2fs_inode_has_valid_blocks2(sh.fs, (struct ext2_inode *)&inode)) {
		err = ext2fs_punch(sh.fs, EXTREF_INO, (struct ext2_inode *)&inode,
				   NULL, 0, ~0ULL);
		if (err)
			return cmd_err(a, err, "freeing the blocks of inode %d",
				       EXTREF_INO);
	}
	memset(&inode, 0, sizeof(inode));	/* as debugfs's clri */
	if (write_inode(a, EXTREF_INO, &inode))
		return 1;
	printf("inode %d cleared%s\n", EXTREF_INO,
	       a->opts['k'] ? "; its blocks stay marked in use" : "");
	return 0;
}
