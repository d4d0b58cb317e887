/*
 * du.c --- "du [-s] [--raw] PATH...": disk usage in the columns of
 * `btrfs filesystem du`:
 *
 *	Total		bytes of every mapped block of the regular files
 *	Exclusive	bytes of blocks with no reference-count record
 *	Set shared	directory rows: the union of the shared (recorded)
 *			blocks under the directory, each counted once;
 *			"-" on file rows
 *
 * Only regular files count (directory blocks, symlinks and devices do
 * not), as btrfs counts only file extents.  Directory entries are walked
 * in name order.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

struct range {
	blk64_t	start;
	blk64_t	len;
};

struct rangevec {
	struct range	*v;
	size_t		n, cap;
};

static int rv_add(struct rangevec *rv, blk64_t start, blk64_t len)
{
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 32;
		struct range *nv = realloc(rv->v, cap * sizeof(*nv));

		if (!nv)
			return 1;
		rv->v = nv;
		rv->cap = cap;
	}
	rv->v[rv->n].start = start;
	rv->v[rv->n].len = len;
	rv->n++;
	return 0;
}

static int range_cmp(const void *x, const void *y)
{
	const struct range *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Blocks in the union of the ranges. */
static blk64_t rv_union(struct rangevec *rv)
{
	blk64_t total = 0, cur_s = 0, cur_e = 0;
	size_t i;

	if (!rv->n)
		return 0;
	qsort(rv->v, rv->n, sizeof(rv->v[0]), range_cmp);
	cur_s = rv->v[0].start;
	cur_e = cur_s + rv->v[0].len;
	for (i = 1; i < rv->n; i++) {
		blk64_t s = rv->v[i].start, e = s + rv->v[i].len;

		if (s <= cur_e) {
			if (e > cur_e)
				cur_e = e;
			continue;
		}
		total += cur_e - cur_s;
		cur_s = s;
		cur_e = e;
	}
	return total + (cur_e - cur_s);
}

struct du_opts {
	int			summary;
	int			raw;
	int			nomem;
	ext2fs_inode_bitmap	seen;	/* files with several links and
					 * directories, counted */
};

struct file_ctx {
	blk64_t		total, excl;
	struct rangevec	*shared;
	int		nomem;
};

static int du_run_cb(blk64_t pblk, blk64_t len, __u32 count, void *priv)
{
	struct file_ctx *c = priv;

	c->total += len;
	if (count <= 1)
		c->excl += len;
	else if (c->shared && rv_add(c->shared, pblk, len))
		c->nomem = 1;
	return c->nomem;
}

static int du_ext_cb(const struct fext *e, void *priv)
{
	return refcount_runs(e->pblk, e->len, du_run_cb, priv) ? 1 : 0;
}

static void du_row(const struct du_opts *o, blk64_t total, blk64_t excl,
		   long long set_shared, const char *name)
{
	char t[32], x[32], s[32];
	__u64 bs = sh.fs->blocksize;

	human_size(total * bs, o->raw, t, sizeof(t));
	human_size(excl * bs, o->raw, x, sizeof(x));
	if (set_shared < 0)
		strcpy(s, "-");
	else
		human_size((__u64)set_shared * bs, o->raw, s, sizeof(s));
	printf("%10s  %10s  %10s  %s\n", t, x, s, esc(name));
}

static int du_path(struct cmd_args *a, const struct du_opts *o,
		   ext2_ino_t ino, const char *name, int top,
		   blk64_t *total, blk64_t *excl, struct rangevec *parent);

static int du_dir(struct cmd_args *a, const struct du_opts *o, ext2_ino_t dir,
		  const char *name, blk64_t *total, blk64_t *excl,
		  struct rangevec *set, int depth)
{
	struct extref_dirlist nm;
	errcode_t err;
	size_t i;
	int ret = 0;

	if (depth > 256)
		return cmd_fail(a, "%s: directory tree too deep", name);
	err = extref_dir_list(sh.xfs, dir, EXTREF_DIRLIST_SORTED, &nm);
	if (err)
		return cmd_err(a, err, "%s", name);
	for (i = 0; i < nm.n; i++) {
		size_t len = strlen(name) + strlen(nm.v[i].name) + 2;
		char *child = malloc(len);

		if (!child) {
			ret = cmd_fail(a, "out of memory");
			break;
		}
		snprintf(child, len, "%s%s%s", name,
			 (*name && name[strlen(name) - 1] == '/') ? "" : "/",
			 nm.v[i].name);
		ret |= du_path(a, o, nm.v[i].ino, child, depth + 1, total, excl,
			       set);
		free(child);
	}
	extref_dir_list_free(&nm);
	return ret;
}

/*
 * One file or directory: adds its blocks to *total / *excl and its shared
 * ranges to parent (when not NULL); prints its row unless -s hides it.
 * depth 0 is an argument.
 */
static int du_path(struct cmd_args *a, const struct du_opts *o,
		   ext2_ino_t ino, const char *name, int depth,
		   blk64_t *total, blk64_t *excl, struct rangevec *parent)
{
	struct ext2_inode_large inode;
	int show = depth == 0 || !o->summary;
	errcode_t err;
	size_t i;

	if (read_inode(a, ino, &inode))
		return 1;
	if (LINUX_S_ISREG(inode.i_mode)) {
		struct file_ctx c;

		/* a file with several names is counted once an argument,
		 * under its first name, as btrfs filesystem du does */
		if (inode.i_links_count > 1) {
			if (ext2fs_test_inode_bitmap2(o->seen, ino))
				return 0;
			ext2fs_mark_inode_bitmap2(o->seen, ino);
		}
		memset(&c, 0, sizeof(c));
		c.shared = parent;
		err = walk_extents(ino, &inode, du_ext_cb, &c);
		if (c.nomem)
			return cmd_fail(a, "out of memory");
		if (err)
			return cmd_err(a, err, "%s", name);
		*total += c.total;
		*excl += c.excl;
		if (show)
			du_row(o, c.total, c.excl, -1, name);
		return 0;
	}
	if (LINUX_S_ISDIR(inode.i_mode)) {
		struct rangevec set = { NULL, 0, 0 };
		blk64_t t = 0, x = 0;
		int ret;

		/* directories have one name: a second (a damaged image)
		 * would make the walk as long as the paths are many */
		if (ext2fs_test_inode_bitmap2(o->seen, ino))
			return cmd_fail(a, "%s: directory inode %u reached "
					"again by another name, not followed",
					name, ino);
		ext2fs_mark_inode_bitmap2(o->seen, ino);
		ret = du_dir(a, o, ino, name, &t, &x, &set, depth);
		if (show)
			du_row(o, t, x, (long long)rv_union(&set), name);
		for (i = 0; parent && i < set.n && !ret; i++)
			if (rv_add(parent, set.v[i].start, set.v[i].len))
				ret = cmd_fail(a, "out of memory");
		free(set.v);
		*total += t;
		*excl += x;
		return ret;
	}
	/* Symlinks, devices, FIFOs: no file extents, no row. */
	if (depth == 0)
		du_row(o, 0, 0, -1, name);
	return 0;
}

int impl_du(struct cmd_args *a)
{
	struct du_opts o = { a->opts['s'], a->opts['R'], 0, NULL };
	errcode_t err;
	int i, ret = 0;

	err = ext2fs_allocate_inode_bitmap(sh.fs, "du", &o.seen);
	if (err)
		return cmd_err(a, err, "allocating an inode bitmap");
	printf("%10s  %10s  %10s  %s\n", "Total", "Exclusive", "Set shared",
	       "Filename");
	for (i = 0; i < a->argc; i++) {
		blk64_t t = 0, x = 0;
		ext2_ino_t ino;

		ext2fs_clear_inode_bitmap(o.seen);
		if (resolve_path(a, a->argv[i], &ino)) {
			ret = 1;
			continue;
		}
		ret |= du_path(a, &o, ino, a->argv[i], 0, &t, &x, NULL);
	}
	ext2fs_free_inode_bitmap(o.seen);
	return ret;
}
