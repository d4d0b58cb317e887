/*
 * populate_inode.c --- one inode of each kind in the image, as the
 * source describes it: directory, regular file, symlink (fast: the
 * target in i_block; slow: one data block), device, FIFO, socket, and
 * hard links.  Owner, mode and the four times with nanoseconds go in
 * the inode as it is first written (times later than the epoch, when
 * there is one, become the epoch); a new inode is written whole, so an
 * uninitialised inode table leaves nothing in it.  Names are linked
 * with xr_link, which indexes a directory when its first block fills,
 * as the kernel does.
 */
#include <stddef.h>
#include <string.h>
#include "populate_int.h"
#include "base/extref_vec.h"
#include "txn/xr_txio.h"

static void set_time(const struct xr_pop *p, __u32 *sec, __u32 *extra,
		     int large, const struct timespec *ts)
{
	long long s = ts->tv_sec;
	long ns = ts->tv_nsec;

	if ((p->req->flags & EXTREF_POP_EPOCH) && s >= p->req->epoch) {
		s = p->req->epoch;
		ns = 0;
	}
	*sec = (__u32)s;
	if (large)	/* nanoseconds, and seconds past 2038 in bits 0-1 */
		*extra = ((__u32)ns << 2) | (__u32)(((s - (__s32)s) >> 32) & 3);
}

static void set_times(const struct xr_pop *p, struct ext2_inode_large *in,
		      const struct xr_pop_meta *m)
{
	int large = p->isz > EXT2_GOOD_OLD_INODE_SIZE &&
		    in->i_extra_isize >= 24;
	struct timespec now = { xr_now(p->fs), 0 };

	set_time(p, &in->i_mtime, &in->i_mtime_extra, large, &m->mtime);
	if (p->keep_acr)
		return;
	set_time(p, &in->i_atime, &in->i_atime_extra, large, &m->atime);
	set_time(p, &in->i_ctime, &in->i_ctime_extra, large, &m->ctime);
	if (large)
		set_time(p, &in->i_crtime, &in->i_crtime_extra, 1,
			 m->has_crtime ? &m->crtime : &now);
}

static void set_owner(const struct xr_pop *p, struct ext2_inode_large *in,
		      const struct xr_pop_meta *m)
{
	int root = p->req->flags & EXTREF_POP_ALL_ROOT;

	xr_set_owner((struct ext2_inode *)in, root ? 0 : m->uid,
		     root ? 0 : m->gid);
}

/* m's project id, where both the image and its inodes have room. */
static void set_projid(const struct xr_pop *p, struct ext2_inode_large *in,
		       const struct xr_pop_meta *m)
{
	if (m->has_projid && ext2fs_has_feature_project(p->fs->super) &&
	    p->isz > EXT2_GOOD_OLD_INODE_SIZE &&
	    in->i_extra_isize >= offsetof(struct ext2_inode_large, i_projid) +
				 sizeof(in->i_projid) -
				 EXT2_GOOD_OLD_INODE_SIZE)
		in->i_projid = m->projid;
}

/* A fresh inode in p->in: m's type, mode, owner, times, generation and
 * project; one link. */
static void fill(struct xr_pop *p, const struct xr_pop_meta *m)
{
	struct ext2_inode_large *in = p->in;

	memset(in, 0, p->isz);
	if (p->isz > EXT2_GOOD_OLD_INODE_SIZE)
		in->i_extra_isize = sizeof(struct ext2_inode_large) -
				    EXT2_GOOD_OLD_INODE_SIZE;
	in->i_mode = m->mode;
	in->i_links_count = 1;
	set_owner(p, in, m);
	set_times(p, in, m);
	in->i_generation = m->generation;
	set_projid(p, in, m);
}

static errcode_t write_full(struct xr_pop *p, ext2_ino_t ino)
{
	return ext2fs_write_inode_full(p->fs, ino, (struct ext2_inode *)p->in,
				       p->isz);
}

/* Allocate an inode near dir for p->in and write it. */
static errcode_t new_inode(struct xr_pop *p, ext2_ino_t dir, ext2_ino_t *ino)
{
	errcode_t err = ext2fs_new_inode(p->fs, dir, p->in->i_mode, NULL, ino);

	if (!err)
		err = write_full(p, *ino);
	if (!err) {
		ext2fs_inode_alloc_stats2(p->fs, *ino, +1,
					  LINUX_S_ISDIR(p->in->i_mode));
		xr_tx_note_inode(p->fs, *ino);	/* its table block: new? */
		p->req->inodes++;
	}
	return err;
}

errcode_t xr_pop_set_meta(struct xr_pop *p, ext2_ino_t ino,
			  const struct xr_pop_meta *m, int set_owner_too,
			  int set_mode)
{
	struct ext2_inode_large *in = p->in, was;
	size_t cmp = (size_t)p->isz < sizeof(was) ? (size_t)p->isz :
		     sizeof(was);
	errcode_t err;

	err = ext2fs_read_inode_full(p->fs, ino, (struct ext2_inode *)in,
				     p->isz);
	if (err)
		return err;
	memcpy(&was, in, cmp);
	if (set_mode)
		in->i_mode = (in->i_mode & LINUX_S_IFMT) | (m->mode & 07777);
	if (set_owner_too || (p->req->flags & EXTREF_POP_ALL_ROOT))
		set_owner(p, in, m);
	set_times(p, in, m);
	set_projid(p, in, m);
	/* an update's unchanged entry: its inode table block not written
	 * (nor journaled) for nothing */
	return memcmp(&was, in, cmp) ? write_full(p, ino) : 0;
}

/*
 * A new directory's generation: its one block (ext2fs_mkdir's), whose
 * checksum covers the generation, read before and written after (inline
 * data lives in the inode, whose own checksum follows).
 */
static errcode_t set_dir_generation(struct xr_pop *p, ext2_ino_t ino,
				    __u32 gen)
{
	struct ext2_inode_large *in = p->in;
	blk64_t blk = 0;
	char *buf = NULL;
	errcode_t err;

	err = ext2fs_read_inode_full(p->fs, ino, (struct ext2_inode *)in,
				     p->isz);
	if (!err && !(in->i_flags & EXT4_INLINE_DATA_FL))
		err = ext2fs_bmap2(p->fs, ino, (struct ext2_inode *)in, NULL,
				   0, 0, NULL, &blk);
	if (!err && blk)
		err = ext2fs_get_mem(p->fs->blocksize, &buf);
	if (!err && blk)
		err = ext2fs_read_dir_block4(p->fs, blk, buf, 0, ino);
	if (!err) {
		in->i_generation = gen;
		err = write_full(p, ino);
	}
	if (!err && blk)
		err = ext2fs_write_dir_block4(p->fs, blk, buf, 0, ino);
	ext2fs_free_mem(&buf);
	return err;
}

errcode_t xr_pop_mkdir(struct xr_pop *p, ext2_ino_t dir, const char *name,
		       const struct xr_pop_meta *m, ext2_ino_t *ino)
{
	errcode_t err;

	/* ext2fs_mkdir: the first block (or inline data), "." and "..",
	 * the parent's link count, the counts; unlinked (name NULL) */
	err = ext2fs_new_inode(p->fs, dir, LINUX_S_IFDIR | 0755, NULL, ino);
	if (!err)
		err = ext2fs_mkdir(p->fs, dir, *ino, NULL);
	if (!err)
		err = xr_link(p->fs, dir, name, *ino, EXT2_FT_DIR);
	if (!err)
		err = xr_pop_set_meta(p, *ino, m, 1, 1);
	if (!err && m->generation)
		err = set_dir_generation(p, *ino, m->generation);
	if (!err)
		p->req->inodes++;
	return err;
}

/* A device number in i_block, as the kernel's ext4 encodes it. */
static void set_rdev(struct ext2_inode_large *in, __u32 maj, __u32 min)
{
	if (maj < 256 && min < 256)
		in->i_block[0] = maj << 8 | min;
	else
		in->i_block[1] = (min & 0xff) | maj << 8 | (min & ~0xffU) << 12;
}

errcode_t xr_pop_special(struct xr_pop *p, ext2_ino_t dir, const char *name,
			 const struct xr_pop_meta *m, ext2_ino_t *ino)
{
	errcode_t err;

	fill(p, m);
	if (LINUX_S_ISCHR(m->mode) || LINUX_S_ISBLK(m->mode))
		set_rdev(p->in, m->major, m->minor);
	err = new_inode(p, dir, ino);
	if (!err)
		err = xr_link(p->fs, dir, name, *ino, xr_file_type(m->mode));
	return err;
}

errcode_t xr_pop_file_begin(struct xr_pop *p, const struct xr_pop_meta *m,
			    ext2_ino_t dir, struct xr_pop_data *d)
{
	ext2_ino_t ino;
	errcode_t err;

	fill(p, m);
	if (ext2fs_has_feature_extents(p->fs->super))
		p->in->i_flags |= EXT4_EXTENTS_FL;
	else
		return EXT2_ET_EXTENT_NOT_SUPPORTED;
	err = new_inode(p, dir, &ino);
	if (!err)
		err = xr_pop_data_begin(p, ino, p->in, d);
	return err;
}

errcode_t xr_pop_file_end(struct xr_pop_data *d, ext2_ino_t dir,
			  const char *name)
{
	struct xr_pop *p = d->p;
	errcode_t err = xr_pop_data_end(d);

	if (!err)
		err = xr_pop_size_check(p, d->size);
	if (!err && p->fdd)		/* a copy maps the first file */
		err = xr_pop_fdd_end(d);
	if (!err)
		err = ext2fs_inode_size_set(p->fs, (struct ext2_inode *)d->in,
					    d->size);
	if (!err)
		err = write_full(p, d->ino);
	if (!err && name)
		err = xr_link(p->fs, dir, name, d->ino,
			      xr_file_type(d->in->i_mode));
	return err;
}

errcode_t xr_pop_symlink(struct xr_pop *p, ext2_ino_t dir, const char *name,
			 const struct xr_pop_meta *m, const char *target,
			 ext2_ino_t *ino)
{
	size_t len = strlen(target);
	struct xr_pop_data d;
	errcode_t err;

	if (!len || len >= p->fs->blocksize)
		return EXT2_ET_INVALID_ARGUMENT;
	if (len < sizeof(p->in->i_block)) {	/* fast */
		fill(p, m);
		memcpy(p->in->i_block, target, len);
		p->in->i_size = (__u32)len;
		err = new_inode(p, dir, ino);
		if (!err)
			err = xr_link(p->fs, dir, name, *ino, EXT2_FT_SYMLINK);
		return err;
	}
	err = xr_pop_file_begin(p, m, dir, &d);
	if (!err)
		err = xr_pop_data_put(&d, 0, target, len);
	if (!err) {
		*ino = d.ino;
		return xr_pop_file_end(&d, dir, name);
	}
	xr_pop_data_abort(&d);
	return err;
}

errcode_t xr_pop_hardlink(struct xr_pop *p, ext2_ino_t dir, const char *name,
			  ext2_ino_t ino)
{
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(p->fs, ino, &in);

	if (!err && LINUX_S_ISDIR(in.i_mode))
		err = EXT2_ET_INVALID_ARGUMENT;
	if (!err && in.i_links_count >= EXT2_LINK_MAX)
		err = EXT2_ET_TOO_MANY_REFS;
	if (!err)
		err = xr_link(p->fs, dir, name, ino, xr_file_type(in.i_mode));
	if (!err) {
		in.i_links_count++;
		err = ext2fs_write_inode(p->fs, ino, &in);
	}
	return err;
}

errcode_t xr_pop_set_xattrs(struct xr_pop *p, ext2_ino_t ino,
			    const struct xr_pop_xattrs *x)
{
	struct ext2_xattr_handle *h = NULL;
	errcode_t err, e2;
	size_t i;

	if (!x->n || (p->req->flags & EXTREF_POP_NO_XATTRS))
		return 0;
	if (!ext2fs_has_feature_xattr(p->fs->super))
		return EXT2_ET_MISSING_EA_FEATURE;
	err = ext2fs_xattrs_open(p->fs, ino, &h);
	if (err)
		return err;
	err = ext2fs_xattrs_read(h);
	for (i = 0; !err && i < x->n; i++)
		err = ext2fs_xattr_set(h, x->v[i].name, x->v[i].value,
				       x->v[i].len);
	e2 = ext2fs_xattrs_close(&h);
	return err ? err : e2;
}

errcode_t xr_pop_xattrs_add(struct xr_pop_xattrs *x, const char *name,
			    const void *value, size_t len)
{
	errcode_t err = xr_grow(&x->v, &x->cap, x->n, sizeof(*x->v));

	if (err)
		return err;
	x->v[x->n].name = name;
	x->v[x->n].value = value;
	x->v[x->n].len = len;
	x->n++;
	return 0;
}

void xr_pop_xattrs_reset(struct xr_pop_xattrs *x)
{
	x->n = 0;
}
