/*
 * update_check.c --- what would stop an update, found before anything
 * changes: a name the source has as a non-directory where the image has
 * a directory (EXTREF_ERR_UPDATE_DIR; the update never removes a
 * directory).  The source is walked as update_walk.c walks it, into the
 * directories both have; nothing is written, so a refused update leaves
 * the image as it was, byte for byte (no data block written either).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "update_int.h"

static errcode_t errno_code(void)
{
	return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
}

static errcode_t check_dir(struct xr_upd *up, int dfd, ext2_ino_t dir,
			   size_t plen);

/* One name of the source against the image's dir. */
static errcode_t check_name(void *ctx, int dfd, ext2_ino_t dir,
			    const char *name, size_t plen)
{
	struct xr_upd *up = ctx;
	struct ext2_inode inode;
	struct statx st;
	ext2_ino_t ino;
	errcode_t err;
	int sub;

	err = xr_lookup(up->fs, dir, name, &ino);
	if (err == EXT2_ET_FILE_NOT_FOUND)
		return 0;		/* new: nothing in its way */
	if (!err)
		err = ext2fs_read_inode(up->fs, ino, &inode);
	if (err)
		return err;
	if (!LINUX_S_ISDIR(inode.i_mode))
		return 0;
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &st) < 0)
		return errno_code();
	if (!S_ISDIR(st.stx_mode))	/* --delete removes the directory */
		return (up->u->flags & EXTREF_UPDATE_DELETE) ? 0 :
			EXTREF_ERR_UPDATE_DIR;
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		     O_CLOEXEC);
	if (sub < 0)
		return errno_code();
	err = check_dir(up, sub, ino, plen);
	close(sub);
	return err;
}

static errcode_t check_dir(struct xr_upd *up, int dfd, ext2_ino_t dir,
			   size_t plen)
{
	struct xr_pop_dirwalk dw = {
		&up->p, up->path, sizeof(up->path), check_name, up, NULL
	};

	return xr_pop_each_name(&dw, dfd, dir, plen, NULL, NULL);
}

errcode_t xr_upd_check(struct xr_upd *up, const char *dir, ext2_ino_t ino)
{
	errcode_t err = 0;
	int fd;

	if (strlen(dir) >= sizeof(up->path))
		return ENAMETOOLONG;
	strcpy(up->path, dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = errno_code();
		xr_pop_fail(&up->p, dir, NULL);
		return err;
	}
	err = check_dir(up, fd, ino, strlen(dir));
	close(fd);
	return err;
}
