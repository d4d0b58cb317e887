/*
 * need_walk.c --- the source walked for the dry run as update_walk.c
 * walks it: a directory the image has at the name is entered, any
 * other is new (an inode, and blocks for its entries); a regular file
 * goes to need_file.c; a symlink or device of the image's kind at the
 * name is kept (a symlink of the same length: its target is not read),
 * anything else is a new inode (a slow symlink, target of 60 bytes or
 * more, a block too); a second name of a file met before is an entry
 * only.  The entries each directory gains are summed for need_dir.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "need_int.h"

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

static errcode_t walk(struct xr_need *nd, int dfd, ext2_ino_t dir);

static errcode_t sub_dir(struct xr_need *nd, int dfd, const char *name,
			 ext2_ino_t ino)
{
	int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			 O_CLOEXEC);
	errcode_t err;

	if (sub < 0)
		return errno_code();
	err = walk(nd, sub, ino);
	close(sub);
	return err;
}

static errcode_t pread_src(void *priv, char *buf, size_t len, __u64 off,
			   size_t *got)
{
	ssize_t r = pread(*(int *)priv, buf, len, (off_t)off);

	*got = r > 0 ? (size_t)r : 0;
	return r < 0 ? errno_code() : 0;
}

static errcode_t reg_file(struct xr_need *nd, int dfd, const char *name,
			  const struct statx *st, ext2_ino_t old)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC);
	struct xr_need_src src = { pread_src, &fd };
	ext2_ino_t ino;
	errcode_t err;

	if (fd < 0)
		return errno_code();
	err = xr_need_file(nd, &src, st->stx_size, old, &ino);
	close(fd);
	return err;
}

/* A file with several names: counted at its first. */
static int met_before(struct xr_need *nd, const struct statx *st,
		      errcode_t *err)
{
	__u64 key[2];

	*err = 0;
	if (st->stx_nlink < 2)
		return 0;
	key[0] = (__u64)st->stx_dev_major << 32 | st->stx_dev_minor;
	key[1] = st->stx_ino;
	if (xr_pop_table_get(&nd->links, key, sizeof(key), NULL))
		return 1;
	*err = xr_pop_table_put(&nd->links, key, sizeof(key), 1, 0);
	return 0;
}

static errcode_t entry(struct xr_need *nd, int dfd, ext2_ino_t dir,
		       const char *name, __u64 *added)
{
	ext2_filsys fs = nd->up.fs;
	struct ext2_inode oi;
	struct statx st;
	ext2_ino_t old = 0;
	__u16 kind;
	errcode_t err;

	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &st) < 0)
		return errno_code();
	if (!dir || xr_lookup(fs, dir, name, &old) ||
	    ext2fs_read_inode(fs, old, &oi))
		old = 0;
	if (!old)
		*added += xr_need_dirent_len(strlen(name));
	kind = old ? oi.i_mode & LINUX_S_IFMT : 0;
	if (S_ISDIR(st.stx_mode)) {
		if (kind != LINUX_S_IFDIR)
			nd->inodes++;
		return sub_dir(nd, dfd, name, kind == LINUX_S_IFDIR ? old : 0);
	}
	if (met_before(nd, &st, &err) || err)
		return err;
	if (S_ISREG(st.stx_mode))
		return reg_file(nd, dfd, name, &st,
				kind == LINUX_S_IFREG ? old : 0);
	if (S_ISLNK(st.stx_mode) && kind == LINUX_S_IFLNK &&
	    EXT2_I_SIZE(&oi) == st.stx_size)
		return 0;
	if (!S_ISLNK(st.stx_mode) && kind == (st.stx_mode & S_IFMT))
		return 0;
	nd->inodes++;
	if (S_ISLNK(st.stx_mode) && st.stx_size >= 60)
		nd->other++;
	return 0;
}

/* The source directory on dfd into the image's dir (0: a new one). */
static errcode_t walk(struct xr_need *nd, int dfd, ext2_ino_t dir)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	__u64 added = 0;
	errcode_t err = 0;

	if (!d) {
		err = errno_code();
		if (fd >= 0)
			close(fd);
		return err;
	}
	while (!err && (errno = 0, de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = entry(nd, dfd, dir, de->d_name, &added);
	if (!err && errno)
		err = errno_code();
	closedir(d);
	nd->dir_blocks += xr_need_dir_blocks(nd, dir, added);
	return err;
}

errcode_t xr_need_walk(struct xr_need *nd, const char *dir, const char *at)
{
	ext2_ino_t ino = 0;
	int fd;
	errcode_t err;

	if (extref_namei(nd->up.xfs, EXT2_ROOT_INO, EXT2_ROOT_INO, at,
			 EXTREF_NAMEI_FOLLOW, &ino))
		ino = 0;	/* made by the update */
	if (!ino)
		nd->inodes++;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno_code();
	err = walk(nd, fd, ino);
	close(fd);
	return err;
}

void xr_need_total(struct xr_need *nd)
{
	unsigned int bs = nd->up.fs->blocksize;
	/* at most two records a clone run, tree nodes half full */
	__u64 per = (bs / 16 - 2) / 2;

	nd->n->inodes = nd->inodes;
	nd->n->blocks = nd->data + nd->extent_blocks + nd->dir_blocks +
			nd->other + (2 * nd->runs + per - 1) / per;
}
