/*
 * names.c --- debugfs's lookup commands, in stock debugfs's syntax and
 * output: ncheck (names of inodes), icheck (owners of blocks), blocks,
 * bmap, dirsearch, ffb, ffi.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

/* ----- ncheck [-c] INODE... ----- */

struct nc_ctx {
	const ext2_ino_t *want;
	int		nwant;
	int		check_type;
	ext2_ino_t	dir;
	char		*dirpath;	/* of dir, once a match needs it */
	int		pathfail;
};

static int mode_ftype(__u16 mode)
{
	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFREG: return EXT2_FT_REG_FILE;
	case LINUX_S_IFDIR: return EXT2_FT_DIR;
	case LINUX_S_IFCHR: return EXT2_FT_CHRDEV;
	case LINUX_S_IFBLK: return EXT2_FT_BLKDEV;
	case LINUX_S_IFIFO: return EXT2_FT_FIFO;
	case LINUX_S_IFSOCK: return EXT2_FT_SOCK;
	case LINUX_S_IFLNK: return EXT2_FT_SYMLINK;
	default: return EXT2_FT_UNKNOWN;
	}
}

static int nc_type_ok(ext2_ino_t ino, int ftype)
{
	struct ext2_inode inode;
	int want;

	if (ext2fs_read_inode(sh.fs, ino, &inode))
		return 1;
	want = mode_ftype(inode.i_mode);
	return ftype == want;
}

static int nc_cb(struct ext2_dir_entry *de, int offset, int blocksize,
		 char *buf, void *priv)
{
	struct nc_ctx *c = priv;
	int len = ext2fs_dirent_name_len(de), i;

	(void)offset; (void)blocksize; (void)buf;
	if (!de->inode || is_dot_entry(de))
		return 0;
	for (i = 0; i < c->nwant; i++) {
		if (c->want[i] != de->inode)
			continue;
		if (!c->dirpath && !c->pathfail &&
		    ext2fs_get_pathname(sh.fs, c->dir, 0, &c->dirpath))
			c->pathfail = 1;
		printf("%u\t%s/%.*s", de->inode,
		       c->dirpath && strcmp(c->dirpath, "/") ? c->dirpath :
		       (c->dirpath ? "" : "???"), len, de->name);
		if (c->check_type &&
		    !nc_type_ok(de->inode, ext2fs_dirent_file_type(de)))
			printf("  <--- BAD FILETYPE");
		printf("\n");
		break;
	}
	return 0;
}

int impl_ncheck(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	ext2_inode_scan scan;
	ext2_ino_t *want, ino;
	struct nc_ctx c;
	errcode_t err;
	int i, ret = 0;

	want = calloc(a->argc, sizeof(*want));
	if (!want)
		return cmd_fail(a, "out of memory");
	for (i = 0; i < a->argc; i++) {
		__u64 v;
		const char *s = a->argv[i];

		if (s[0] == '<' && s[1] && s[strlen(s) - 1] == '>') {
			if (resolve_path(a, s, &want[i])) {
				free(want);
				return 1;
			}
			continue;
		}
		if (parse_u64(s, &v) || !v || v > sh.fs->super->s_inodes_count) {
			free(want);
			return cmd_fail(a, "bad inode number: %s", s);
		}
		want[i] = (ext2_ino_t)v;
	}
	err = ext2fs_open_inode_scan(sh.fs, 0, &scan);
	if (err) {
		free(want);
		return cmd_err(a, err, "opening the inode scan");
	}
	printf("Inode\tPathname\n");
	memset(&c, 0, sizeof(c));
	c.want = want;
	c.nwant = a->argc;
	c.check_type = a->opts['c'];
	for (;;) {
		err = ext2fs_get_next_inode_full(scan, &ino,
						 (struct ext2_inode *)&inode,
						 sizeof(inode));
		if (err == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
			continue;
		if (err) {
			ret = cmd_err(a, err, "scanning inodes");
			break;
		}
		if (!ino)
			break;
		if (!inode.i_links_count || inode.i_dtime ||
		    !LINUX_S_ISDIR(inode.i_mode))
			continue;
		c.dir = ino;
		c.pathfail = 0;
		/* A damaged directory is skipped, as stock debugfs does. */
		ext2fs_dir_iterate(sh.fs, ino, 0, NULL, nc_cb, &c);
		if (c.dirpath)
			ext2fs_free_mem(&c.dirpath);
	}
	ext2fs_close_inode_scan(scan);
	free(want);
	return ret;
}

/* ----- icheck BLOCK... ----- */

struct ic_owner {
	blk64_t		blk;
	ext2_ino_t	ino;
};

struct ic_ctx {
	struct ic_owner	*own;
	size_t		n, cap;
	int		nomem;
};

static int ic_cb(ext2_ino_t ino, blk64_t blk, enum bown_kind kind,
		 blk64_t lblk, void *priv)
{
	struct ic_ctx *c = priv;
	size_t i;

	(void)kind; (void)lblk;
	/* Owners arrive in inode order: one line per (block, inode). */
	for (i = c->n; i > 0 && c->own[i - 1].ino == ino; i--)
		if (c->own[i - 1].blk == blk)
			return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct ic_owner *o = realloc(c->own, cap * sizeof(*o));

		if (!o) {
			c->nomem = 1;
			return 1;
		}
		c->own = o;
		c->cap = cap;
	}
	c->own[c->n].blk = blk;
	c->own[c->n].ino = ino;
	c->n++;
	return 0;
}

static int cmp_blk(const void *x, const void *y)
{
	blk64_t a = *(const blk64_t *)x, b = *(const blk64_t *)y;

	return a < b ? -1 : a > b;
}

int impl_icheck(struct cmd_args *a)
{
	blk64_t *asked, *sorted;
	struct ic_ctx c;
	size_t n = a->argc, nu = 0, i, j;
	errcode_t err;
	int ret = 0;

	asked = calloc(n, sizeof(*asked));
	sorted = calloc(n, sizeof(*sorted));
	memset(&c, 0, sizeof(c));
	if (!asked || !sorted) {
		ret = cmd_fail(a, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		__u64 v;

		if (parse_u64(a->argv[i], &v)) {
			ret = cmd_fail(a, "Bad block - %s", a->argv[i]);
			goto out;
		}
		asked[i] = sorted[i] = v;
	}
	qsort(sorted, n, sizeof(*sorted), cmp_blk);
	for (i = 0; i < n; i++)
		if (!nu || sorted[nu - 1] != sorted[i])
			sorted[nu++] = sorted[i];
	err = scan_block_owners(sorted, nu, ic_cb, &c);
	if (c.nomem) {
		ret = cmd_fail(a, "out of memory");
		goto out;
	}
	if (err) {
		ret = cmd_err(a, err, "scanning inodes");
		goto out;
	}
	printf("Block\tInode number\n");
	for (i = 0; i < n; i++) {
		int found = 0;

		for (j = 0; j < c.n; j++) {
			if (c.own[j].blk != asked[i])
				continue;
			printf("%llu\t%u\n", (unsigned long long)asked[i],
			       c.own[j].ino);
			found = 1;
		}
		if (!found)
			printf("%llu\t<block not found>\n",
			       (unsigned long long)asked[i]);
	}
out:
	free(c.own);
	free(asked);
	free(sorted);
	return ret;
}

/* ----- blocks PATH ----- */

/* Every block of the file, its extent-tree blocks included, in the order
 * libext2fs's block iterator gives them, as stock debugfs's blocks. */
static int blocks_cb(ext2_filsys fs, blk64_t *blk, e2_blkcnt_t cnt,
		     blk64_t ref_blk, int ref_off, void *priv)
{
	(void)fs;
	(void)cnt;
	(void)ref_blk;
	(void)ref_off;
	(void)priv;
	printf("%llu ", (unsigned long long)*blk);
	return 0;
}

int impl_blocks(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	ext2_ino_t ino;
	errcode_t err = 0;

	if (resolve_path(a, a->argv[0], &ino) || read_inode(a, ino, &inode))
		return 1;
	if (ext2fs_inode_has_valid_blocks2(sh.fs, (struct ext2_inode *)&inode))
		err = extref_block_iterate(sh.fs, ino, BLOCK_FLAG_READ_ONLY,
				       blocks_cb, NULL);
	printf("\n");
	if (err)
		return cmd_err(a, err, "walking the blocks of %s", a->argv[0]);
	return 0;
}

/* ----- bmap PATH LBLK ----- */

int impl_bmap(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	ext2_ino_t ino;
	errcode_t err;
	__u64 lblk;
	blk64_t pblk = 0;
	int flags = 0;

	if (resolve_path(a, a->argv[0], &ino) || read_inode(a, ino, &inode) ||
	    parse_num_arg(a, a->argv[1], "logical block", &lblk))
		return 1;
	if (lblk > 0xffffffffULL)
		return cmd_fail(a, "logical block %s is past the largest (2^32-1)",
				a->argv[1]);
	err = ext2fs_bmap2(sh.fs, ino, (struct ext2_inode *)&inode, NULL, 0,
			   lblk, &flags, &pblk);
	if (err)
		return cmd_err(a, err, "while mapping logical block %llu",
			       (unsigned long long)lblk);
	printf("%llu", (unsigned long long)pblk);
	if (flags & BMAP_RET_UNINIT)
		printf(" (uninit)");
	printf("\n");
	return 0;
}

/* ----- dirsearch DIR NAME ----- */

struct ds_ctx {
	const char	*name;
	int		len;
	char		*buf;
	int		found;
	errcode_t	err;
};

static int ds_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		    blk64_t ref_blk, int ref_offset, void *priv)
{
	struct ds_ctx *c = priv;
	unsigned int off = 0, rec_len;

	(void)ref_blk; (void)ref_offset;
	if (blockcnt < 0)
		return 0;
	c->err = io_channel_read_blk64(fs->io, *blocknr, 1, c->buf);
	if (c->err)
		return BLOCK_ABORT;
	while (off + 8 <= fs->blocksize) {
		struct ext2_dir_entry *de = (void *)(c->buf + off);

		if (ext2fs_get_rec_len(fs, de, &rec_len) || rec_len < 8 ||
		    rec_len % 4 || off + rec_len > fs->blocksize)
			break;	/* a damaged block: look no further in it */
		if (de->inode && ext2fs_dirent_name_len(de) == c->len &&
		    (unsigned)c->len + 8 <= rec_len &&
		    !memcmp(de->name, c->name, c->len)) {
			printf("Entry found at logical block %lld, phys %llu, "
			       "offset %u\n", (long long)blockcnt,
			       (unsigned long long)*blocknr, off);
			printf("offset %u\n", off);
			c->found = 1;
			return BLOCK_ABORT;
		}
		off += rec_len;
	}
	return 0;
}

int impl_dirsearch(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	struct ds_ctx c;
	ext2_ino_t ino;
	errcode_t err;

	if (resolve_path(a, a->argv[0], &ino) || read_inode(a, ino, &inode))
		return 1;
	if (!LINUX_S_ISDIR(inode.i_mode))
		return cmd_fail(a, "%s: Not a directory", a->argv[0]);
	if (!ext2fs_inode_has_valid_blocks2(sh.fs, (struct ext2_inode *)&inode))
		return 0;	/* inline data: no blocks to search */
	memset(&c, 0, sizeof(c));
	c.name = a->argv[1];
	c.len = strlen(c.name);
	c.buf = malloc(sh.fs->blocksize);
	if (!c.buf)
		return cmd_fail(a, "out of memory");
	err = extref_block_iterate(sh.fs, ino, BLOCK_FLAG_READ_ONLY, ds_block, &c);
	free(c.buf);
	if (c.err)
		return cmd_err(a, c.err, "reading a block of %s", a->argv[0]);
	if (err)
		return cmd_err(a, err, "%s", a->argv[0]);
	return 0;
}

/* ----- ffb [COUNT [GOAL]], ffi [DIR [MODE]] ----- */

int impl_ffb(struct cmd_args *a)
{
	__u64 count = 1, goal = sh.fs->super->s_first_data_block;
	blk64_t found;
	errcode_t err;

	if (a->argc >= 1 && parse_num_arg(a, a->argv[0], "count", &count))
		return 1;
	if (a->argc >= 2 && parse_num_arg(a, a->argv[1], "goal", &goal))
		return 1;
	if (goal >= ext2fs_blocks_count(sh.fs->super))
		return cmd_fail(a, "goal %s is past the end of the filesystem",
				a->argv[1]);
	err = ext2fs_read_block_bitmap(sh.fs);
	if (err)
		return cmd_err(a, err, "reading the block bitmap");
	/* No more than there are: the search wraps around. */
	if (count > ext2fs_free_blocks_count(sh.fs->super))
		count = ext2fs_free_blocks_count(sh.fs->super);
	printf("Free blocks found: ");
	for (; count > 0; count--) {
		err = ext2fs_new_block2(sh.fs, goal, NULL, &found);
		if (err) {
			printf("\n");
			return cmd_err(a, err, "while searching for a free block");
		}
		printf("%llu ", (unsigned long long)found);
		goal = found + 1;
		if (goal >= ext2fs_blocks_count(sh.fs->super))
			goal = sh.fs->super->s_first_data_block;
	}
	printf("\n");
	return 0;
}

int impl_ffi(struct cmd_args *a)
{
	ext2_ino_t dir = EXT2_ROOT_INO, found;
	__u64 mode = 010755, v;
	errcode_t err;

	/* Stock debugfs takes the directory's number; a path works too. */
	if (a->argc >= 1 && !parse_u64(a->argv[0], &v)) {
		if (!v || v > sh.fs->super->s_inodes_count)
			return cmd_fail(a, "Bad dir - %s", a->argv[0]);
		dir = v;
	} else if (a->argc >= 1 && resolve_path(a, a->argv[0], &dir)) {
		return 1;
	}
	if (a->argc >= 2) {
		char *end;

		mode = strtoull(a->argv[1], &end, 8);
		if (!*a->argv[1] || *end || mode > 0177777)
			return cmd_fail(a, "bad mode: %s", a->argv[1]);
	}
	err = ext2fs_read_inode_bitmap(sh.fs);
	if (err)
		return cmd_err(a, err, "reading the inode bitmap");
	err = ext2fs_new_inode(sh.fs, dir, (int)mode, NULL, &found);
	if (err)
		return cmd_err(a, err, "while searching for a free inode");
	printf("Free inode found: %u\n", found);
	return 0;
}
