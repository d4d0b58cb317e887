/*
 * shrink_mke2fs.c --- a shrink's copy laid out by the stock mke2fs, as
 * mkfs.extref -d lays out a new image: the file made in the hidden
 * directory at its size, mke2fs run the one way a build runs it
 * (extref_build_mke2fs_run: our configuration, and what it said made
 * one line when it fails).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shrink_int.h"

/* The new file, bytes long (in the hidden directory: removed with it). */
static errcode_t make_file(struct xr_shrink *s, const char *path,
			   __u64 bytes)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666), e;

	if (fd < 0)
		return xr_shrink_why(s, errno, "cannot open %s: %s", path,
				     strerror(errno));
	if (ftruncate(fd, (off_t)bytes) < 0) {
		e = errno;
		close(fd);
		return xr_shrink_why(s, e, "%s: cannot make the file %llu "
				     "bytes long: %s", path,
				     (unsigned long long)bytes, strerror(e));
	}
	close(fd);
	return 0;
}

static void argv_of(const struct xr_shrink *s, struct extref_build_mke2fs *m,
		    const char *path, __u64 bytes, char *inodes, char *jopt)
{
	const struct xr_shrink_keep *k = &s->keep;

	memset(m, 0, sizeof(*m));
	m->image = path;
	m->fs_bytes = bytes;
	m->blocksize = k->blocksize;
	m->give_blocksize = 1;
	m->inodes = inodes;
	m->inode_size = k->isize;
	m->label = k->label[0] ? k->label : NULL;
	m->uuid = k->uuid;
	m->ext_opts = k->ext[0] ? k->ext : NULL;
	m->features = k->features;
	m->journal_opt = k->journal ? jopt : NULL;
	m->reserved_zero = 1;
	m->has_source = 1;
	m->created = 1;
	m->need = bytes;
	/* a hash seed the image lacks: derived from the epoch, as a build's */
	m->have_epoch = !!(s->o->build.flags & EXTREF_BUILD_EPOCH);
	m->epoch = s->o->build.epoch;
}

/* Run it as a build runs it (extref_build_mke2fs_run: the argv, our
 * configuration); 0, or the line that says why in s->res->why. */
static errcode_t run(struct xr_shrink *s, struct extref_build_mke2fs *m)
{
	const struct extref_build_shrink_opts *o = s->o;
	struct extref_build_tool t = {
		.name = "mke2fs", .path = o->mke2fs ? o->mke2fs :
					  "/sbin/mke2fs",
		.env_var = o->mke2fs_env, .signals = o->signals,
		.child = o->child, .priv = o->priv,
	};
	errcode_t err;

	err = extref_build_mke2fs_run(m, &o->build, &t, s->res->why,
				      sizeof(s->res->why));
	free(t.output);
	return err;
}

errcode_t xr_shrink_mke2fs(struct xr_shrink *s, const char *path,
			   __u64 bytes, __u64 inodes, unsigned int journal_mib,
			   const char *source)
{
	struct extref_build_mke2fs m;
	char n[32], jopt[32];
	__u64 blocks = bytes / s->keep.blocksize;
	errcode_t err;

	if (blocks < XR_BUILD_MIN_BLOCKS)
		return xr_shrink_why(s, EXT2_ET_TOOSMALL, "%s: image too small "
				     "for %s (%llu blocks of %u bytes): it "
				     "needs about %llu KiB", path, source,
				     (unsigned long long)blocks,
				     s->keep.blocksize,
				     (unsigned long long)(bytes / 1024));
	bytes = blocks * s->keep.blocksize;
	err = make_file(s, path, bytes);
	if (err)
		return err;
	snprintf(n, sizeof(n), "%llu", (unsigned long long)inodes);
	snprintf(jopt, sizeof(jopt), "size=%u", journal_mib);
	argv_of(s, &m, path, bytes, n, jopt);
	m.need_for = source;
	return run(s, &m);
}
