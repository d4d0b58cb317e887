/*
 * update_walk.c --- a host directory into an existing directory of the
 * image, name by name in sorted order (strcmp), depth first, as
 * populate_dir.c walks it for a new image.
 *
 * For each name of the source: a directory the image has too is
 * entered; a regular file goes through update_file.c; a symlink or
 * device equal to the image's (same target, same kind and number) is
 * kept; anything else is made anew with the populate path's makers and
 * takes the name, the image's old entry unlinked afterwards through
 * extref_unlink (its shared blocks are counted down, not freed).  Names
 * the image has and the source lacks stay, unless EXTREF_UPDATE_DELETE
 * (update_delete.c).  Each entry then gets the
 * source's owner, mode, times and exactly its extended attributes; a
 * directory gets them after its entries (linking into it stamps its
 * times).  Between two entries the update may be committed
 * (xr_tx_split_point).  Files with several links become hard links of
 * the first one met (by device and inode).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "update_int.h"
#include "txn/xr_txio.h"

/* One source entry and what the image has at its name. */
struct ent {
	int		dfd;		/* the source directory */
	const char	*name;
	ext2_ino_t	dir;		/* the image directory */
	struct statx	st;
	struct xr_pop_meta m;
	ext2_ino_t	old;		/* the image's inode at name, or 0 */
	struct ext2_inode oi;
};

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

/* The image's entry at e->name leaves (it is not a directory). */
static errcode_t drop_old(struct xr_upd *up, struct ent *e)
{
	if (!e->old)
		return 0;
	if (LINUX_S_ISDIR(e->oi.i_mode) &&
	    (up->u->flags & EXTREF_UPDATE_DELETE))
		return xr_upd_remove_tree(up, e->dir, e->name, e->old);
	if (LINUX_S_ISDIR(e->oi.i_mode))
		return EXTREF_ERR_UPDATE_DIR;
	return extref_unlink(up->xfs, e->dir, e->name,
			     EXTREF_UNLINK_KEEP_TIMES);
}

/* May the image's inode at the name be kept for this source entry? */
static int keepable(const struct ent *e, __u16 type)
{
	return e->old && (e->oi.i_mode & LINUX_S_IFMT) == type &&
	       (e->oi.i_links_count == 1 ||
		e->oi.i_links_count == e->st.stx_nlink);
}

static errcode_t do_file(struct xr_upd *up, struct ent *e, ext2_ino_t *ino)
{
	/* O_NONBLOCK: a FIFO put in the file's place is not waited on */
	int fd = openat(e->dfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC);
	struct stat st;
	errcode_t err;

	if (fd < 0)
		return errno_code();
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		err = EXT2_ET_FILE_NOT_FOUND;	/* changed under us */
	else
		err = xr_upd_file(up, fd, e->dir, &e->m, e->st.stx_size,
				  keepable(e, LINUX_S_IFREG) ? e->old : 0,
				  ino);
	close(fd);
	if (!err && *ino != e->old)
		err = drop_old(up, e);
	if (!err && *ino != e->old)
		err = xr_link(up->fs, e->dir, e->name, *ino,
			      EXT2_FT_REG_FILE);
	return err;
}

/* Does the image's symlink hold target? */
static int same_target(struct xr_upd *up, const struct ent *e,
		       const char *target)
{
	size_t len = strlen(target);
	blk64_t pblk = 0;

	if (EXT2_I_SIZE(&e->oi) != len)
		return 0;
	if (ext2fs_is_fast_symlink((struct ext2_inode *)&e->oi))
		return !memcmp(e->oi.i_block, target, len);
	if ((e->oi.i_flags & EXT4_INLINE_DATA_FL) ||
	    ext2fs_bmap2(up->fs, e->old, (struct ext2_inode *)&e->oi, NULL, 0,
			 0, NULL, &pblk) || !pblk ||
	    io_channel_read_blk64(up->fs->io, pblk, 1, up->b))
		return 0;
	return !memcmp(up->b, target, len);
}

static errcode_t do_symlink(struct xr_upd *up, struct ent *e,
			    ext2_ino_t *ino)
{
	char target[PATH_MAX];
	ssize_t tl = readlinkat(e->dfd, e->name, target, sizeof(target));
	errcode_t err;

	if (tl < 0 || tl >= (ssize_t)sizeof(target))
		return tl < 0 ? errno_code() : EXT2_ET_INVALID_ARGUMENT;
	target[tl] = 0;
	if (keepable(e, LINUX_S_IFLNK) && same_target(up, e, target)) {
		*ino = e->old;
		return 0;
	}
	err = drop_old(up, e);
	return err ? err : xr_pop_symlink(&up->p, e->dir, e->name, &e->m,
					  target, ino);
}

/* The image's device number, as populate_inode.c's set_rdev wrote it. */
static int same_rdev(const struct ent *e)
{
	__u32 maj = e->m.major, min = e->m.minor;

	if (maj < 256 && min < 256)
		return e->oi.i_block[0] == (maj << 8 | min) &&
		       !e->oi.i_block[1];
	return !e->oi.i_block[0] && e->oi.i_block[1] ==
	       ((min & 0xff) | maj << 8 | (min & ~0xffU) << 12);
}

static errcode_t do_special(struct xr_upd *up, struct ent *e,
			    ext2_ino_t *ino)
{
	errcode_t err;

	if (keepable(e, e->m.mode & LINUX_S_IFMT) && same_rdev(e)) {
		*ino = e->old;
		return 0;
	}
	err = drop_old(up, e);
	return err ? err : xr_pop_special(&up->p, e->dir, e->name, &e->m,
					  ino);
}

/*
 * Owner, mode, modification time and exactly the attributes of the
 * source entry; the access, change and creation times stay the image's
 * (an inode made anew got the source's from its maker): reading the
 * source (this update hashes every file) moves its access times, a copy
 * of a tree has new change and creation times, and an entry whose owner,
 * mode, modification time and attributes are the source's is then not
 * rewritten (xr_pop_set_meta writes nothing): its inode table block stays
 * out of the update's one commit.  The target directory (not owner_mode)
 * keeps its owner, mode and the attributes the source's root lacks (its
 * label, say).
 */
static errcode_t set_meta(struct xr_upd *up, ext2_ino_t ino,
			  const struct xr_pop_meta *m, int owner_mode)
{
	errcode_t err = xr_pop_read_xattrs(up->path, &up->xa);

	if (!err)
		err = xr_upd_sync_xattrs(up, ino, &up->xa, owner_mode);
	if (!err) {
		up->p.keep_acr = 1;
		err = xr_pop_set_meta(&up->p, ino, m, owner_mode, owner_mode);
		up->p.keep_acr = 0;
	}
	return err;
}

/* A second name of an inode met before. */
static errcode_t do_hardlink(struct xr_upd *up, struct ent *e,
			     ext2_ino_t ino)
{
	errcode_t err;

	if (e->old == ino)
		return 0;
	err = drop_old(up, e);
	return err ? err : xr_pop_hardlink(&up->p, e->dir, e->name, ino);
}

static errcode_t walk_dir(struct xr_upd *up, int dfd, ext2_ino_t dir,
			  size_t plen);

static errcode_t do_dir(struct xr_upd *up, struct ent *e, size_t plen)
{
	ext2_ino_t ino = e->old;
	errcode_t err = 0;
	int sub;

	if (!e->old || !LINUX_S_ISDIR(e->oi.i_mode)) {
		err = drop_old(up, e);
		if (!err)
			err = xr_pop_mkdir(&up->p, e->dir, e->name, &e->m, &ino);
	}
	if (err)
		return err;
	sub = openat(e->dfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_CLOEXEC);
	if (sub < 0)
		return errno_code();
	err = walk_dir(up, sub, ino, plen);
	close(sub);
	up->path[plen] = 0;
	return err ? err : set_meta(up, ino, &e->m, 1);
}

static errcode_t look_old(struct xr_upd *up, struct ent *e)
{
	errcode_t err = xr_lookup(up->fs, e->dir, e->name, &e->old);

	if (err == EXT2_ET_FILE_NOT_FOUND) {
		e->old = 0;
		return 0;
	}
	return err ? err : ext2fs_read_inode(up->fs, e->old, &e->oi);
}

static errcode_t entry(struct xr_upd *up, int dfd, ext2_ino_t dir,
		       const char *name, size_t plen)
{
	struct ent e = { .dfd = dfd, .name = name, .dir = dir };
	ext2_ino_t ino = 0;
	__u64 key[2];
	int linked;
	errcode_t err;

	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS |
		  STATX_BTIME, &e.st) < 0)
		return errno_code();
	xr_pop_meta_of(&e.st, &e.m);
	err = look_old(up, &e);
	if (err)
		return err;
	up->u->entries++;
	if (S_ISDIR(e.st.stx_mode))
		return do_dir(up, &e, plen);
	key[0] = (__u64)e.st.stx_dev_major << 32 | e.st.stx_dev_minor;
	key[1] = e.st.stx_ino;
	linked = e.st.stx_nlink > 1;
	if (linked && (ino = xr_pop_table_get(&up->links, key, sizeof(key),
					      NULL)))
		return do_hardlink(up, &e, ino);
	if (S_ISREG(e.st.stx_mode))
		err = do_file(up, &e, &ino);
	else if (S_ISLNK(e.st.stx_mode))
		err = do_symlink(up, &e, &ino);
	else
		err = do_special(up, &e, &ino);
	if (!err && linked)
		err = xr_pop_table_put(&up->links, key, sizeof(key), ino, 0);
	if (!err)
		err = set_meta(up, ino, &e.m, 1);
	return err;
}

/* One whole entry in: the image is consistent here. */
static errcode_t entry_whole(void *ctx)
{
	struct xr_upd *up = ctx;

	return xr_tx_split_point(up->xfs);
}

static errcode_t entry_cb(void *ctx, int dfd, ext2_ino_t dir,
			  const char *name, size_t plen)
{
	return entry(ctx, dfd, dir, name, plen);
}

static errcode_t walk_dir(struct xr_upd *up, int dfd, ext2_ino_t dir,
			  size_t plen)
{
	struct xr_pop_dirwalk dw = {
		&up->p, up->path, sizeof(up->path), entry_cb, up, entry_whole
	};
	char **names = NULL;
	size_t n = 0;
	errcode_t err = xr_pop_each_name(&dw, dfd, dir, plen, &names, &n);

	if (!err && (up->u->flags & EXTREF_UPDATE_DELETE))
		err = xr_upd_delete_extra(up, dir, names, n);
	xr_pop_free_names(names, n);
	return err;
}

/* The source's root: its entries, then the target's times and
 * attributes (its mode and owner stay the image's, as a build's root). */
errcode_t xr_upd_walk(struct xr_upd *up, const char *dir, ext2_ino_t ino)
{
	struct xr_pop_meta m;
	struct statx st;
	errcode_t err = 0;
	int fd;

	if (strlen(dir) >= sizeof(up->path))
		return ENAMETOOLONG;
	strcpy(up->path, dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS |
			    STATX_BTIME, &st) < 0)
		err = errno_code();
	if (err)
		xr_pop_fail(&up->p, dir, NULL);
	if (!err)
		err = walk_dir(up, fd, ino, strlen(dir));
	if (!err) {
		xr_pop_meta_of(&st, &m);
		err = set_meta(up, ino, &m, 0);
	}
	if (fd >= 0)
		close(fd);
	return err;
}
