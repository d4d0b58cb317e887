/*
 * update_need.c --- extref_build_update_need: what an update of an
 * image will take of its free blocks and inodes, found by a dry run of
 * the update on the image opened read-only (need_walk.c, need_layer.c).
 *
 * The image's data is indexed as the update indexes it (update_index.c:
 * every whole block and every file of its regular files, by hash); the
 * source is then walked and every file counted as the update would put
 * it, by hash alone (the update also compares the bytes; a 64-bit hash
 * match that is not equal is not met in practice).  What the update
 * frees (the blocks of the files it replaces) is not subtracted: it
 * keeps them until it commits, so the figure is what it needs free.
 * An archive (one more layer) is read from its start as the update
 * reads it (need_layer.c), each regular file's data hashed as it
 * streams: only what the update writes is counted, not the archive.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "need_int.h"

static errcode_t need_init(struct xr_need *nd, extref_fs_t xfs)
{
	struct xr_upd *up = &nd->up;
	errcode_t err;

	up->xfs = xfs;
	up->fs = extref_fs_ext2(xfs);
	up->u = &nd->dummy;
	err = ext2fs_get_mem(XR_POP_STAGE_BYTES, &up->a);
	if (!err)
		err = xr_upd_index_init(up);
	return err;
}

static void need_done(struct xr_need *nd)
{
	ext2fs_free_mem(&nd->up.a);
	ext2fs_free_mem(&nd->up.bh);
	xr_upd_index_free(&nd->up.ix);
	xr_pop_table_free(&nd->links);
}

/* The archive on fd, read from its start: fd back where it was. */
static errcode_t layer_walk(struct xr_need *nd, int fd)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	errcode_t err;

	if (at < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return errno ? (errcode_t)errno : EXT2_ET_LLSEEK_FAILED;
	err = xr_need_layer(nd, fd);
	if (lseek(fd, at, SEEK_SET) != at && !err)
		err = errno ? (errcode_t)errno : EXT2_ET_LLSEEK_FAILED;
	return err;
}

/* The dry run of the update: the image indexed, the source (dir, or
 * the archive on layer_fd) counted against it. */
static errcode_t dry_run(extref_fs_t xfs, const char *dir, int layer_fd,
			 const struct extref_update *u,
			 struct extref_update_need *n)
{
	struct xr_need *nd;
	errcode_t err = ext2fs_get_memzero(sizeof(*nd), &nd);

	if (err)
		return err;
	nd->n = n;
	nd->fake_ino = extref_fs_ext2(xfs)->super->s_inodes_count;
	err = need_init(nd, xfs);
	if (!err)
		err = xr_upd_index_image(&nd->up);
	if (!err)
		err = layer_fd >= 0 ? layer_walk(nd, layer_fd) :
			xr_need_walk(nd, dir, u->at ? u->at : "/");
	if (!err)
		xr_need_total(nd);
	need_done(nd);
	ext2fs_free_mem(&nd);
	return err;
}

errcode_t extref_build_update_need(const char *image, const char *dir,
				   int layer_fd,
				   const struct extref_update *u,
				   struct extref_update_need *n)
{
	extref_fs_t xfs = NULL;
	ext2_filsys fs;
	errcode_t err;

	memset(n, 0, sizeof(*n));
	err = extref_fs_open(image, EXTREF_OPEN_NO_TREE, &xfs, NULL);
	if (err)
		return err;
	fs = extref_fs_ext2(xfs);
	n->blocksize = fs->blocksize;
	n->free_blocks = ext2fs_free_blocks_count(fs->super);
	n->free_inodes = fs->super->s_free_inodes_count;
	err = dry_run(xfs, dir, layer_fd, u, n);
	extref_fs_abort(xfs);
	return err;
}
