/*
 * htree_cmd.c --- htree [-l] [DIR]: the hash index of a directory, in
 * stock debugfs's htree_dump format: the root's header, each index
 * node's entries, then every leaf block's entries ("inode hash-minor
 * (rec_len) name") wrapped at 80 columns.
 *
 * Every count, length and block number comes from a hostile image: index
 * entries are clamped to what fits in the block, levels to 3, an index
 * block named twice is followed once (entries all naming one block
 * would make the dump entries to the power of the levels long), and a
 * logical block the directory does not map is reported, not read.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

#define HT_MAX_LEVELS	3

struct ht_ctx {
	const struct cmd_args *a;
	ext2_ino_t	ino;
	struct ext2_inode_large inode;
	int		hash_alg;
	int		hash_flags;
	int		failed;
	ext2fs_block_bitmap seen;	/* index blocks followed */
};

static int ht_map(struct ht_ctx *c, blk64_t lblk, blk64_t *pblk)
{
	errcode_t err;

	*pblk = 0;
	err = ext2fs_bmap2(sh.fs, c->ino, (struct ext2_inode *)&c->inode, NULL,
			   0, lblk, NULL, pblk);
	if (!err && !*pblk)
		err = EXT2_ET_INVALID_ARGUMENT;
	if (err) {
		fflush(stdout);
		fprintf(stderr, "%s: logical block %llu of the directory: %s\n",
			c->a->name, (unsigned long long)lblk,
			*pblk ? error_message(err) : "not mapped");
		c->failed = 1;
	}
	return err ? 1 : 0;
}

/* Print tmp at column *col, wrapping at 80 as stock debugfs. */
static void ht_col(const char *tmp, int *col)
{
	int n = strlen(tmp);

	if (*col + n > 80) {
		printf("\n");
		*col = 0;
	}
	fputs(tmp, stdout);
	*col += n;
}

static void ht_leaf(struct ht_ctx *c, blk64_t lblk, char *buf)
{
	unsigned bs = sh.fs->blocksize, off = 0, rec_len;
	char name[EXT2_NAME_LEN + 1], tmp[EXT2_NAME_LEN + 64];
	ext2_dirhash_t hash, minor;
	blk64_t pblk;
	errcode_t err;
	int col = 0;

	if (ht_map(c, lblk, &pblk))
		return;
	printf("Reading directory block %llu, phys %llu\n",
	       (unsigned long long)lblk, (unsigned long long)pblk);
	err = ext2fs_read_dir_block4(sh.fs, pblk, buf, 0, c->ino);
	if (err && err != EXT2_ET_DIR_CSUM_INVALID) {
		fflush(stdout);
		fprintf(stderr, "%s: reading block %llu: %s\n", c->a->name,
			(unsigned long long)pblk, error_message(err));
		c->failed = 1;
		return;
	}
	while (off < bs) {
		struct ext2_dir_entry *de = (void *)(buf + off);
		int len;

		if (off + 8 > bs || ext2fs_get_rec_len(sh.fs, de, &rec_len) ||
		    off + rec_len > bs || rec_len < 8 || rec_len % 4 ||
		    (unsigned)ext2fs_dirent_name_len(de) + 8 > rec_len) {
			printf("Corrupted directory block (%llu)!\n",
			       (unsigned long long)lblk);
			c->failed = 1;
			break;
		}
		len = ext2fs_dirent_name_len(de);
		if (!de->inode && !len && rec_len == 12 && off + 12 == bs &&
		    ext2fs_has_feature_metadata_csum(sh.fs->super) &&
		    ext2fs_dirent_file_type(de) == EXT2_DIR_NAME_LEN_CSUM >> 8) {
			struct ext2_dir_entry_tail *t = (void *)de;

			snprintf(tmp, sizeof(tmp), "leaf block checksum: 0x%08x  ",
				 ext2fs_le32_to_cpu(t->det_checksum));
		} else {
			memcpy(name, de->name, len);
			name[len] = 0;
			if (ext2fs_dirhash2(c->hash_alg, name, len,
					    sh.fs->encoding, c->hash_flags,
					    sh.fs->super->s_hash_seed, &hash,
					    &minor))
				hash = minor = 0;
			snprintf(tmp, sizeof(tmp), "%u 0x%08x-%08x (%u) %s   ",
				 de->inode, hash, minor, rec_len, name);
		}
		ht_col(tmp, &col);
		off += rec_len;
	}
	printf("\n");
}

static void ht_block(struct ht_ctx *c, blk64_t lblk, char *buf, int level);

/* An index node: its count/limit at ent, the entries, then each child. */
static void ht_node(struct ht_ctx *c, char *blockbuf, unsigned entoff,
		    int level)
{
	unsigned bs = sh.fs->blocksize, count, limit, fit, i;
	struct ext2_dx_countlimit *cl = (void *)(blockbuf + entoff);
	struct ext2_dx_entry *ent = (void *)(blockbuf + entoff);
	char *child;

	if (entoff + 8 > bs) {
		printf("Index entries start past the block (offset %u)\n",
		       entoff);
		c->failed = 1;
		return;
	}
	count = ext2fs_le16_to_cpu(cl->count);
	limit = ext2fs_le16_to_cpu(cl->limit);
	printf("Number of entries (count): %u\n", count);
	printf("Number of entries (limit): %u\n", limit);
	fit = (bs - entoff) / sizeof(*ent);
	if (ext2fs_has_feature_metadata_csum(sh.fs->super) && limit < fit &&
	    entoff + (limit + 1) * sizeof(*ent) <= bs) {
		struct ext2_dx_tail *t = (void *)(ent + limit);

		printf("Checksum: 0x%08x\n", ext2fs_le32_to_cpu(t->dt_checksum));
	}
	if (count > limit || count > fit) {
		printf("Entry count %u is past the limit or the block; "
		       "%u read\n", count, limit < fit ? limit : fit);
		count = limit < fit ? limit : fit;
		c->failed = 1;
	}
	for (i = 0; i < count; i++) {
		__u32 hash = i ? ext2fs_le32_to_cpu(ent[i].hash) : 0;

		printf("Entry #%u: Hash 0x%08x%s, block %u\n", i, hash,
		       (hash & 1) ? " (**)" : "",
		       ext2fs_le32_to_cpu(ent[i].block));
	}
	printf("\n");
	child = malloc(bs);
	if (!child) {
		printf("Out of memory\n");
		c->failed = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		__u32 blk = ext2fs_le32_to_cpu(ent[i].block);

		printf("Entry #%u: Hash 0x%08x, block %u\n", i,
		       i ? ext2fs_le32_to_cpu(ent[i].hash) : 0, blk);
		if (level)
			ht_block(c, blk, child, level - 1);
		else
			ht_leaf(c, blk, child);
	}
	free(child);
	printf("---------------------\n");
}

/* An interior index block: a fake dirent of 8 bytes, then the entries. */
static void ht_block(struct ht_ctx *c, blk64_t lblk, char *buf, int level)
{
	blk64_t pblk;
	errcode_t err;

	if (ext2fs_test_block_bitmap2(c->seen, lblk)) {
		printf("Index block %llu named again, not followed\n",
		       (unsigned long long)lblk);
		c->failed = 1;
		return;
	}
	ext2fs_mark_block_bitmap2(c->seen, lblk);
	if (ht_map(c, lblk, &pblk))
		return;
	err = io_channel_read_blk64(sh.fs->io, pblk, 1, buf);
	if (err) {
		fflush(stdout);
		fprintf(stderr, "%s: reading block %llu: %s\n", c->a->name,
			(unsigned long long)pblk, error_message(err));
		c->failed = 1;
		return;
	}
	ht_node(c, buf, 8, level);
}

int impl_htree(struct cmd_args *a)
{
	struct ext2_dx_root_info *root;
	struct ht_ctx c;
	blk64_t pblk;
	errcode_t err;
	char *buf;
	int levels;

	memset(&c, 0, sizeof(c));
	c.a = a;
	if (a->argc) {
		if (resolve_path(a, a->argv[0], &c.ino))
			return 1;
	} else {
		c.ino = sh.cwd;
	}
	if (read_inode(a, c.ino, &c.inode))
		return 1;
	if (!LINUX_S_ISDIR(c.inode.i_mode))
		return cmd_fail(a, "Not a directory");
	if (!(c.inode.i_flags & EXT2_INDEX_FL))
		return cmd_fail(a, "Not a hash-indexed directory");
	if (c.inode.i_flags & EXT4_INLINE_DATA_FL)
		return cmd_fail(a, "inline data directory with the index flag");
	buf = malloc(sh.fs->blocksize);
	if (!buf)
		return cmd_fail(a, "out of memory");
	if (ht_map(&c, 0, &pblk)) {
		free(buf);
		return 1;
	}
	err = io_channel_read_blk64(sh.fs->io, pblk, 1, buf);
	if (err) {
		free(buf);
		return cmd_err(a, err, "Error reading root node");
	}
	root = (void *)(buf + 24);
	printf("Root node dump:\n");
	printf("\t Reserved zero: %u\n", ext2fs_le32_to_cpu(root->reserved_zero));
	printf("\t Hash Version: %d\n", root->hash_version);
	printf("\t Info length: %d\n", root->info_length);
	printf("\t Indirect levels: %d\n", root->indirect_levels);
	printf("\t Flags: %d\n", root->unused_flags);
	c.hash_alg = root->hash_version;
	if (c.hash_alg <= EXT2_HASH_TEA &&
	    (sh.fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH))
		c.hash_alg += 3;
	c.hash_flags = c.inode.i_flags & EXT4_CASEFOLD_FL;
	levels = root->indirect_levels;
	err = ext2fs_alloc_generic_bmap(sh.fs, EXT2_ET_MAGIC_BLOCK_BITMAP64,
					EXT2FS_BMAP64_RBTREE, 0, 0xffffffffULL,
					0xffffffffULL, "htree", &c.seen);
	if (err) {
		free(buf);
		return cmd_err(a, err, "allocating a bitmap");
	}
	ext2fs_mark_block_bitmap2(c.seen, 0);
	if (levels >= HT_MAX_LEVELS) {
		printf("Indirect levels %d: more than %d, not followed\n",
		       levels, HT_MAX_LEVELS - 1);
		c.failed = 1;
	} else {
		ht_node(&c, buf, 24 + root->info_length, levels);
	}
	ext2fs_free_block_bitmap(c.seen);
	free(buf);
	return c.failed;
}
