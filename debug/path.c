/*
 * path.c --- path resolution for debugfs.extref: absolute paths, paths
 * relative to the shell's current directory, and <ino>.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

/* "<123>" -> 123; 0 when s is not of that form. */
static ext2_ino_t parse_ino_spec(const char *s)
{
	size_t n = strlen(s);
	__u64 v;
	char *tmp;
	int bad;

	if (n < 3 || s[0] != '<' || s[n - 1] != '>')
		return 0;
	tmp = strndup(s + 1, n - 2);
	if (!tmp)
		return 0;
	bad = parse_u64(tmp, &v);
	free(tmp);
	if (bad || v == 0 || v > 0xffffffffULL)
		return 0;
	return (ext2_ino_t)v;
}

int resolve_path(const struct cmd_args *a, const char *path, ext2_ino_t *ino)
{
	errcode_t err;
	ext2_ino_t i;

	if (path[0] == '<') {
		i = parse_ino_spec(path);
		if (!i || i > sh.fs->super->s_inodes_count)
			return cmd_fail(a, "%s: bad inode number", path);
		*ino = i;
		return 0;
	}
	if (!*path) {
		*ino = sh.cwd;
		return 0;
	}
	/* with search permission for the identity (--as) */
	err = extref_namei(sh.xfs, EXT2_ROOT_INO, sh.cwd, path, 0, &i);
	if (err)
		return cmd_err(a, err, "%s", path);
	*ino = i;
	return 0;
}

int resolve_parent(const struct cmd_args *a, const char *path,
		   ext2_ino_t *dir, char **name)
{
	char *copy = strdup(path), *slash, *base;
	size_t n;
	ext2_ino_t d;
	struct ext2_inode inode;
	errcode_t err;
	int ret = 1;

	if (!copy)
		return cmd_fail(a, "out of memory");
	n = strlen(copy);
	while (n > 1 && copy[n - 1] == '/')
		copy[--n] = 0;
	slash = strrchr(copy, '/');
	if (!slash) {
		d = sh.cwd;
		base = copy;
	} else {
		base = slash + 1;
		if (slash == copy) {
			d = EXT2_ROOT_INO;
		} else {
			*slash = 0;
			err = extref_namei(sh.xfs, EXT2_ROOT_INO, sh.cwd,
					   copy, EXTREF_NAMEI_FOLLOW, &d);
			if (err) {
				cmd_err(a, err, "%s", copy);
				goto out;
			}
		}
	}
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
		cmd_fail(a, "%s: needs a name in a directory", path);
		goto out;
	}
	if (strlen(base) > EXT2_NAME_LEN) {
		cmd_fail(a, "%s: name too long", path);
		goto out;
	}
	err = ext2fs_read_inode(sh.fs, d, &inode);
	if (err) {
		cmd_err(a, err, "%s: reading the parent directory", path);
		goto out;
	}
	if (!LINUX_S_ISDIR(inode.i_mode)) {
		cmd_fail(a, "%s: parent is not a directory", path);
		goto out;
	}
	/* the last name is looked up in d: search permission there (after
	 * ENOTDIR, as the kernel's walk) */
	err = extref_access(sh.xfs, d, EXTREF_MAY_EXEC);
	if (err) {
		cmd_err(a, err, "%s", path);
		goto out;
	}
	*dir = d;
	*name = strdup(base);
	ret = *name ? 0 : cmd_fail(a, "out of memory");
out:
	free(copy);
	return ret;
}

int check_absent(const struct cmd_args *a, ext2_ino_t dir, const char *name,
		 const char *path)
{
	ext2_ino_t ino;
	errcode_t err;

	err = extref_lookup(sh.xfs, dir, name, &ino);
	if (!err)
		return cmd_fail(a, "%s: File exists", path);
	if (err != EXT2_ET_FILE_NOT_FOUND)
		return cmd_err(a, err, "%s", path);
	return 0;
}

int read_inode(const struct cmd_args *a, ext2_ino_t ino,
	       struct ext2_inode_large *inode)
{
	errcode_t err;

	memset(inode, 0, sizeof(*inode));
	err = ext2fs_read_inode_full(sh.fs, ino, (struct ext2_inode *)inode,
				     sizeof(*inode));
	if (err)
		return cmd_err(a, err, "reading inode %u", ino);
	return 0;
}

int write_inode(const struct cmd_args *a, ext2_ino_t ino,
		struct ext2_inode_large *inode)
{
	errcode_t err;

	err = ext2fs_write_inode_full(sh.fs, ino, (struct ext2_inode *)inode,
				      sizeof(*inode));
	if (err)
		return cmd_err(a, err, "writing inode %u", ino);
	return 0;
}

/* ----- inode -> path ----- */

struct find_ctx {
	ext2_ino_t	want;
	ext2_ino_t	found_dir;
	char		name[EXT2_NAME_LEN + 1];
	int		depth;
};

static int find_in_dir(ext2_ino_t dir, struct find_ctx *ctx);

struct find_iter {
	struct find_ctx	*ctx;
	ext2_ino_t	dir;
	ext2_ino_t	*subdirs;
	int		nsub, cap;
};

static int find_cb(struct ext2_dir_entry *de, int offset, int blocksize,
		   char *buf, void *priv)
{
	struct find_iter *it = priv;
	int len = ext2fs_dirent_name_len(de);

	(void)offset; (void)blocksize; (void)buf;
	if (!de->inode || is_dot_entry(de))
		return 0;
	if (de->inode == it->ctx->want) {
		it->ctx->found_dir = it->dir;
		memcpy(it->ctx->name, de->name, len);
		it->ctx->name[len] = 0;
		return DIRENT_ABORT;
	}
	if (ext2fs_dirent_file_type(de) == EXT2_FT_DIR) {
		if (it->nsub == it->cap) {
			int cap = it->cap ? it->cap * 2 : 16;
			ext2_ino_t *n = realloc(it->subdirs, cap * sizeof(*n));

			if (!n)
				return DIRENT_ABORT;
			it->subdirs = n;
			it->cap = cap;
		}
		it->subdirs[it->nsub++] = de->inode;
	}
	return 0;
}

/* Depth-first search for an entry naming ctx->want (bounded). */
static int find_in_dir(ext2_ino_t dir, struct find_ctx *ctx)
{
	struct find_iter it;
	int i;

	if (ctx->depth > 64)
		return 0;
	memset(&it, 0, sizeof(it));
	it.ctx = ctx;
	it.dir = dir;
	ext2fs_dir_iterate(sh.fs, dir, 0, NULL, find_cb, &it);
	if (!ctx->found_dir) {
		ctx->depth++;
		for (i = 0; i < it.nsub; i++)
			if (find_in_dir(it.subdirs[i], ctx))
				break;
		ctx->depth--;
	}
	free(it.subdirs);
	return ctx->found_dir != 0;
}

char *inode_path(ext2_ino_t ino)
{
	struct ext2_inode inode;
	struct find_ctx ctx;
	char *name = NULL, *res;
	size_t n;

	if (ext2fs_read_inode(sh.fs, ino, &inode) == 0 &&
	    LINUX_S_ISDIR(inode.i_mode) &&
	    ext2fs_get_pathname(sh.fs, ino, 0, &name) == 0) {
		res = strdup(name);
		ext2fs_free_mem(&name);
		return res;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.want = ino;
	if (ino != EXT2_ROOT_INO && find_in_dir(EXT2_ROOT_INO, &ctx) &&
	    ext2fs_get_pathname(sh.fs, ctx.found_dir, 0, &name) == 0) {
		n = strlen(name) + strlen(ctx.name) + 2;
		res = malloc(n);
		if (res)
			snprintf(res, n, "%s%s%s", name,
				 strcmp(name, "/") ? "/" : "", ctx.name);
		ext2fs_free_mem(&name);
		return res;
	}
	res = malloc(16);
	if (res)
		snprintf(res, 16, "<%u>", ino);
	return res;
}
