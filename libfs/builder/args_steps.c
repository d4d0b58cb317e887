/*
 * args_steps.c --- each step's options from what a build was asked
 * (struct extref_build_args): the clock, the dedupe mode, the owners,
 * the mke2fs options, the update's flags.  What a run settles (its
 * progress, sizes from the source, the source's digest) the caller
 * adds.
 */
#include <string.h>

#include "extref.h"
#include "extref_builder.h"

void extref_build_opts_of(const struct extref_build_args *a,
			  struct extref_build_opts *b)
{
	memset(b, 0, sizeof(*b));
	if (a->have_epoch) {
		b->flags |= EXTREF_BUILD_EPOCH;
		b->epoch = a->epoch;
	}
	if (a->verify)		/* --update's */
		b->flags |= EXTREF_BUILD_VERIFY;
}

void extref_build_mke2fs_of(const struct extref_build_args *a,
			    const struct extref_build_target *t,
			    struct extref_build_mke2fs *m)
{
	memset(m, 0, sizeof(*m));
	m->image = a->image;
	m->fs_bytes = t->fs_bytes;
	m->blocksize = a->blocksize;
	m->give_blocksize = a->bs_chosen || !a->host_conf;
	m->fs_type = a->fs_type;
	m->inodes = a->inodes;
	m->inode_ratio = a->inode_ratio;
	m->inode_size = a->inode_size;
	m->label = a->label;
	m->uuid = a->uuid;
	m->ext_opts = a->ext_opts;
	m->features = a->features;
	m->pass = a->pass;
	m->npass = a->npass;
	m->verbose = a->verbose;
	m->has_source = a->source != NULL;
	m->need_for = a->source;
	m->created = t->created;
	m->is_blockdev = t->is_blockdev;
	m->host_conf = a->host_conf;
	m->scratch = a->noaction && !t->exists;	/* -n: nothing made */
	m->have_epoch = a->have_epoch;	/* -U, hash_seed= derived */
	m->epoch = a->epoch;
}

void extref_build_input_of(const struct extref_build_args *a,
			   struct extref_build_input_opts *io)
{
	memset(io, 0, sizeof(*io));
	io->args = a->sources;
	io->n_args = a->nsources;
	io->flags = a->size_arg ? EXTREF_SOURCE_SIZED : 0;
	if (a->have_epoch && !a->uuid)	/* the UUID derived from it */
		io->flags |= EXTREF_SOURCE_DIGEST;
	io->image = a->image;
	io->blocksize = a->blocksize;
	io->dedupe = a->dedup;
}

void extref_build_populate_of(const struct extref_build_args *a,
			      struct extref_populate *p)
{
	memset(p, 0, sizeof(*p));
	if (a->all_root)
		p->flags |= EXTREF_POP_ALL_ROOT;
	if (a->root_owner)	/* -E root_owner= wins over an archive's "./" */
		p->flags |= EXTREF_POP_KEEP_ROOT_OWNER;
	if (a->no_xattrs)	/* -E no_copy_xattrs */
		p->flags |= EXTREF_POP_NO_XATTRS;
	if (a->have_epoch) {
		p->flags |= EXTREF_POP_EPOCH;
		p->epoch = a->epoch;
	}
	/* dedupe as the data goes in: each distinct block (or file)
	 * written once, the tree bulk-loaded at the end */
	p->dedupe = a->dedup;
}

void extref_build_update_of(const struct extref_build_args *a,
			    struct extref_update *u)
{
	memset(u, 0, sizeof(*u));
	u->at = a->at;
	if (a->all_root)
		u->flags |= EXTREF_POP_ALL_ROOT;
	if (a->delete_extra)
		u->flags |= EXTREF_UPDATE_DELETE;
	if (a->atomic)
		u->flags |= EXTREF_UPDATE_KEEP_JOURNAL;
	if (a->have_epoch) {
		u->flags |= EXTREF_POP_EPOCH;
		u->epoch = a->epoch;
	}
}

void extref_build_shrink_of(const struct extref_build_args *a,
			    struct extref_build_shrink_opts *so)
{
	memset(so, 0, sizeof(*so));
	so->flags = a->convert ? EXTREF_SHRINK_CONVERT : 0;
	so->dedupe = a->dedup;
	so->headroom = a->headroom;
	extref_build_opts_of(a, &so->build);
}
