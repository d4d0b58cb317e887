/*
 * fsck_names.c --- how problems name things: block ranges, and inodes
 * with their paths.
 *
 * A file's inode does not say which directory holds it, so, as e2fsck's
 * pass 1C does for multiply-claimed blocks, the directories are read
 * once, on the first name asked for, and the entries' parents kept
 * (8 bytes an entry, freed with the checker).  A clean image never pays
 * for it.  The directories are those the inode scan met.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "extref_fsck_int.h"

errcode_t xr_fsck_note_dir(struct xr_fsck *c, ext2_ino_t ino)
{
	errcode_t err = xr_grow(&c->dirs, &c->capdirs, c->ndirs,
				sizeof(*c->dirs));

	if (!err)
		c->dirs[c->ndirs++] = ino;
	return err;
}

struct collect {
	struct xr_fsck	*c;
	ext2_ino_t	dir;
	errcode_t	err;
};

static int on_entry(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		    int offset, int blocksize, char *buf, void *priv)
{
	struct collect *w = priv;
	struct xr_fsck *c = w->c;

	(void) dir; (void) offset; (void) blocksize; (void) buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE ||
	    !de->inode)
		return 0;
	w->err = xr_grow(&c->parents, &c->capparents, c->nparents,
			 sizeof(*c->parents));
	if (w->err)
		return DIRENT_ABORT;
	c->parents[c->nparents].ino = de->inode;
	c->parents[c->nparents].dir = w->dir;
	c->nparents++;
	return 0;
}

/* Every directory entry's (inode, directory), sorted by inode. */
static void load_parents(struct xr_fsck *c)
{
	struct collect w = { .c = c };
	size_t i;

	c->parents_loaded = 1;
	for (i = 0; i < c->ndirs && !w.err; i++) {
		w.dir = c->dirs[i];
		/* a directory that cannot be read names nothing */
		(void) ext2fs_dir_iterate2(c->fs, w.dir, 0, NULL, on_entry,
					   &w);
	}
	xr_sort_parents(c->parents, c->nparents);
}

static ext2_ino_t parent_of(struct xr_fsck *c, ext2_ino_t ino)
{
	size_t lo = XR_LOWER_BOUND(c->parents, c->nparents, ino, ino);

	return lo < c->nparents && c->parents[lo].ino == ino ?
	       c->parents[lo].dir : 0;
}

/*
 * "N" or "N (/path)" for inode N into buf (the path cut to fit).  Only
 * files and directories of the namespace have paths.
 */
const char *xr_fsck_ino_name(struct xr_fsck *c, ext2_ino_t ino, char *buf,
			     size_t len)
{
	ext2_ino_t dir;
	char *name = NULL;

	snprintf(buf, len, "%u", ino);
	if (ino != EXT2_ROOT_INO && ino < EXT2_FIRST_INO(c->fs->super))
		return buf;
	if (!c->parents_loaded)
		load_parents(c);
	dir = ino == EXT2_ROOT_INO ? EXT2_ROOT_INO : parent_of(c, ino);
	if (!dir || ext2fs_get_pathname(c->fs, dir, ino == dir ? 0 : ino,
					&name))
		return buf;
	snprintf(buf, len, "%u (%s)", ino, name);
	ext2fs_free_mem(&name);
	return buf;
}

static int ino_cmp(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The distinct inodes that map blocks of [s, e), ascending, into *v
 * (allocated; *n of them).  Linear in the mappings that reach the range.
 */
errcode_t xr_fsck_owner_inos(struct xr_fsck *c, blk64_t s, blk64_t e,
			     __u32 **v, size_t *n)
{
	size_t i, k, cap = 0;
	errcode_t err = 0;

	*v = NULL;
	*n = 0;
	for (i = xr_fsck_first_map(c, s); !err && i < c->nmap &&
	     c->map[i].pblk < e; i++) {
		if (c->map[i].pblk + c->map[i].len <= s)
			continue;
		err = xr_grow(v, &cap, *n, sizeof(**v));
		if (!err)
			(*v)[(*n)++] = c->map[i].ino;
	}
	if (err) {
		ext2fs_free_mem(v);
		*n = 0;
		return err;
	}
	if (*n)
		qsort(*v, *n, sizeof(**v), ino_cmp);
	for (i = k = 0; i < *n; i++)
		if (!k || (*v)[k - 1] != (*v)[i])
			(*v)[k++] = (*v)[i];
	*n = k;
	return 0;
}

/*
 * "N (/path), M (/path)" for the inodes mapping [s, e), ascending, into
 * *out (allocated): at most max of them (0: all), then ", and K more".
 */
errcode_t xr_fsck_owners(struct xr_fsck *c, blk64_t s, blk64_t e,
			 size_t max, char **out)
{
	char name[XR_NAME_LEN];
	size_t i, n, shown, len, off = 0;
	__u32 *v;
	errcode_t err;

	*out = NULL;
	v = NULL;
	n = 0;
	/* the probe's problems are reported by the full run */
	err = c->probe ? 0 : xr_fsck_owner_inos(c, s, e, &v, &n);
	if (err)
		return err;
	shown = max && n > max ? max : n;
	len = shown * (XR_NAME_LEN + 2) + 64;
	err = ext2fs_get_mem(len, out);
	for (i = 0; !err && i < shown; i++)
		off += snprintf(*out + off, len - off, "%s%s", i ? ", " : "",
				xr_fsck_ino_name(c, v[i], name, sizeof(name)));
	if (!err && shown < n)
		snprintf(*out + off, len - off, ", and %zu more (-v names "
			 "all)", n - shown);
	if (!err && !n)
		snprintf(*out, len, "none");
	ext2fs_free_mem(&v);
	return err;
}

/* "block S" or "blocks S-L" for [s, e) into buf. */
const char *xr_fsck_range(blk64_t s, blk64_t e, char *buf, size_t len)
{
	if (e - s == 1)
		snprintf(buf, len, "block %llu", (unsigned long long)s);
	else
		snprintf(buf, len, "blocks %llu-%llu", (unsigned long long)s,
			 (unsigned long long)e - 1);
	return buf;
}

void xr_fsck_names_free(struct xr_fsck *c)
{
	ext2fs_free_mem(&c->dirs);
	ext2fs_free_mem(&c->parents);
	c->ndirs = c->capdirs = c->nparents = c->capparents = 0;
	c->parents_loaded = 0;
}
