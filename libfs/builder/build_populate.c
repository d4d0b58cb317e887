/*
 * build_populate.c --- extref_build_populate: a new image populated from
 * its source, then the quotas it charges; opened and closed here
 * (xr_build_fill, which a shrink's copy fills from its open source).
 */
#include "build_int.h"

errcode_t xr_build_fill(const char *image, const struct extref_build_opts *o,
			xr_build_fill_func fill, void *arg)
{
	extref_fs_t xfs = NULL;
	errcode_t err;

	/* the ext4 part only: the tree is the dedupe's, after this */
	err = extref_fs_open(image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE |
			     EXTREF_OPEN_NO_JOURNAL, &xfs, NULL);
	if (err)
		return err;
	xr_build_clock(extref_fs_ext2(xfs), o);
	err = fill(xfs, arg);
	if (!err)
		err = extref_quota_recompute(xfs);
	if (!err)
		extref_fs_accept(xfs);	/* this run made it: recorded as seen */
	if (!err)
		err = extref_fs_close(xfs);
	else
		extref_fs_abort(xfs);
	return err;
}

struct from {
	const struct extref_build_source *src;
	struct extref_populate	*p;
};

static errcode_t from_source(extref_fs_t xfs, void *arg)
{
	const struct from *f = arg;
	const struct extref_build_source *src = f->src;

	if (src->n_layers)
		return extref_populate_layers(xfs, src->layer_fds,
					      src->n_layers, src->layer_flags,
					      f->p);
	if (src->image)
		return extref_populate_image(xfs, src->image, f->p);
	if (src->archive_fd >= 0)
		return extref_populate_archive(xfs, src->archive_fd, f->p);
	if (src->dir)
		return extref_populate_dir(xfs, src->dir, f->p);
	return EXT2_ET_INVALID_ARGUMENT;
}

errcode_t extref_build_populate(const char *image,
				const struct extref_build_source *src,
				const struct extref_build_opts *o,
				struct extref_populate *p)
{
	struct from f = { src, p };

	return xr_build_fill(image, o, from_source, &f);
}
