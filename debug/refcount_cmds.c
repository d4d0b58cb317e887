/*
 * refcount_cmds.c --- the reference-count tree: refcount, refcount_tree,
 * owners.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

/* ----- refcount [START [LEN]] ----- */

static int rc_print(const struct extref_rec *rec, void *priv)
{
	(void)priv;
	printf("%llu %llu %u\n", (unsigned long long)rec->start,
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

static __u32 node_csum(__u32 seed, const char *buf, unsigned bs)
{
	static const char zero[4];
	__u32 crc;

	crc = ext2fs_crc32c_le(seed, (const unsigned char *)buf,
			       EXTREF_NODE_CSUM_OFFSET);
	crc = ext2fs_crc32c_le(crc, (const unsigned char *)zero, 4);
	return ext2fs_crc32c_le(crc, (const unsigned char *)buf +
				EXTREF_NODE_CSUM_OFFSET + 4,
				bs - EXTREF_NODE_CSUM_OFFSET - 4);
}

int impl_refcount_tree(struct cmd_args *a)
{
	unsigned bs = sh.fs->blocksize;
	__u32 seed = extref_csum_seed(sh.fs);
	struct extref_disk_header *h;
	struct extref_disk_node *n;
	char *buf;
	blk64_t pblk, lblk, nblocks;
	errcode_t err;
	__u32 crc, stored;
	int ret = 0;

	buf = malloc(bs);
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
	h = (struct extref_disk_header *)buf;
	crc = ext2fs_crc32c_le(seed, (unsigned char *)buf,
			       EXTREF_HDR_CSUM_OFFSET);
	stored = ext2fs_le32_to_cpu(h->h_checksum);
	nblocks = ext2fs_le32_to_cpu(h->h_nblocks);
	printf("header: lblk 0  pblk %llu  magic 0x%08x%s  version %u  "
	       "depth %u  root %u  records %llu  nblocks %llu  free %u "
	       "(head %u)  generation %llu  csum %s\n",
	       (unsigned long long)pblk, ext2fs_le32_to_cpu(h->h_magic),
	       ext2fs_le32_to_cpu(h->h_magic) == EXTREF_HDR_MAGIC ? "" : " (BAD)",
	       ext2fs_le16_to_cpu(h->h_version),
	       ext2fs_le16_to_cpu(h->h_depth), ext2fs_le32_to_cpu(h->h_root),
	       (unsigned long long)ext2fs_le64_to_cpu(h->h_nrecords),
	       (unsigned long long)nblocks,
	       ext2fs_le32_to_cpu(h->h_free_count),
	       ext2fs_le32_to_cpu(h->h_free_head),
	       (unsigned long long)ext2fs_le64_to_cpu(h->h_generation),
	       crc == stored ? "ok" : "BAD");
	if (crc != stored || ext2fs_le32_to_cpu(h->h_magic) != EXTREF_HDR_MAGIC)
		ret = 1;
	/* Guard against a wild h_nblocks: no more than inode 5 holds. */
	{
		struct ext2_inode_large ino5;

		if (read_inode(a, EXTREF_INO, &ino5)) {
			free(buf);
			return 1;
		}
		if (nblocks > (EXT2_I_SIZE(&ino5) + bs - 1) / bs) {
			printf("h_nblocks %llu is past the end of inode %d "
			       "(%llu bytes)\n", (unsigned long long)nblocks,
			       EXTREF_INO,
			       (unsigned long long)EXT2_I_SIZE(&ino5));
			nblocks = (EXT2_I_SIZE(&ino5) + bs - 1) / bs;
			ret = 1;
		}
	}
	for (lblk = 1; lblk < nblocks; lblk++) {
		__u32 magic;
		unsigned nr, i, cap = EXTREF_NODE_CAPACITY(bs);

		err = read_tree_block(lblk, buf, &pblk);
		if (err) {
			cmd_err(a, err, "reading lblk %llu",
				(unsigned long long)lblk);
			ret = 1;
			continue;
		}
		n = (struct extref_disk_node *)buf;
		magic = ext2fs_le32_to_cpu(n->n_magic);
		nr = ext2fs_le16_to_cpu(n->n_nr);
		crc = node_csum(seed, buf, bs);
		stored = ext2fs_le32_to_cpu(n->n_checksum);
		if (crc != stored)
			ret = 1;
		if (magic == EXTREF_FREE_MAGIC) {
			printf("lblk %llu  pblk %llu  free  next %u  gen %llu  "
			       "csum %s\n", (unsigned long long)lblk,
			       (unsigned long long)pblk,
			       ext2fs_le32_to_cpu(n->n_next),
			       (unsigned long long)ext2fs_le64_to_cpu(n->n_generation),
			       crc == stored ? "ok" : "BAD");
			continue;
		}
		if (magic != EXTREF_NODE_MAGIC) {
			printf("lblk %llu  pblk %llu  bad magic 0x%08x  csum %s\n",
			       (unsigned long long)lblk,
			       (unsigned long long)pblk, magic,
			       crc == stored ? "ok" : "BAD");
			ret = 1;
			continue;
		}
		printf("lblk %llu  pblk %llu  level %u  entries %u", (unsigned long long)lblk,
		       (unsigned long long)pblk, ext2fs_le16_to_cpu(n->n_level), nr);
		if (nr) {
			const struct extref_disk_rec *r =
				(const void *)(buf + sizeof(*n));
			printf("  first %llu",
			       (unsigned long long)ext2fs_le64_to_cpu(r->r_start));
		}
		printf("  gen %llu  csum %s\n",
		       (unsigned long long)ext2fs_le64_to_cpu(n->n_generation),
		       crc == stored ? "ok" : "BAD");
		if (nr > cap) {
			printf("  entry count %u exceeds capacity %u\n", nr, cap);
			ret = 1;
			nr = cap;
		}
		/* Entries, one a line, for small nodes only in verbose use. */
		for (i = 0; i < nr && a->opts['v']; i++) {
			const char *e = buf + sizeof(*n) + i * 16;

			if (ext2fs_le16_to_cpu(n->n_level) == 0) {
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
	free(buf);
	return ret;
}

/* ----- owners BLOCK ----- */

struct own_ctx {
	blk64_t		blk;
	ext2_ino_t	ino;
	unsigned long	found;
};

static int own_ext_cb(const struct fext *e, void *priv)
{
	struct own_ctx *c = priv;
	char *path;

	if (c->blk < e->pblk || c->blk >= e->pblk + e->len)
		return 0;
	path = inode_path(c->ino);
	printf("inode %u  lblk %llu  path %s\n", c->ino,
	       (unsigned long long)(e->lblk + (c->blk - e->pblk)),
	       path ? esc(path) : "?");
	free(path);
	c->found++;
	return 0;
}

int impl_owners(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	ext2_inode_scan scan;
	struct own_ctx c;
	errcode_t err;
	__u64 blk;
	__u32 count = 0;
	int ret = 0;

	if (parse_num_arg(a, a->argv[0], "block", &blk))
		return 1;
	if (blk >= ext2fs_blocks_count(sh.fs->super))
		return cmd_fail(a, "block %llu is past the end of the filesystem",
				(unsigned long long)blk);
	err = ext2fs_read_inode_bitmap(sh.fs);
	if (err)
		return cmd_err(a, err, "reading the inode bitmap");
	err = ext2fs_open_inode_scan(sh.fs, 0, &scan);
	if (err)
		return cmd_err(a, err, "opening the inode scan");
	memset(&c, 0, sizeof(c));
	c.blk = blk;
	for (;;) {
		err = ext2fs_get_next_inode_full(scan, &c.ino,
						 (struct ext2_inode *)&inode,
						 sizeof(inode));
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
			continue;
		if (err) {
			ret = cmd_err(a, err, "scanning inodes");
			break;
		}
		if (!c.ino)
			break;
		if (!ext2fs_test_inode_bitmap2(sh.fs->inode_map, c.ino))
			continue;
		if (!inode.i_links_count && c.ino >= EXT2_FIRST_INO(sh.fs->super))
			continue;
		if (LINUX_S_ISLNK(inode.i_mode) || LINUX_S_ISREG(inode.i_mode) ||
		    LINUX_S_ISDIR(inode.i_mode) || inode.i_flags & EXT4_EXTENTS_FL) {
			if (walk_extents(c.ino, &inode, own_ext_cb, &c))
				continue;
		}
	}
	ext2fs_close_inode_scan(scan);
	if (sh_tree() && extref_tree_get_count(sh_tree(), blk, &count) == 0)
		printf("%lu mapping%s of block %llu (refcount %u)\n", c.found,
		       c.found == 1 ? "" : "s", (unsigned long long)blk,
		       count ? count : (c.found ? 1 : 0));
	else
		printf("%lu mapping%s of block %llu\n", c.found,
		       c.found == 1 ? "" : "s", (unsigned long long)blk);
	return ret;
}
