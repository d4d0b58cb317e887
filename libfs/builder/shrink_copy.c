/*
 * shrink_copy.c --- one copy of a shrink, as mkfs.extref -d IMAGE
 * builds one: sized from what the source holds (its scan, measured:
 * extref_build_plan_size), laid out by the stock mke2fs
 * (shrink_mke2fs.c), its tree added (extref_build_format), populated
 * from the open source with its sharing and the files' own times
 * (populate_image.c), then deduplicated when asked
 * (extref_build_dedupe).  What failed is said in s->res->why.
 */
#include <errno.h>
#include <string.h>
#include <et/com_err.h>

#include "shrink_int.h"

static errcode_t format(struct xr_shrink *s, const char *path, __u64 *blocks)
{
	struct extref_image_info info;
	int step = 0;
	errcode_t err = extref_build_format(path, &s->o->build, &info, &step);

	if (!err) {
		*blocks = info.blocks;
		return 0;
	}
	return xr_shrink_why(s, err, "%s while %s %s", error_message(err),
			     step == EXTREF_STEP_OPEN ? "opening" :
			     step == EXTREF_STEP_WORK ? "creating the "
			     "reference-count tree on" : "writing", path);
}

/* The copy's progress: the data written against what the source
 * holds. */
struct fill {
	struct xr_shrink	*s;
	struct xr_src		*src;
	struct extref_populate	p;
	__u64			total;
};

static void copy_progress(const char *phase, __u64 done, __u64 total,
			  void *priv)
{
	const struct fill *f = priv;
	const struct extref_build_opts *b = &f->s->o->build;

	(void)total;
	b->progress(phase, done, f->total ? f->total : done, b->priv);
}

static errcode_t from_src(extref_fs_t xfs, void *arg)
{
	struct fill *f = arg;

	return xr_populate_src(xfs, f->src, &f->p);
}

/* Is err the copy running out of room? */
static int out_of_room(errcode_t err)
{
	return err == EXT2_ET_BLOCK_ALLOC_FAIL ||
	       err == EXT2_ET_INODE_ALLOC_FAIL || err == ENOSPC ||
	       err == EXT2_ET_DIR_NO_SPACE_FOR_CSUM;
}

static errcode_t populate(struct xr_shrink *s, struct xr_src *src,
			  const char *source, const char *path, __u64 bytes,
			  __u64 need)
{
	struct fill f = { .s = s, .src = src, .total = bytes };
	const char *where;
	errcode_t err;

	if (s->o->build.progress) {
		f.p.progress = copy_progress;
		f.p.priv = &f;
	}
	err = xr_build_fill(path, &s->o->build, from_src, &f);
	where = f.p.where && *f.p.where ? f.p.where : ".";
	if (err && out_of_room(err))
		xr_shrink_why(s, err, "%s: image too small for %s (%s): it "
			      "needs about %llu KiB", path, source,
			      error_message(err),
			      (unsigned long long)(need / 1024));
	else if (err && err != EXT2_ET_NO_MEMORY)
		xr_shrink_why(s, err, "%s: %s: %s%s%s", source, where,
			      error_message(err), f.p.why ? ": " : "",
			      f.p.why ? f.p.why : "");
	else if (err)
		xr_shrink_why(s, err, "%s: %s while copying %s", path,
			      error_message(err), source);
	extref_populate_free(&f.p);
	return err;
}

static errcode_t dedupe(struct xr_shrink *s, const char *path, int mode)
{
	int step = 0;
	errcode_t err = extref_build_dedupe(path, mode, &s->o->build, NULL,
					    NULL, &step);

	if (!err)
		return 0;
	return xr_shrink_why(s, err, "%s: %s while %s", path,
			     error_message(err),
			     step == EXTREF_STEP_PUNCH ? "punching the freed "
			     "blocks out" : step == EXTREF_STEP_WRITE ?
			     "writing" : "deduplicating");
}

errcode_t xr_shrink_copy(struct xr_shrink *s, struct xr_src *src,
			 const char *source, const char *path, int mode,
			 __u64 *blocks)
{
	const struct xr_shrink_keep *k = &s->keep;
	struct extref_build_plan plan = {
		.blocksize = k->blocksize, .inode_size = k->inode_size,
		.headroom = s->o->headroom, .no_journal = !k->journal,
	};
	struct extref_source_size size;
	errcode_t err;

	xr_src_measure(src, k->blocksize, &size);
	err = extref_build_plan_size(&size, &plan);
	if (err)
		return xr_shrink_why(s, err, "%s: %s while sizing the image",
				     path, error_message(err));
	err = xr_shrink_mke2fs(s, path, plan.bytes, plan.inodes,
			       plan.journal_mib, source);
	if (!err)
		err = format(s, path, blocks);
	if (err)
		return err;
	xr_shrink_note(s, EXTREF_SHRINK_FORMATTED);
	err = populate(s, src, source, path,
		       size.data_blocks * k->blocksize, plan.bytes);
	if (!err && mode != EXTREF_DEDUPE_NONE)
		err = dedupe(s, path, mode);
	return err;
}
