/*
 * populate.c --- the populate path's entry points: a host directory or
 * an archive (or several, as layers: populate_layers.c) into a new
 * image, through libext2fs.  The scratch buffers
 * (one inode, one block, the staged data) are made once per call.
 */
#include <stdlib.h>
#include <string.h>
#include "populate_int.h"
#include "image/xr_seen.h"

void xr_pop_fail(struct xr_pop *p, const char *where, const char *why)
{
	if (!p->req->where && where)
		p->req->where = strdup(where);
	if (!p->req->why && why)
		p->req->why = strdup(why);
}

static errcode_t pop_init(extref_fs_t xfs, struct extref_populate *req,
			  struct xr_pop *p)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	errcode_t err;

	memset(p, 0, sizeof(*p));
	p->fs = fs;
	p->req = req;
	p->isz = EXT2_INODE_SIZE(fs->super);
	req->inodes = req->data_bytes = 0;
	req->where = req->why = NULL;
	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	xr_seen_copied(xfs);	/* the source's times, not the clock's */
	err = ext2fs_read_bitmaps(fs);
	if (!err)
		err = ext2fs_get_memzero(p->isz, &p->in);
	if (!err)
		err = ext2fs_get_mem(XR_POP_STAGE_BYTES, &p->stage);
	if (!err)
		err = ext2fs_get_mem(fs->blocksize, &p->blk);
	if (!err)
		err = ext2fs_get_memzero(fs->blocksize, &p->zero);
	if (!err && req->dedupe == EXTREF_DEDUPE_BLOCK)
		err = xr_pop_dd_init(p, req->dedupe_hint);
	if (!err && req->dedupe == EXTREF_DEDUPE_FILE)
		err = xr_pop_fdd_init(p);
	return err;
}

static void pop_done(struct xr_pop *p)
{
	ext2fs_free_mem(&p->in);
	ext2fs_free_mem(&p->stage);
	ext2fs_free_mem(&p->blk);
	ext2fs_free_mem(&p->zero);
	xr_pop_dd_free(p);
	xr_pop_fdd_free(p);
}

/* The build's dedupe finished (when it went well) and p freed. */
static errcode_t pop_finish(struct xr_pop *p, errcode_t err)
{
	if (!err && p->dd)
		err = xr_pop_dd_finish(p);
	if (!err && p->fdd)
		err = xr_pop_fdd_finish(p);
	pop_done(p);
	return err;
}

errcode_t extref_populate_dir(extref_fs_t xfs, const char *dir,
			      struct extref_populate *req)
{
	struct xr_pop p;
	errcode_t err = pop_init(xfs, req, &p);

	if (!err)
		err = xr_pop_walk_dir(&p, dir);
	return pop_finish(&p, err);
}

errcode_t extref_populate_archive(extref_fs_t xfs, int fd,
				  struct extref_populate *req)
{
	struct xr_pop p;
	errcode_t err = pop_init(xfs, req, &p);

	if (!err)
		err = xr_pop_read_archive(&p, fd);
	return pop_finish(&p, err);
}

errcode_t extref_populate_layers(extref_fs_t xfs, const int *fds, size_t n,
				 unsigned int flags,
				 struct extref_populate *req)
{
	struct xr_pop p;
	errcode_t err = pop_init(xfs, req, &p);
	size_t i;

	req->layer = 0;
	for (i = 0; !err && i < n; i++) {
		req->layer = i;
		err = xr_pop_read_layer(&p, fds[i], (unsigned int)i,
					!!(flags & EXTREF_LAYERS_OCI));
	}
	return pop_finish(&p, err);
}

static errcode_t from_image(extref_fs_t xfs, const char *image,
			    struct xr_src *src, struct extref_populate *req)
{
	struct xr_pop p;
	int mode = req->dedupe;
	errcode_t err;

	req->dedupe = EXTREF_DEDUPE_NONE;	/* the sharing is the source's */
	err = pop_init(xfs, req, &p);
	req->dedupe = mode;
	if (!err)
		err = xr_pop_read_image(&p, image, src);
	pop_done(&p);
	return err;
}

errcode_t extref_populate_image(extref_fs_t xfs, const char *image,
				struct extref_populate *req)
{
	return from_image(xfs, image, NULL, req);
}

errcode_t xr_populate_src(extref_fs_t xfs, struct xr_src *src,
			  struct extref_populate *req)
{
	return from_image(xfs, NULL, src, req);
}

void extref_populate_free(struct extref_populate *req)
{
	free(req->where);
	free(req->why);
	req->where = req->why = NULL;
}
