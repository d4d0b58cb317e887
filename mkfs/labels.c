/*
 * labels.c --- mkfs.extref --file-contexts FILE: SELinux labels for every
 * file the build creates.
 *
 * FILE is in the SELinux file_contexts format (a path regular
 * expression, an optional file type such as -d or --, and a context or
 * <<none>>), read through libselinux's labeling API as e2fsdroid and
 * mkfs.erofs read it.  After the image is populated, every inode reached
 * from the root, the root and lost+found included, gets as
 * security.selinux the context its path in the image ("/", "/etc/passwd")
 * and its mode look up to; a path that looks up to <<none>> (or to no
 * entry) keeps what the source or the archive gave it.  A hard link is
 * labeled by the first of its paths in the walk.  Contexts are checked
 * as the library checks a label (extref_label_check); a bad one fails
 * the build, naming the path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ext2fs/ext2fs.h>
#include "extref_ops.h"
#include "mkfs.h"

#define LABEL_PATH_MAX	4096

struct labeler {
	extref_labels_t		h;
	extref_fs_t		xfs;
	ext2_filsys		fs;
	ext2fs_inode_bitmap	done;		/* inodes labeled */
	char			path[LABEL_PATH_MAX];
	const char		*bad_ctx;	/* a context that failed */
};

/* FILE's lookups; fatal when libselinux is missing. */
static extref_labels_t open_contexts(const char *file)
{
	extref_labels_t h = NULL;
	const char *why = NULL;
	errcode_t err = extref_labels_open(file, &h, &why);

	if (err == EXTREF_ERR_SELINUX_LIB)
		fatal("%s: %s", file, why);
	errno = err;
	return err ? NULL : h;
}

/* At option time, before anything is touched: FILE must parse. */
void labels_check(const char *file)
{
	extref_labels_t h = open_contexts(file);

	if (!h)
		fatal("%s: not a readable file_contexts file: %s", file,
		      strerror(errno ? errno : EINVAL));
	extref_labels_close(h);
}

static errcode_t set_label(ext2_filsys fs, ext2_ino_t ino, const char *ctx)
{
	struct ext2_xattr_handle *h = NULL;
	errcode_t err;

	err = ext2fs_xattrs_open(fs, ino, &h);
	if (!err)
		err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_set(h, "security.selinux", ctx,
				       strlen(ctx) + 1);
	if (h)
		ext2fs_xattrs_close(&h);
	return err;
}

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
		err = set_label(l->fs, ino, ctx);
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

int labels_apply(const struct mkfs_opts *o)
{
	struct labeler l;
	errcode_t err;

	memset(&l, 0, sizeof(l));
	l.h = open_contexts(o->file_contexts);
	if (!l.h) {
		error_line("%s: %s", o->file_contexts, strerror(errno));
		return 1;
	}
	err = extref_fs_open(o->image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE |
			     EXTREF_OPEN_NO_JOURNAL,
			     &l.xfs, NULL);
	if (!err) {
		l.fs = extref_fs_ext2(l.xfs);
		if (o->have_epoch)
			l.fs->now = o->epoch;
		err = ext2fs_allocate_inode_bitmap(l.fs, "labeled", &l.done);
	}
	if (!err) {
		strcpy(l.path, "/");
		err = label_one(&l, EXT2_ROOT_INO);
	}
	if (!err)
		err = walk(&l, EXT2_ROOT_INO, 0);
	if (l.done)
		ext2fs_free_inode_bitmap(l.done);
	if (l.xfs && !err)
		extref_fs_accept(l.xfs);	/* this run made it */
	if (l.xfs && !err)
		err = extref_fs_close(l.xfs);
	else if (l.xfs)
		extref_fs_abort(l.xfs);
	extref_labels_close(l.h);
	if (err && l.bad_ctx)
		error_line("%s: %s: context '%s' of %s: %s", o->image,
			   o->file_contexts, l.bad_ctx, l.path,
			   error_message(err));
	else if (err)
		error_line("%s: %s while labeling %s", o->image,
			   error_message(err), l.path[0] ? l.path : "/");
	free((void *)l.bad_ctx);
	return err ? 1 : 0;
}
