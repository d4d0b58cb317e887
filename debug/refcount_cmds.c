/*
 * refcount_cmds.c --- the reference-count tree: refcount, refcount_tree,
 * owners.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"


/* ----- refcount [START [LEN]] ----- */

static errcode_t rc_print(const struct extref_rec *rec, void *priv)
{
	(void)priv;
	printf("%12llu %10llu %7u\n", (unsigned long long)rec->start,
	       (unsigned long long)rec->len, rec->count);
	return 0;
}

int impl_refcount(struct cmd_args *a)
{
	__u64 start = 0, len = 0;
	errcode_t err;

	if (a->argc >= 1 && parse_num_arg(a, a->argv[0], "block", &start))
		return 1;
	if (a->argc >= 2 && parse_num_arg(a, a->argv[1], "length", &len))
		return 1;
	printf("%12s %10s %7s\n", "Start", "Length", "Count");
	/* Whole records: not clipped to the range asked for. */
	err = extref_tree_iterate(sh_tree(), start, len, 0, rc_print, NULL);
	if (err)
		return cmd_err(a, err, "reading the tree");
	return 0;
}

/* ----- refcount_tree: every block of inode 5, decoded ----- */

static errcode_t read_tree_block(blk64_t lblk, char *buf, blk64_t *pblk)
{
	errcode_t err;

	*pblk = 0;
	err = ext2fs_bmap2(sh.fs, EXTREF_INO, NULL, NULL, 0, lblk, NULL, pblk);
	if (err)
		return err;
	if (!*pblk) {
		memset(buf, 0, sh.fs->blocksize);
		return 0;
	}
	return io_channel_read_blk64(sh.fs->io, *pblk, 1, buf);
}

/*
 * The library's verdict on a block (extref_*_verify), named when the
 * block's line does not already show it (a bad magic number, "csum BAD").
 * Returns 1 when the block fails.
 */
static int verdict(errcode_t err, int csum_ok)
{
	if (!err)
		return 0;
	if (csum_ok && err != EXTREF_ERR_HDR_MAGIC &&
	    err != EXTREF_ERR_NODE_MAGIC)
		printf("  %s\n", error_message(err));
	return 1;
}

/* Blocks to list: h_nblocks, no more than inode 5 holds. */
static int listed_blocks(struct cmd_args *a, __u64 *nblocks)
{
	unsigned bs = sh.fs->blocksize;
	struct ext2_inode_large ino5;

	if (read_inode(a, EXTREF_INO, &ino5))
		return -1;
	if (*nblocks <= (EXT2_I_SIZE(&ino5) + bs - 1) / bs)
		return 0;
	printf("h_nblocks %llu is past the end of inode %d (%llu bytes)\n",
	       (unsigned long long)*nblocks, EXTREF_INO,
	       (unsigned long long)EXT2_I_SIZE(&ino5));
	*nblocks = (EXT2_I_SIZE(&ino5) + bs - 1) / bs;
	return 1;
}

static int print_header(const char *buf, blk64_t pblk)
{
	struct extref_tree_hdr h;
	int csum_ok;

	extref_tree_hdr_decode(&h, (const void *)buf);
	csum_ok = extref_header_csum(sh.fs, buf) == h.h_checksum;
	printf("header: lblk 0  pblk %llu  magic 0x%08x%s  version %u  "
	       "depth %u  root %u  records %llu  nblocks %u  free %u "
	       "(head %u)  generation %llu  csum %s\n",
	       (unsigned long long)pblk, h.h_magic,
	       h.h_magic == EXTREF_HDR_MAGIC ? "" : " (BAD)",
	       h.h_version, h.h_depth, h.h_root,
	       (unsigned long long)h.h_nrecords, h.h_nblocks, h.h_free_count,
	       h.h_free_head, (unsigned long long)h.h_generation,
	       csum_ok ? "ok" : "BAD");
	return verdict(extref_header_verify(sh.fs, buf), csum_ok);
}

/* A node's entries, one a line (-v). */
static void print_entries(const char *buf, unsigned level, unsigned nr)
{
	unsigned i;

	for (i = 0; i < nr; i++) {
		const char *e = buf + sizeof(struct extref_disk_node) + i * 16;

		if (level == 0) {
			const struct extref_disk_rec *r = (const void *)e;

			printf("    %llu %u %u\n",
			       (unsigned long long)ext2fs_le64_to_cpu(r->r_start),
			       ext2fs_le32_to_cpu(r->r_len),
			       ext2fs_le32_to_cpu(r->r_count));
		} else {
			const struct extref_disk_key *k = (const void *)e;

			printf("    key %llu -> lblk %u\n",
			       (unsigned long long)ext2fs_le64_to_cpu(k->k_key),
			       ext2fs_le32_to_cpu(k->k_child));
		}
	}
}

static int print_node(const struct cmd_args *a, const char *buf, __u32 lblk,
		      blk64_t pblk, __u32 nblocks)
{
	struct extref_node_hdr n;
	unsigned cap = EXTREF_NODE_CAPACITY(sh.fs->blocksize);
	const char *csum;
	int csum_ok, bad;

	extref_node_hdr_decode(&n, (const void *)buf);
	csum_ok = extref_node_csum(sh.fs, buf) == n.n_checksum;
	csum = csum_ok ? "ok" : "BAD";
	if (n.n_magic == EXTREF_FREE_MAGIC) {
		printf("lblk %u  pblk %llu  free  next %u  gen %llu  csum %s\n",
		       lblk, (unsigned long long)pblk, n.n_next,
		       (unsigned long long)n.n_generation, csum);
		return verdict(extref_free_verify(sh.fs, buf, lblk, nblocks),
			       csum_ok);
	}
	if (n.n_magic != EXTREF_NODE_MAGIC) {
		printf("lblk %u  pblk %llu  bad magic 0x%08x  csum %s\n", lblk,
		       (unsigned long long)pblk, n.n_magic, csum);
		return verdict(extref_node_verify(sh.fs, buf, lblk), csum_ok);
	}
	printf("lblk %u  pblk %llu  level %u  entries %u", lblk,
	       (unsigned long long)pblk, n.n_level, n.n_nr);
	if (n.n_nr) {
		const struct extref_disk_rec *r =
			(const void *)(buf + sizeof(struct extref_disk_node));

		printf("  first %llu",
		       (unsigned long long)ext2fs_le64_to_cpu(r->r_start));
	}
	printf("  gen %llu  csum %s\n", (unsigned long long)n.n_generation,
	       csum);
	bad = verdict(extref_node_verify(sh.fs, buf, lblk), csum_ok);
	if (bad && csum_ok && n.n_nr > cap)
		printf("  entry count %u exceeds capacity %u\n", n.n_nr, cap);
	if (a->opts['v'])
		print_entries(buf, n.n_level, n.n_nr < cap ? n.n_nr : cap);
	return bad;
}

/*
 * Each block is shown as it is on disk and judged by the library's own
 * verifiers (extref_header_verify, extref_node_verify, extref_free_verify).
 */
int impl_refcount_tree(struct cmd_args *a)
{
	struct extref_tree_hdr h;
	char *buf;
	blk64_t pblk;
	__u64 lblk, nblocks;
	__u32 hdr_nblocks;
	errcode_t err;
	int ret;

	buf = malloc(sh.fs->blocksize);
	if (!buf)
		return cmd_fail(a, "out of memory");
	err = read_tree_block(0, buf, &pblk);
	if (err) {
		free(buf);
		return cmd_err(a, err, "reading the header (lblk 0)");
	}
	if (!pblk) {
		free(buf);
		return cmd_fail(a, "inode %d maps no block 0: no tree",
				EXTREF_INO);
	}
	extref_tree_hdr_decode(&h, (const void *)buf);
	hdr_nblocks = h.h_nblocks;
	nblocks = hdr_nblocks;
	ret = print_header(buf, pblk);
	switch (listed_blocks(a, &nblocks)) {
	case -1:
		free(buf);
		return 1;
	case 1:
		ret = 1;
	}
	for (lblk = 1; lblk < nblocks; lblk++) {
		err = read_tree_block(lblk, buf, &pblk);
		if (err) {
			cmd_err(a, err, "reading lblk %llu",
				(unsigned long long)lblk);
			ret = 1;
			continue;
		}
		ret |= print_node(a, buf, lblk, pblk, hdr_nblocks);
	}
	free(buf);
	return ret;
}

/* ----- owners BLOCK ----- */

struct own_ctx {
	unsigned long	found;
	unsigned long	tree;		/* mappings by inode 5 */
};

static int own_cb(ext2_ino_t ino, blk64_t blk, enum bown_kind kind,
		  blk64_t lblk, void *priv)
{
	struct own_ctx *c = priv;
	char *path = inode_path(ino);

	(void)blk;
	if (kind == BOWN_DATA)
		printf("inode %u  lblk %llu  path %s\n", ino,
		       (unsigned long long)lblk, path ? esc(path) : "?");
	else
		printf("inode %u  %s  path %s\n", ino,
		       kind == BOWN_MAP ? "mapping block" : "xattr block",
		       path ? esc(path) : "?");
	free(path);
	c->found++;
	if (ino == EXTREF_INO)
		c->tree++;
	return 0;
}

/* What a block no inode maps is: group metadata, free, or lost. */
static int owners_none(const struct cmd_args *a, blk64_t blk)
{
	char what[96];
	errcode_t err;

	if (block_group_meta(blk, what, sizeof(what))) {
		printf("block %llu is group metadata: %s\n",
		       (unsigned long long)blk, what);
		return 0;
	}
	err = ext2fs_read_block_bitmap(sh.fs);
	if (err)
		return cmd_err(a, err, "reading the block bitmap");
	if (!ext2fs_test_block_bitmap2(sh.fs->block_map, blk))
		printf("block %llu is free\n", (unsigned long long)blk);
	else
		printf("block %llu is in use but no inode maps it\n",
		       (unsigned long long)blk);
	return 0;
}

int impl_owners(struct cmd_args *a)
{
	struct own_ctx c;
	errcode_t err;
	__u64 blk;
	blk64_t b;
	__u32 count = 0;

	if (parse_num_arg(a, a->argv[0], "block", &blk))
		return 1;
	if (blk >= ext2fs_blocks_count(sh.fs->super))
		return cmd_fail(a, "block %llu is past the end of the filesystem",
				(unsigned long long)blk);
	memset(&c, 0, sizeof(c));
	b = blk;
	err = scan_block_owners(&b, 1, own_cb, &c);
	if (err)
		return cmd_err(a, err, "scanning inodes");
	if (!c.found)
		return owners_none(a, blk);
	if (c.tree == c.found)
		printf("block %llu belongs to the reference-count tree "
		       "(inode %d)\n", (unsigned long long)blk, EXTREF_INO);
	else if (sh_tree() && extref_tree_get_count(sh_tree(), blk, &count) == 0)
		printf("%lu mapping%s of block %llu (refcount %u)\n", c.found,
		       c.found == 1 ? "" : "s", (unsigned long long)blk,
		       count ? count : 1);
	else
		printf("%lu mapping%s of block %llu\n", c.found,
		       c.found == 1 ? "" : "s", (unsigned long long)blk);
	return 0;
}
