/*
 * source.c --- mkfs.extref -d SOURCE: the -d arguments handed to the
 * library, which tells them apart, opens, checks and measures the source
 * (extref_build_input_open: a directory, an archive, '-', layers, a
 * layer list, an OCI layout, an image); the image sized from it without
 * SIZE (plan_size); then populated (extref_build_populate) and, for an
 * image source, deduplicated; what failed said.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <et/com_err.h>
#include <ext2fs/ext2fs.h>
#include "extref_builder.h"
#include "mkfs.h"

/* The run's source (source_check), open until the process ends. */
static struct extref_build_input in = { .src = { .archive_fd = -1 } };

/* The source must be a directory, an archive, an image or layers;
 * without SIZE, size the image from it. */
void source_check(struct extref_build_args *o)
{
	struct extref_build_input_opts io;
	sigset_t signals;
	errcode_t err;

	extref_build_input_of(o, &io);	/* it tells them apart */
	io.progress = progress_cb;
	cleanup_signals(&signals);	/* while a spool file has a name */
	io.signals = &signals;
	err = extref_build_input_open(&io, &in);
	progress_end();
	if (err)
		fatal("%s", in.why ? in.why : error_message(err));
	plan.archive = in.src.n_layers ? in.names[0] :
		     in.src.archive_fd >= 0 ? o->source : NULL;
	plan.image_source = in.src.image;
	plan.source_digest = in.has_digest ? in.digest : NULL;
	if (o->size_arg) {	/* for the message when it is too small */
		plan.source_need = in.need;
		return;
	}
	plan_size(o, &in.size);
	plan.source_need = plan.size_bytes;
}

/*
 * Is err the image running out of room?  Not EXT2_ET_EA_NO_SPACE: an
 * entry's extended attributes larger than its inode and one block fit
 * in no image, whatever its size (the error names the entry).
 */
static int out_of_room(errcode_t err)
{
	return err == EXT2_ET_BLOCK_ALLOC_FAIL ||
	       err == EXT2_ET_INODE_ALLOC_FAIL || err == ENOSPC ||
	       err == EXT2_ET_DIR_NO_SPACE_FOR_CSUM;
}

static void report(const struct extref_build_args *o, errcode_t err,
		   const struct extref_populate *p)
{
	const char *src = plan.archive ? plan.archive : o->source;
	int named = plan.archive || plan.image_source;	/* where is its entry */
	const char *where = p->where ? p->where : "";

	if (p->layer < in.src.n_layers)
		src = in.names[p->layer];

	if (err == EXT2_ET_INODE_ALLOC_FAIL && in.entries)
		error_line("%s: out of inodes for %s (%llu entries; raise -N "
			   "or lower -i)", o->image, src,
			   (unsigned long long)in.entries);
	else if (err == EXT2_ET_INODE_ALLOC_FAIL)
		error_line("%s: out of inodes for %s (raise -N or lower -i)",
			   o->image, src);
	else if (out_of_room(err) && plan.source_need)
		error_line("%s: image too small for %s (%s): it needs about "
			   "%llu KiB", o->image, src, error_message(err),
			   (unsigned long long)(plan.source_need / 1024));
	else if (out_of_room(err))
		error_line("%s: image too small for %s (%s)", o->image, src,
			   error_message(err));
	else if (named && err != EXT2_ET_NO_MEMORY)
		error_line("%s: %s: %s%s%s", src, *where ? where : ".",
			   error_message(err), p->why ? ": " : "",
			   p->why ? p->why : "");
	else
		error_line("%s: %s while copying %s", o->image,
			   error_message(err), *where ? where : src);
}

/* The copy's bar: the data written against what the source holds. */
static void copy_progress(const char *phase, __u64 done, __u64 total,
			  void *priv)
{
	(void)total; (void)priv;
	progress_update(phase, done, in.bytes ? in.bytes : done);
}

/* The source into the image, then the quotas it charges
 * (extref_build_populate). */
static int populate(const struct extref_build_args *o)
{
	struct extref_build_opts b;
	struct extref_populate p;
	errcode_t err;

	extref_build_populate_of(o, &p);
	p.progress = copy_progress;
	if (o->dedup == EXTREF_DEDUPE_BLOCK)
		p.dedupe_hint = in.size.distinct_blocks;
	build_opts_of(o, &b);
	err = extref_build_populate(o->image, &in.src, &b, &p);
	if (err)
		report(o, err, &p);
	else
		progress_end();
	extref_populate_free(&p);
	return err ? 1 : 0;
}

int source_finish(const struct extref_build_args *o)
{
	if (populate(o))
		return 1;
	/* an image's sharing is kept as it is read; --dedup finds more */
	if (plan.image_source && o->dedup && dedupe_new(o))
		return 1;
	/* no e2fsck -fp afterwards: a directory is indexed as its first
	 * block fills (xr_link), as the kernel does, not left linear */
	return 0;
}
