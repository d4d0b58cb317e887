/*
 * source.c --- mkfs.extref -d SOURCE: the stock mke2fs copies the
 * directory (every file type, owners, modes, times, extended attributes,
 * hard links, sparse files; entries in sorted order, so the host's
 * directory order does not matter), then this makes the image
 * reproducible and optionally root-owned, and deduplicates it.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ext2fs/ext2fs.h>
#include "extref_ops.h"
#include "extref_fsck.h"
#include "mkfs.h"

static uint64_t src_bytes, src_entries;

static int count_entry(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	(void)path; (void)ftw;
	src_entries++;
	if (type == FTW_F && S_ISREG(st->st_mode))
		src_bytes += ((uint64_t)st->st_blocks * 512 + 4095) / 4096 * 4096;
	else
		src_bytes += 4096;	/* a directory block, a slow symlink */
	return 0;
}

/* The source must be a directory; without SIZE, size the image from it. */
void source_check(struct mkfs_opts *o)
{
	static char inodes[32];
	struct stat st;
	uint64_t bytes;

	if (stat(o->source, &st) < 0)
		fatal("cannot read %s: %s", o->source, strerror(errno));
	if (S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
		tar_unpack(o);		/* o->source is now a directory */
	else if (!S_ISDIR(st.st_mode))
		fatal("%s: neither a directory nor an archive", o->source);
	if (nftw(o->source, count_entry, 64, FTW_PHYS) < 0)
		fatal("cannot read %s: %s", o->source, strerror(errno));
	/* Content, inode tables at 256 bytes, and room for the journal and
	 * group metadata; then the headroom. */
	bytes = src_bytes + src_entries * 256;
	o->source_need = bytes + 32 * 1024 * 1024;
	if (o->size_arg)
		return;
	bytes += bytes / 100 * o->headroom + 32 * 1024 * 1024;
	o->size_bytes = bytes;
	o->size_arg = "computed from SOURCE";
	if (!o->inodes) {
		snprintf(inodes, sizeof(inodes), "%llu",
			 (unsigned long long)(src_entries +
					      src_entries / 100 * o->headroom +
					      1024));
		o->inodes = inodes;
	}
}

/*
 * mke2fs -d copies seconds only; times are set again from the source
 * with their nanoseconds (clamped to SOURCE_DATE_EPOCH when it is set),
 * and owners become root with --all-root.  From an archive, each inode
 * first gets what the archive says of its entry (tar_apply.c).
 */
struct post {
	const struct mkfs_opts	*o;
	extref_fs_t		xfs;
	ext2_filsys		fs;		/* xfs's */
	struct ext2_inode_large	*in;
	size_t			srclen;		/* strlen(o->source) */
	char			*failed;	/* path that failed */
};

static struct post post;

static void set_time(__u32 *sec, __u32 *extra, int large,
		     const struct timespec *ts, const struct mkfs_opts *o)
{
	long long s = ts->tv_sec;
	long ns = ts->tv_nsec;

	if (o->have_epoch && s >= o->epoch) {
		s = o->epoch;
		ns = 0;
	}
	*sec = (__u32)s;
	if (large)	/* nanoseconds, and seconds past 2038 in bits 0-1 */
		*extra = ((__u32)ns << 2) | (__u32)(((s - (__s32)s) >> 32) & 3);
}

/*
 * What the archive says of the source's path; a directory it does not
 * list (a parent it implies, or the root without "./") is 0755 and
 * root's, with the host's times.
 */
static const struct tar_meta *archive_meta(const struct post *p,
					   const char *path,
					   const struct stat *st,
					   struct tar_meta *dflt)
{
	const char *rel = path + p->srclen;
	struct tar_meta *m;

	if (*rel == '/')
		rel++;
	m = tar_meta_get(rel);
	if (m)
		return m;
	memset(dflt, 0, sizeof(*dflt));
	dflt->mode = S_IFDIR | 0755;
	dflt->atime = st->st_atim;
	dflt->mtime = st->st_mtim;
	dflt->ctime = st->st_ctim;
	return dflt;
}

/*
 * Give inode ino what the source says of path (whose lstat is st):
 * times, the owner with --all-root, and from an archive everything the
 * archive records; *ft is the file type its directory entries need.
 */
static errcode_t fix_inode(struct post *p, ext2_ino_t ino, const char *path,
			   const struct stat *st, int *ft)
{
	int isz = EXT2_INODE_SIZE(p->fs->super), large;
	const struct timespec *at = &st->st_atim, *mt = &st->st_mtim;
	const struct timespec *ct = &st->st_ctim;
	struct tar_meta dflt;
	errcode_t err;

	*ft = 0;
	if (p->o->archive) {
		const struct tar_meta *m = archive_meta(p, path, st, &dflt);

		/* -E root_owner= wins over the archive's "./" */
		err = tar_apply(p->fs, ino, p->in, m,
				!(ino == EXT2_ROOT_INO && p->o->root_owner));
		at = &m->atime;
		mt = &m->mtime;
		ct = &m->ctime;
		*ft = tar_file_type(m->mode);
	} else {
		err = ext2fs_read_inode_full(p->fs, ino,
					     (struct ext2_inode *)p->in, isz);
	}
	if (err)
		return err;
	large = isz > EXT2_GOOD_OLD_INODE_SIZE && p->in->i_extra_isize >= 24;
	if (p->o->all_root) {
		p->in->i_uid = p->in->i_gid = 0;
		p->in->osd2.linux2.l_i_uid_high = 0;
		p->in->osd2.linux2.l_i_gid_high = 0;
	}
	set_time(&p->in->i_atime, &p->in->i_atime_extra, large, at, p->o);
	set_time(&p->in->i_mtime, &p->in->i_mtime_extra, large, mt, p->o);
	set_time(&p->in->i_ctime, &p->in->i_ctime_extra, large, ct, p->o);
	if (large && p->o->have_epoch && p->in->i_crtime > p->o->epoch) {
		p->in->i_crtime = (__u32)p->o->epoch;
		p->in->i_crtime_extra = 0;
	}
	return ext2fs_write_inode_full(p->fs, ino, (struct ext2_inode *)p->in,
				       isz);
}

/* Entries of one directory whose file type changes. */
struct retype {
	ext2_ino_t	*inos;
	int		*fts;
	size_t		n;
};

static errcode_t retype_add(struct retype *r, size_t max, ext2_ino_t ino,
			    int ft)
{
	if (!r->inos) {
		r->inos = calloc(max, sizeof(*r->inos));
		r->fts = calloc(max, sizeof(*r->fts));
		if (!r->inos || !r->fts)
			return EXT2_ET_NO_MEMORY;
	}
	r->inos[r->n] = ino;
	r->fts[r->n++] = ft;
	return 0;
}

/*
 * Walk the image's directory dir and the source's path side by side:
 * one pass over every entry, whatever the size of the directories.
 */
static errcode_t walk(struct post *p, ext2_ino_t dir, char *path, size_t len)
{
	struct retype rt = { NULL, NULL, 0 };
	struct extref_dirlist ds;
	struct stat st;
	errcode_t err;
	size_t i;
	int ft;

	err = extref_dir_list(p->xfs, dir, 0, &ds);
	for (i = 0; !err && i < ds.n; i++) {
		size_t nl = strlen(ds.v[i].name);

		if (len + nl + 2 > 4096) {
			err = EXT2_ET_TOOSMALL;
			break;
		}
		path[len] = '/';
		memcpy(path + len + 1, ds.v[i].name, nl + 1);
		if (lstat(path, &st) < 0)
			continue;	/* lost+found: not in the source */
		err = fix_inode(p, ds.v[i].ino, path, &st, &ft);
		if (!err && ft && ft != ds.v[i].file_type)
			err = retype_add(&rt, ds.n, ds.v[i].ino, ft);
		if (!err && ds.v[i].file_type == EXT2_FT_DIR)
			err = walk(p, ds.v[i].ino, path, len + nl + 1);
		if (err && !p->failed)
			p->failed = strdup(path);
	}
	path[len] = 0;
	if (!err && rt.n) {
		err = tar_fix_dirents(p->fs, dir, rt.inos, rt.fts, rt.n);
		if (err && !p->failed)
			p->failed = strdup(path);
	}
	free(rt.inos);
	free(rt.fts);
	extref_dir_list_free(&ds);
	return err;
}

static int postprocess(const struct mkfs_opts *o)
{
	errcode_t err;

	memset(&post, 0, sizeof(post));
	post.o = o;
	/* the ext4 part only: the tree is the dedupe's, after this */
	err = extref_fs_open(o->image, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			     &post.xfs, NULL);
	if (!err)
		post.fs = extref_fs_ext2(post.xfs);
	if (!err && o->have_epoch)
		post.fs->now = o->epoch;	/* the superblock's write time */
	if (!err)
		err = ext2fs_get_memzero(EXT2_INODE_SIZE(post.fs->super),
					 &post.in);
	if (!err) {
		char path[4096];
		struct stat st;

		int ft;

		snprintf(path, sizeof(path), "%s", o->source);
		post.srclen = strlen(path);
		if (lstat(path, &st) < 0)
			err = errno;
		if (!err)
			err = fix_inode(&post, EXT2_ROOT_INO, path, &st, &ft);
		if (!err)
			err = walk(&post, EXT2_ROOT_INO, path, strlen(path));
	}
	ext2fs_free_mem(&post.in);
	/* mke2fs -d charged the quota files before the files were in */
	if (!err)
		err = extref_quota_recompute(post.xfs);
	if (!err)
		err = extref_fs_close(post.xfs);
	else
		extref_fs_abort(post.xfs);
	post.xfs = NULL;
	post.fs = NULL;
	if (err && o->archive) {
		/* name the entry of the archive, not the unpacked copy */
		const char *rel = post.failed ? post.failed + post.srclen : "";

		error_line("%s: %s while writing what %s records of %s", o->image,
			   error_message(err), o->archive,
			   *rel == '/' ? rel + 1 : ".");
	} else if (err) {
		error_line("%s: %s while setting times and owners%s%s",
			   o->image, error_message(err),
			   post.failed ? " of " : "",
			   post.failed ? post.failed : "");
	}
	free(post.failed);
	return err ? 1 : 0;
}

/*
 * mke2fs -d leaves directories of several blocks linear; the first
 * e2fsck -p (fsck.extref -p, a boot-time check) would index them (its
 * pass 3A), rewriting a freshly built image.  The stock e2fsck -fp does
 * it here instead, at the build's time (E2FSCK_TIME, from
 * SOURCE_DATE_EPOCH when set), so the image leaves the builder as e2fsck
 * would leave it and stays reproducible.
 */
static int index_dirs(const struct mkfs_opts *o)
{
	static const char *const args[] = { "-fp", NULL };
	char when[32];
	int status;
	errcode_t err;

	if (o->have_epoch) {
		snprintf(when, sizeof(when), "%lld", o->epoch);
		setenv("E2FSCK_TIME", when, 1);
	}
	err = extref_run_e2fsck(o->image, args, EXTREF_E2FSCK_QUIET, &status);
	if (err) {
		error_line("%s: %s", o->image, error_message(err));
		return 1;
	}
	/* 1: directories indexed (or another fix e2fsck -p makes) */
	if (status & ~1) {
		error_line("%s: e2fsck -fp of the new image exited %d",
			   o->image, status);
		return 1;
	}
	return 0;
}

int source_finish(const struct mkfs_opts *o)
{
	progress_update("setting times", 0, 0);
	if (postprocess(o))
		return 1;
	progress_end();
	if (o->dedup && dedupe_image(o))
		return 1;
	progress_update("indexing directories", 0, 0);
	if (index_dirs(o))
		return 1;
	progress_end();
	return 0;
}
