/*
 * populate_image.c --- an ext4 or extref image's tree into the new
 * image: the general copy of an image into new geometry (block size,
 * inode size, size), its sharing kept.
 *
 * The source (source_img.c) is open read-only; its directories are
 * walked from the root, each one's names sorted (strcmp) as a host
 * directory's are, every inode recreated with its owner, mode, four
 * times with nanoseconds, extended attributes (inline data's
 * "system.data" aside), device numbers, symlink target, the flags chattr
 * sets (immutable, append-only, nodump...); a non-directory
 * met again is a hard link of the first; a directory met again is
 * refused (a loop).  A regular file's data is read run by run from the
 * source's blocks: a block no other file maps goes through the populate
 * path (zeros stay holes); a new block whose bytes lie in source blocks
 * another file maps too is written once, and every later file whose
 * block has the same source bytes maps it: a reflink, counted in the
 * tree loaded at the end.  Nothing is hashed: the sharing is read off
 * the source's block numbers.  Across block sizes a new block is shared
 * when its bytes are contiguous on the source device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "source_img.h"
#include "base/extref_vec.h"

#define MAX_DEPTH	2048

/* A shared new block: the source byte address of its first byte. */
struct share_slot {
	__u64		addr;		/* 0: an empty slot */
	blk64_t		pblk;
	__u32		refs;
};

struct img {
	struct xr_pop		*p;
	struct xr_src		*src;		/* own, or the caller's */
	struct xr_src		own;
	struct xr_pop_table	links;		/* source inode -> new */
	ext2fs_inode_bitmap	dirs_seen;
	struct xr_src_runs	runs;
	struct share_slot	*v;
	size_t			mask, n;	/* slots - 1, in use */
	struct ext2_inode_large	*sin;		/* a source inode */
	char			*buf;		/* XR_POP_STAGE_BYTES */
	char			*one;		/* a source block */
	char			path[4096];	/* the entry, for errors */
	int			depth;
};

/* The slot of addr (its own, or the empty one it would take). */
static struct share_slot *slot_of(struct img *g, __u64 addr)
{
	size_t j = (size_t)((addr * 0x9e3779b97f4a7c15ULL) >> 20) & g->mask;

	while (g->v[j].addr && g->v[j].addr != addr)
		j = (j + 1) & g->mask;
	return &g->v[j];
}

static errcode_t table_grow(struct img *g)
{
	struct share_slot *old = g->v;
	size_t k, oslots = g->v ? g->mask + 1 : 0;
	size_t slots = oslots ? oslots * 2 : 1024;
	errcode_t err = ext2fs_get_arrayzero(slots, sizeof(*g->v), &g->v);

	if (err) {
		g->v = old;
		return err;
	}
	g->mask = slots - 1;
	for (k = 0; k < oslots; k++)
		if (old[k].addr)
			*slot_of(g, old[k].addr) = old[k];
	ext2fs_free_mem(&old);
	return 0;
}

/* The source's bytes at addr, one new block of them, into g->p->blk. */
static errcode_t read_src(struct img *g, __u64 addr)
{
	ext2_filsys sfs = g->src->fs;
	unsigned int sbs = sfs->blocksize, bs = g->p->fs->blocksize;
	errcode_t err;

	if (bs >= sbs)
		return io_channel_read_blk64(sfs->io, addr / sbs,
					     (int)(bs / sbs), g->p->blk);
	err = io_channel_read_blk64(sfs->io, addr / sbs, 1, g->one);
	if (!err)
		memcpy(g->p->blk, g->one + addr % sbs, bs);
	return err;
}

/* New block lblk of d, whose bytes are the source's at addr: mapped to
 * the block those bytes went to, or written to a new one (counted). */
static errcode_t share_block(struct img *g, struct xr_pop_data *d,
			     blk64_t lblk, __u64 addr)
{
	ext2_filsys fs = g->p->fs;
	struct share_slot *s;
	blk64_t pblk;
	errcode_t err;

	if ((g->n + 1) * 4 > (g->v ? g->mask + 1 : 0) * 3) {
		err = table_grow(g);
		if (err)
			return err;
	}
	s = slot_of(g, addr);
	if (s->addr) {
		s->refs++;
		return xr_pop_data_share(d, lblk, s->pblk, 1);
	}
	err = read_src(g, addr);
	if (!err)
		err = ext2fs_new_block2(fs, d->goal, NULL, &pblk);
	if (err)
		return err;
	ext2fs_block_alloc_stats2(fs, pblk, +1);
	d->goal = pblk + 1;
	err = io_channel_write_blk64(fs->io, pblk, 1, g->p->blk);
	if (!err)
		err = xr_pop_data_share(d, lblk, pblk, 1);
	if (err)
		return err;
	s->addr = addr;
	s->pblk = pblk;
	s->refs = 1;
	g->n++;
	g->p->req->data_bytes += fs->blocksize;
	return 0;
}

/* Bytes [off, end) of the file, at source byte address addr, through
 * the populate path (zeros become holes). */
static errcode_t put_bytes(struct img *g, struct xr_pop_data *d, __u64 off,
			   __u64 end, __u64 addr)
{
	unsigned int sbs = g->src->fs->blocksize;
	errcode_t err = 0;

	while (!err && off < end) {
		/* whole source blocks from addr's, as many as fit */
		__u64 first = addr / sbs, skip = addr % sbs;
		size_t n = XR_POP_STAGE_BYTES / sbs, len;

		if (!n)
			n = 1;
		if ((__u64)n * sbs - skip > end - off)
			n = (size_t)((end - off + skip + sbs - 1) / sbs);
		err = io_channel_read_blk64(g->src->fs->io, first, (int)n,
					    g->buf);
		len = n * sbs - skip;
		if (len > end - off)
			len = end - off;
		if (!err)
			err = xr_pop_data_put(d, off, g->buf + skip, len);
		off += len;
		addr += len;
	}
	return err;
}

/*
 * One run of the source file: bytes [off, rend) of the file at source
 * byte address addr, of which those below size are put.  A new block
 * wholly inside the run (and starting below size) whose first source
 * block is shared goes through share_block; the rest through the
 * populate path.
 */
static errcode_t copy_run(struct img *g, struct xr_pop_data *d, __u64 off,
			  __u64 rend, __u64 size, __u64 addr)
{
	unsigned int bs = g->p->fs->blocksize, sbs = g->src->fs->blocksize;
	__u64 lim = rend < size ? rend : size, pos = off;
	errcode_t err = 0;

#define SHARED(b) ((b) + bs <= rend && (b) < size && \
		   xr_src_is_shared(g->src, (addr + ((b) - off)) / sbs))
	while (!err && pos < lim) {
		__u64 b = (pos + bs - 1) / bs * bs;	/* next new block */

		if (SHARED(b)) {
			err = put_bytes(g, d, pos, b, addr + (pos - off));
			if (!err)
				err = share_block(g, d, b / bs,
						  addr + (b - off));
			pos = b + bs;
			continue;
		}
		/* up to the next new block that is shared, or the end */
		while (b + bs <= rend && b < size && !SHARED(b))
			b += bs;
		if (b + bs > rend || b >= size)
			b = lim;
		err = put_bytes(g, d, pos, b < lim ? b : lim,
				addr + (pos - off));
		pos = b;
	}
#undef SHARED
	return err;
}

/* Inline data (a tiny file, or a symlink's target) into buf. */
static errcode_t read_file(struct img *g, ext2_ino_t ino, char *buf,
			   size_t cap, size_t *len)
{
	ext2_file_t f;
	unsigned int got = 0;
	errcode_t err, e2;
	__u64 size = EXT2_I_SIZE(g->sin);

	if (size > cap)
		return EXTREF_ERR_SOURCE_KIND;
	err = ext2fs_file_open2(g->src->fs, ino, (struct ext2_inode *)g->sin,
				0, &f);
	if (err)
		return err;
	err = ext2fs_file_read(f, buf, (unsigned int)size, &got);
	e2 = ext2fs_file_close(f);
	*len = got;
	return err ? err : e2;
}

static errcode_t copy_data(struct img *g, ext2_ino_t ino,
			   struct xr_pop_data *d)
{
	unsigned int sbs = g->src->fs->blocksize;
	__u64 size = EXT2_I_SIZE(g->sin);
	errcode_t err = xr_pop_size_check(g->p, size);
	size_t k, len;

	if (err)
		return err;
	if (g->sin->i_flags & EXT4_INLINE_DATA_FL) {
		err = read_file(g, ino, g->buf, XR_POP_STAGE_BYTES, &len);
		if (!err)
			err = xr_pop_data_put(d, 0, g->buf, len);
	} else {
		err = xr_src_runs(g->src, ino, g->sin, &g->runs);
		for (k = 0; !err && k < g->runs.n; k++) {
			struct xr_src_run *r = &g->runs.v[k];
			__u64 off = r->lblk * sbs, end = off + r->len * sbs;

			err = copy_run(g, d, off, end, size, r->pblk * sbs);
		}
	}
	d->size = size;		/* the source's, whatever the holes */
	if (g->p->req->progress)
		g->p->req->progress("copying files", g->p->req->data_bytes,
				    0, g->p->req->priv);
	return err;
}

static struct timespec ts(__u32 sec, __u32 extra, int has_extra)
{
	struct timespec t = { (__s32)sec, 0 };

	if (has_extra) {
		t.tv_sec += (long long)(extra & 3) << 32;
		t.tv_nsec = extra >> 2;
		if (t.tv_nsec > 999999999)
			t.tv_nsec = 0;
	}
	return t;
}

/* Does the source inode hold the field at off, size bytes? */
static int has(const struct img *g, size_t off, size_t size)
{
	int isz = EXT2_INODE_SIZE(g->src->fs->super);

	return isz > EXT2_GOOD_OLD_INODE_SIZE &&
	       (size_t)EXT2_GOOD_OLD_INODE_SIZE + g->sin->i_extra_isize >= off + size &&
	       (size_t)isz >= off + size;
}

#define HAS(g, f) has(g, offsetof(struct ext2_inode_large, f), \
		      sizeof(((struct ext2_inode_large *)0)->f))

static void meta_of(const struct img *g, struct xr_pop_meta *m)
{
	const struct ext2_inode_large *in = g->sin;

	memset(m, 0, sizeof(*m));
	m->mode = in->i_mode;
	m->uid = inode_uid(*in);
	m->gid = inode_gid(*in);
	m->atime = ts(in->i_atime, in->i_atime_extra, HAS(g, i_atime_extra));
	m->mtime = ts(in->i_mtime, in->i_mtime_extra, HAS(g, i_mtime_extra));
	m->ctime = ts(in->i_ctime, in->i_ctime_extra, HAS(g, i_ctime_extra));
	m->generation = in->i_generation;
	m->has_projid = HAS(g, i_projid) &&
			ext2fs_has_feature_project(g->src->fs->super);
	if (m->has_projid)
		m->projid = in->i_projid;
	m->has_crtime = HAS(g, i_crtime);
	if (m->has_crtime)
		m->crtime = ts(in->i_crtime, in->i_crtime_extra,
			       HAS(g, i_crtime_extra));
	if (LINUX_S_ISCHR(in->i_mode) || LINUX_S_ISBLK(in->i_mode)) {
		__u32 b0 = in->i_block[0], b1 = in->i_block[1];

		if (b0) {
			m->major = (b0 >> 8) & 0xff;
			m->minor = b0 & 0xff;
		} else {
			m->major = (b1 & 0xfff00) >> 8;
			m->minor = (b1 & 0xff) | ((b1 >> 12) & 0xfff00);
		}
	}
}

struct xa_copy {
	struct xr_pop_xattrs	*x;
	struct ext2_xattr_handle *h;
	errcode_t		err;
};

/* Each attribute's value as libext2fs gives it (a POSIX ACL in the
 * kernel's xattr form, not ext4's on-disk one), malloc'd: freed by
 * free_values. */
static int on_xattr(char *name, char *value, size_t len, void *priv)
{
	struct xa_copy *c = priv;
	void *v = NULL;

	(void)value; (void)len;
	if (!strcmp(name, "system.data"))	/* inline data's own */
		return 0;
	c->err = ext2fs_xattr_get(c->h, name, &v, &len);
	if (!c->err)
		c->err = xr_pop_xattrs_add(c->x, name, v, len);
	if (c->err) {
		ext2fs_free_mem(&v);
		return XATTR_ABORT;
	}
	return 0;
}

static void free_values(struct xr_pop_xattrs *x)
{
	size_t k;

	for (k = 0; k < x->n; k++)
		ext2fs_free_mem(&x->v[k].value);
	ext2fs_free_mem(&x->v);
}

/* The source inode's extended attributes onto the new inode. */
static errcode_t copy_xattrs(struct img *g, ext2_ino_t sino, ext2_ino_t ino)
{
	struct xr_pop_xattrs x = { 0 };
	struct xa_copy c = { &x, NULL, 0 };
	errcode_t err;

	if (!ext2fs_has_feature_xattr(g->src->fs->super) &&
	    !ext2fs_has_feature_inline_data(g->src->fs->super))
		return 0;
	err = ext2fs_xattrs_open(g->src->fs, sino, &c.h);
	if (!err)
		err = ext2fs_xattrs_read_inode(c.h, g->sin);
	if (!err)
		err = ext2fs_xattrs_iterate(c.h, on_xattr, &c);
	if (!err)
		err = c.err;
	if (!err)
		err = xr_pop_set_xattrs(g->p, ino, &x);
	if (c.h)
		ext2fs_xattrs_close(&c.h);
	free_values(&x);
	return err;
}

static errcode_t copy_file(struct img *g, ext2_ino_t sino, ext2_ino_t dir,
			   const char *name, const struct xr_pop_meta *m,
			   ext2_ino_t *ino)
{
	struct xr_pop_data d;
	errcode_t err = xr_pop_file_begin(g->p, m, dir, &d);

	if (err)
		return err;
	*ino = d.ino;
	err = copy_data(g, sino, &d);
	if (!err)
		return xr_pop_file_end(&d, dir, name);
	xr_pop_data_abort(&d);
	return err;
}

static errcode_t copy_symlink(struct img *g, ext2_ino_t sino, ext2_ino_t dir,
			      const char *name, const struct xr_pop_meta *m,
			      ext2_ino_t *ino)
{
	char *t = g->buf;
	size_t len = EXT2_I_SIZE(g->sin);
	errcode_t err = 0;

	if (!len || len >= g->p->fs->blocksize)
		return EXTREF_ERR_SOURCE_KIND;
	if (ext2fs_is_fast_symlink((struct ext2_inode *)g->sin)) {
		if (len >= sizeof(g->sin->i_block))
			return EXTREF_ERR_SOURCE_KIND;
		memcpy(t, g->sin->i_block, len);
	} else {
		err = read_file(g, sino, t, XR_POP_STAGE_BYTES - 1, &len);
	}
	if (err)
		return err;
	t[len] = 0;
	if (strlen(t) != len)
		return EXTREF_ERR_SOURCE_KIND;	/* a NUL in the target */
	return xr_pop_symlink(g->p, dir, name, m, t, ino);
}

/* The inode flags a user sets (chattr) that mean the same in any
 * geometry; the others describe the source's layout (extents, inline
 * data, an index, huge files) and are the new image's own. */
#define KEEP_FLAGS (EXT2_SECRM_FL | EXT2_UNRM_FL | EXT2_SYNC_FL | \
		    EXT2_IMMUTABLE_FL | EXT2_APPEND_FL | EXT2_NODUMP_FL | \
		    EXT2_NOATIME_FL | EXT2_DIRSYNC_FL | EXT2_TOPDIR_FL | \
		    EXT4_PROJINHERIT_FL)

static errcode_t copy_flags(struct img *g, __u32 flags, ext2_ino_t ino)
{
	struct ext2_inode in;
	errcode_t err;

	if (!(flags & KEEP_FLAGS))
		return 0;
	err = ext2fs_read_inode(g->p->fs, ino, &in);
	if (!err) {
		in.i_flags |= flags & KEEP_FLAGS;
		err = ext2fs_write_inode(g->p->fs, ino, &in);
	}
	return err;
}

static errcode_t walk(struct img *g, ext2_ino_t sdir, ext2_ino_t dir,
		      size_t plen);

/* One entry: name (source inode sino) made in the new directory dir. */
static errcode_t copy_entry(struct img *g, ext2_ino_t sino, ext2_ino_t dir,
			    const char *name, size_t plen)
{
	struct xr_pop *p = g->p;
	int isz = EXT2_INODE_SIZE(g->src->fs->super);
	struct xr_pop_meta m;
	ext2_ino_t ino = 0;
	errcode_t err;
	__u32 flags;
	int multi;

	err = ext2fs_read_inode_full(g->src->fs, sino,
				     (struct ext2_inode *)g->sin, isz);
	if (err)
		return err;
	if (g->sin->i_flags & (EXT4_ENCRYPT_FL | EXT4_VERITY_FL))
		return EXTREF_ERR_SOURCE_KIND;
	meta_of(g, &m);
	multi = !LINUX_S_ISDIR(m.mode) && g->sin->i_links_count > 1;
	if (multi) {
		ino = xr_pop_table_get(&g->links, &sino, sizeof(sino), NULL);
		if (ino)
			return xr_pop_hardlink(p, dir, name, ino);
	}
	switch (m.mode & LINUX_S_IFMT) {
	case LINUX_S_IFDIR:
		if (ext2fs_test_inode_bitmap2(g->dirs_seen, sino) ||
		    g->depth >= MAX_DEPTH)
			return EXTREF_ERR_SOURCE_LOOP;
		ext2fs_mark_inode_bitmap2(g->dirs_seen, sino);
		if (dir == EXT2_ROOT_INO && !strcmp(name, "lost+found") &&
		    !ext2fs_lookup(p->fs, dir, name, 10, NULL, &ino))
			err = xr_pop_set_meta(p, ino, &m, 1, 1);
		else
			err = xr_pop_mkdir(p, dir, name, &m, &ino);
		break;
	case LINUX_S_IFREG:
		err = copy_file(g, sino, dir, name, &m, &ino);
		break;
	case LINUX_S_IFLNK:
		err = copy_symlink(g, sino, dir, name, &m, &ino);
		break;
	case LINUX_S_IFCHR: case LINUX_S_IFBLK:
	case LINUX_S_IFIFO: case LINUX_S_IFSOCK:
		err = xr_pop_special(p, dir, name, &m, &ino);
		break;
	default:
		return EXTREF_ERR_SOURCE_KIND;
	}
	if (!err && multi)
		err = xr_pop_table_put(&g->links, &sino, sizeof(sino), ino, 0);
	/* the source inode again: the walk below reads others into sin */
	if (!err)
		err = ext2fs_read_inode_full(g->src->fs, sino,
					     (struct ext2_inode *)g->sin, isz);
	if (!err)
		err = copy_xattrs(g, sino, ino);
	flags = g->sin->i_flags;
	if (!err && LINUX_S_ISDIR(m.mode)) {
		g->depth++;
		err = walk(g, sino, ino, plen);
		g->depth--;
	}
	if (!err)
		err = copy_flags(g, flags, ino);
	return err;
}

/* A directory's entries, as read. */
struct names {
	char		**name;
	ext2_ino_t	*ino;
	size_t		n, cap, icap;
	errcode_t	err;
};

static int on_dirent(ext2_ino_t dir, int entry, struct ext2_dir_entry *de,
		     int off, int bs, char *buf, void *priv)
{
	struct names *nl = priv;
	int len = ext2fs_dirent_name_len(de);
	char *s = NULL;

	(void)dir; (void)entry; (void)off; (void)bs; (void)buf;
	if (!de->inode)
		return 0;
	if ((len == 1 && de->name[0] == '.') ||
	    (len == 2 && de->name[0] == '.' && de->name[1] == '.'))
		return 0;
	if (xr_name_why(de->name, (size_t)len, 0, 1)) {
		nl->err = EXTREF_ERR_SOURCE_NAME;
		return DIRENT_ABORT;
	}
	nl->err = xr_grow(&nl->name, &nl->cap, nl->n, sizeof(char *));
	if (!nl->err)
		nl->err = xr_grow(&nl->ino, &nl->icap, nl->n, sizeof(ext2_ino_t));
	if (!nl->err && !(s = strndup(de->name, len)))
		nl->err = EXT2_ET_NO_MEMORY;
	if (nl->err)
		return DIRENT_ABORT;
	nl->name[nl->n] = s;
	nl->ino[nl->n++] = de->inode;
	return 0;
}

static int by_name(const void *a, const void *b, void *priv)
{
	const struct names *nl = priv;

	return strcmp(nl->name[*(const size_t *)a],
		      nl->name[*(const size_t *)b]);
}

static errcode_t walk(struct img *g, ext2_ino_t sdir, ext2_ino_t dir,
		      size_t plen)
{
	struct names nl = { 0 };
	size_t *order = NULL, k, len;
	errcode_t err;

	err = ext2fs_dir_iterate2(g->src->fs, sdir,
				  0, NULL,
				  on_dirent, &nl);
	if (!err)
		err = nl.err;
	if (!err && nl.n)
		err = ext2fs_get_array(nl.n, sizeof(*order), &order);
	for (k = 0; !err && k < nl.n; k++)
		order[k] = k;
	if (!err && nl.n)
		qsort_r(order, nl.n, sizeof(*order), by_name, &nl);
	for (k = 0; !err && k < nl.n; k++) {
		const char *name = nl.name[order[k]];

		len = strlen(name);
		if (plen + len + 2 > sizeof(g->path)) {
			err = ENAMETOOLONG;
			break;
		}
		g->path[plen] = '/';
		memcpy(g->path + plen + 1, name, len + 1);
		err = copy_entry(g, nl.ino[order[k]], dir, name,
				 plen + 1 + len);
		if (err)
			xr_pop_fail(g->p, g->path, NULL);
		g->path[plen] = 0;
	}
	for (k = 0; k < nl.n; k++)
		free(nl.name[k]);
	ext2fs_free_mem(&nl.name);
	ext2fs_free_mem(&nl.ino);
	ext2fs_free_mem(&order);
	return err;
}

/* The source's root: the new root's owner, mode, times, attributes. */
static errcode_t root(struct img *g)
{
	int isz = EXT2_INODE_SIZE(g->src->fs->super);
	struct xr_pop_meta m;
	errcode_t err;

	err = ext2fs_read_inode_full(g->src->fs, EXT2_ROOT_INO,
				     (struct ext2_inode *)g->sin, isz);
	if (!err && !LINUX_S_ISDIR(g->sin->i_mode))
		err = EXT2_ET_NO_DIRECTORY;
	if (err)
		return err;
	meta_of(g, &m);
	ext2fs_mark_inode_bitmap2(g->dirs_seen, EXT2_ROOT_INO);
	err = xr_pop_set_meta(g->p, EXT2_ROOT_INO, &m,
			      !(g->p->req->flags & EXTREF_POP_KEEP_ROOT_OWNER),
			      1);
	if (!err)
		err = copy_xattrs(g, EXT2_ROOT_INO, EXT2_ROOT_INO);
	return err;
}

static int by_pblk(const void *a, const void *b)
{
	const struct share_slot *x = a, *y = b;

	return (x->pblk > y->pblk) - (x->pblk < y->pblk);
}

/* The shared new blocks' counts into the tree, in one bulk load. */
static errcode_t load_counts(struct img *g)
{
	struct extref_rec *r = NULL;
	size_t k, n = 0;
	errcode_t err;

	for (k = 0; g->v && k <= g->mask; k++)
		if (g->v[k].addr && g->v[k].refs > 1)
			g->v[n++] = g->v[k];
	if (!n)
		return 0;
	qsort(g->v, n, sizeof(*g->v), by_pblk);
	err = ext2fs_get_array(n, sizeof(*r), &r);
	for (k = 0; !err && k < n; k++) {
		r[k].start = g->v[k].pblk;
		r[k].len = 1;
		r[k].count = g->v[k].refs;
	}
	ext2fs_free_mem(&g->v);		/* used up */
	if (!err)
		err = xr_pop_tree_load(g->p->fs, r, n);
	ext2fs_free_mem(&r);
	return err;
}

/* The source: image opened and scanned here, or src, the caller's,
 * opened and scanned already. */
static errcode_t img_init(struct img *g, struct xr_pop *p, const char *image,
			  struct xr_src *src)
{
	errcode_t err = 0;
	size_t n;

	g->p = p;
	g->src = src ? src : &g->own;
	if (!src)
		err = xr_src_open(image, &g->own);
	if (err) {
		xr_pop_fail(p, "", NULL);
		return err;
	}
	n = g->src->fs->blocksize > XR_POP_STAGE_BYTES ?
	    g->src->fs->blocksize : XR_POP_STAGE_BYTES;
	err = xr_pop_tree_is_empty(p->fs);
	if (!err)
		err = ext2fs_get_memzero(EXT2_INODE_SIZE(g->src->fs->super),
					 &g->sin);
	if (!err)
		err = ext2fs_get_mem(n, &g->buf);
	if (!err)
		err = ext2fs_get_mem(g->src->fs->blocksize, &g->one);
	if (!err)
		err = ext2fs_allocate_inode_bitmap(g->src->fs, "directories met",
						   &g->dirs_seen);
	if (!err && !src)
		err = xr_src_scan(&g->own);
	if (err)
		xr_pop_fail(p, "", NULL);
	return err;
}

static void img_done(struct img *g)
{
	if (g->dirs_seen)
		ext2fs_free_inode_bitmap(g->dirs_seen);
	xr_pop_table_free(&g->links);
	ext2fs_free_mem(&g->runs.v);
	ext2fs_free_mem(&g->v);
	ext2fs_free_mem(&g->sin);
	ext2fs_free_mem(&g->buf);
	ext2fs_free_mem(&g->one);
	if (g->src == &g->own)
		xr_src_close(&g->own);
}

errcode_t xr_pop_read_image(struct xr_pop *p, const char *image,
			    struct xr_src *src)
{
	struct img *g;
	errcode_t err = ext2fs_get_memzero(sizeof(*g), &g);

	if (err)
		return err;
	err = img_init(g, p, image, src);
	if (!err) {
		err = root(g);
		if (err)
			xr_pop_fail(p, "", NULL);
	}
	if (!err)
		err = walk(g, EXT2_ROOT_INO, EXT2_ROOT_INO, 0);
	if (!err)
		err = load_counts(g);
	img_done(g);
	ext2fs_free_mem(&g);
	return err;
}
