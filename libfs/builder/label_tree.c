/*
 * label_tree.c --- extref_build_label: SELinux labels for every file of
 * a built image (mkfs.extref --file-contexts FILE).
 *
 * FILE is in the SELinux file_contexts format (a path regular
 * expression, an optional file type such as -d or --, and a context or
 * <<none>>), read through libselinux's labeling API as e2fsdroid and
 * mkfs.erofs read it.  Every inode reached from the root, the root and
 * lost+found included, gets as security.selinux the context its path in
 * the image ("/", "/etc/passwd") and its mode look up to; a path that
 * looks up to <<none>> (or to no entry) keeps what the source or the
 * archive gave it.  A hard link is labeled by the first of its paths in
 * the walk.  Contexts are checked as the library checks a label
 * (extref_label_check) and set as it sets one (xr_label_set).
 */
#include <stdlib.h>
#include <string.h>

#include "ops/extref_ops_int.h"
#include "build_int.h"

#define LABEL_PATH_MAX	4096

struct labeler {
	extref_labels_t		h;
	extref_fs_t		xfs;
	ext2_filsys		fs;
	ext2fs_inode_bitmap	done;		/* inodes labeled */
	char			path[LABEL_PATH_MAX];
	char			*bad_ctx;	/* a context that failed */
};

/* Look up and set the label of ino at l->path. */
static errcode_t label_one(struct labeler *l, ext2_ino_t ino)
{
	struct ext2_inode in;
	char *ctx = NULL;
	errcode_t err;

	if (ext2fs_test_inode_bitmap2(l->done, ino))
		return 0;
	ext2fs_mark_inode_bitmap2(l->done, ino);
	err = ext2fs_read_inode(l->fs, ino, &in);
	if (err)
		return err;
	err = extref_labels_lookup(l->h, l->path, in.i_mode, &ctx);
	if (err || !ctx)
		return err;
	err = extref_label_check(ctx);
	if (!err)
		err = xr_label_set(l->fs, ino, ctx);
	else
		l->bad_ctx = strdup(ctx);
	extref_labels_free_ctx(ctx);
	return err;
}

static errcode_t walk(struct labeler *l, ext2_ino_t dir, size_t len)
{
	struct extref_dirlist ds;
	errcode_t err;
	size_t i, nl;

	err = extref_dir_list(l->xfs, dir, 0, &ds);
	for (i = 0; !err && i < ds.n; i++) {
		nl = strlen(ds.v[i].name);
		if (len + nl + 2 > sizeof(l->path)) {
			err = EXT2_ET_TOOSMALL;
			break;
		}
		l->path[len] = '/';
		memcpy(l->path + len + 1, ds.v[i].name, nl + 1);
		err = label_one(l, ds.v[i].ino);
		if (!err && ds.v[i].file_type == EXT2_FT_DIR)
			err = walk(l, ds.v[i].ino, len + nl + 1);
	}
	if (!err)
		l->path[len] = 0;
	extref_dir_list_free(&ds);
	return err;
}

/* The root, then everything below it. */
static errcode_t label_all(struct labeler *l)
{
	errcode_t err;

	err = ext2fs_allocate_inode_bitmap(l->fs, "labeled", &l->done);
	if (!err) {
		strcpy(l->path, "/");
		err = label_one(l, EXT2_ROOT_INO);
	}
	if (!err)
		err = walk(l, EXT2_ROOT_INO, 0);
	if (l->done)
		ext2fs_free_inode_bitmap(l->done);
	return err;
}

errcode_t extref_build_label(const char *image,
			     const struct extref_build_opts *o,
			     struct extref_build_labels *r)
{
	struct labeler l;
	errcode_t err;

	memset(&l, 0, sizeof(l));
	r->path = r->bad_ctx = NULL;
	r->why = NULL;
	err = extref_labels_open(r->file_contexts, &l.h, &r->why);
	if (err)
		return err;
	err = extref_fs_open(image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE |
			     EXTREF_OPEN_NO_JOURNAL, &l.xfs, NULL);
	if (!err) {
		l.fs = extref_fs_ext2(l.xfs);
		xr_build_clock(l.fs, o);
		err = label_all(&l);
	}
	if (l.xfs && !err)
		extref_fs_accept(l.xfs);	/* this run made it */
	if (l.xfs && !err)
		err = extref_fs_close(l.xfs);
	else if (l.xfs)
		extref_fs_abort(l.xfs);
	extref_labels_close(l.h);
	if (err) {
		r->path = strdup(l.path[0] ? l.path : "/");
		r->bad_ctx = l.bad_ctx;
	} else {
		free(l.bad_ctx);
	}
	return err;
}

void extref_build_labels_free(struct extref_build_labels *r)
{
	free(r->path);
	free(r->bad_ctx);
	r->path = r->bad_ctx = NULL;
}
