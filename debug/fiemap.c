/*
 * fiemap.c --- "fiemap [-v] PATH": the extent map as xfs_io prints it,
 * in 512-byte sectors, with FIEMAP_EXTENT_SHARED on runs that have a
 * reference-count record.
 */
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

#define FIEMAP_EXTENT_LAST		0x00000001
#define FIEMAP_EXTENT_UNWRITTEN		0x00000800
#define FIEMAP_EXTENT_SHARED		0x00002000

struct fm_ext {
	__u64	logical;	/* bytes */
	__u64	physical;
	__u64	length;
	__u32	flags;
};

struct fm_ctx {
	struct fm_ext	*v;
	size_t		n, cap;
	struct fext	ext;
	int		nomem;
};

static int fm_push(struct fm_ctx *c, __u64 l, __u64 p, __u64 len, __u32 fl)
{
	struct fm_ext *last = c->n ? &c->v[c->n - 1] : NULL;

	/* Merge runs contiguous in the file and on disk with equal flags. */
	if (last && last->logical + last->length == l &&
	    last->physical + last->length == p && last->flags == fl) {
		last->length += len;
		return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		struct fm_ext *nv = realloc(c->v, cap * sizeof(*nv));

		if (!nv) {
			c->nomem = 1;
			return 1;
		}
		c->v = nv;
		c->cap = cap;
	}
	c->v[c->n].logical = l;
	c->v[c->n].physical = p;
	c->v[c->n].length = len;
	c->v[c->n].flags = fl;
	c->n++;
	return 0;
}

static int fm_run_cb(blk64_t pblk, blk64_t len, __u32 count, void *priv)
{
	struct fm_ctx *c = priv;
	__u64 bs = sh.fs->blocksize;
	blk64_t lblk = c->ext.lblk + (pblk - c->ext.pblk);
	__u32 fl = 0;

	if (count >= 2)
		fl |= FIEMAP_EXTENT_SHARED;
	if (c->ext.unwritten)
		fl |= FIEMAP_EXTENT_UNWRITTEN;
	return fm_push(c, lblk * bs, pblk * bs, len * bs, fl);
}

static int fm_ext_cb(const struct fext *e, void *priv)
{
	struct fm_ctx *c = priv;

	c->ext = *e;
	return refcount_runs(e->pblk, e->len, fm_run_cb, c) || c->nomem;
}

static int numlen(__u64 v, int base)
{
	int n = 1;

	while (v >= (__u64)base) {
		v /= base;
		n++;
	}
	return n;
}

#define BB(x)	((unsigned long long)((x) >> 9))

int impl_fiemap(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	struct fm_ctx c;
	ext2_ino_t ino;
	errcode_t err;
	int verbose = a->opts['v'];
	int foff_w = 16, boff_w = 16, tot_w = 5, flg_w = 5;
	int cur = 0;
	size_t i;
	__u64 last = 0, size, end;
	char lbuf[64], bbuf[64], fbuf[16];

	if (resolve_path(a, a->argv[0], &ino) || read_inode(a, ino, &inode))
		return 1;
	memset(&c, 0, sizeof(c));
	err = walk_extents(ino, &inode, fm_ext_cb, &c);
	if (c.nomem) {
		free(c.v);
		return cmd_fail(a, "out of memory");
	}
	if (err) {
		free(c.v);
		return cmd_err(a, err, "walking the extents of %s", a->argv[0]);
	}
	if (c.n)
		c.v[c.n - 1].flags |= FIEMAP_EXTENT_LAST;
	size = EXT2_I_SIZE(&inode);

	for (i = 0; i < c.n; i++) {
		snprintf(lbuf, sizeof(lbuf), "[%llu..%llu]:", BB(c.v[i].logical),
			 BB(c.v[i].logical + c.v[i].length) - 1);
		snprintf(bbuf, sizeof(bbuf), "%llu..%llu", BB(c.v[i].physical),
			 BB(c.v[i].physical + c.v[i].length) - 1);
		if ((int)strlen(lbuf) > foff_w)
			foff_w = strlen(lbuf);
		if ((int)strlen(bbuf) > boff_w)
			boff_w = strlen(bbuf);
		if (numlen(BB(c.v[i].length), 10) > tot_w)
			tot_w = numlen(BB(c.v[i].length), 10);
		if (numlen(c.v[i].flags, 16) > flg_w)
			flg_w = numlen(c.v[i].flags, 16);
	}

	printf("%s:\n", esc(a->argv[0]));
	for (i = 0; i < c.n; i++) {
		struct fm_ext *e = &c.v[i];

		if (BB(e->logical) != BB(last)) {
			snprintf(lbuf, sizeof(lbuf), "[%llu..%llu]:", BB(last),
				 BB(e->logical) - 1);
			if (verbose) {
				if (!cur)
					printf("%4s: %-*s %-*s %*s %*s\n", "EXT",
					       foff_w, "FILE-OFFSET", boff_w,
					       "BLOCK-RANGE", tot_w, "TOTAL",
					       flg_w, "FLAGS");
				printf("%4d: %-*s %-*s %*llu\n", cur, foff_w,
				       lbuf, boff_w, "hole", tot_w,
				       BB(e->logical) - BB(last));
			} else {
				printf("\t%d: [%llu..%llu]: hole\n", cur,
				       BB(last), BB(e->logical) - 1);
			}
			cur++;
		}
		snprintf(lbuf, sizeof(lbuf), "[%llu..%llu]:", BB(e->logical),
			 BB(e->logical + e->length) - 1);
		snprintf(bbuf, sizeof(bbuf), "%llu..%llu", BB(e->physical),
			 BB(e->physical + e->length) - 1);
		if (verbose) {
			if (!cur)
				printf("%4s: %-*s %-*s %*s %*s\n", "EXT",
				       foff_w, "FILE-OFFSET", boff_w,
				       "BLOCK-RANGE", tot_w, "TOTAL", flg_w,
				       "FLAGS");
			snprintf(fbuf, sizeof(fbuf), "0x%x", e->flags);
			printf("%4d: %-*s %-*s %*llu %*s\n", cur, foff_w, lbuf,
			       boff_w, bbuf, tot_w, BB(e->length), flg_w, fbuf);
		} else {
			printf("\t%d: %s %s\n", cur, lbuf, bbuf);
		}
		cur++;
		last = e->logical + e->length;
	}
	/* A hole from the last extent to EOF (in whole sectors). */
	end = (size + 511) & ~511ULL;
	if (BB(last) < BB(end)) {
		snprintf(lbuf, sizeof(lbuf), "[%llu..%llu]:", BB(last),
			 BB(end) - 1);
		if (verbose) {
			if (!cur)
				printf("%4s: %-*s %-*s %*s %*s\n", "EXT",
				       foff_w, "FILE-OFFSET", boff_w,
				       "BLOCK-RANGE", tot_w, "TOTAL", flg_w,
				       "FLAGS");
			printf("%4d: %-*s %-*s %*llu\n", cur, foff_w, lbuf,
			       boff_w, "hole", tot_w, BB(end) - BB(last));
		} else {
			printf("\t%d: [%llu..%llu]: hole\n", cur, BB(last),
			       BB(end) - 1);
		}
	}
	free(c.v);
	return 0;
}
