/*
 * update_fit.c --- the journal grown before an update's first run
 * (xr_upd_fit_first) when an estimate of its commit says the journal
 * will not hold it, so that the common update that outgrows the journal
 * runs once (docs/TRANSACTIONS.md, "An update whose in-use blocks
 * outgrow the journal").
 *
 * The estimate is a walk of the image's directories that the source
 * has too, each name of the image looked up in the source (fstatat):
 * an entry whose kind, mode, owner, modification time or size differs
 * (or, with EXTREF_UPDATE_DELETE, that the source lacks) changes its
 * inode's table block and the directory block that holds its name; a
 * name the source adds changes a block of the directory; a directory
 * so changed changes its own inode.  The commit journals those blocks
 * (distinct inode table blocks counted once), the bitmaps and
 * descriptor of every group, the tree's nodes (at most as many as the
 * tree has) and the superblock.  Entries below a directory the image
 * lacks are new: their blocks go in place early, never journaled.  The
 * measured rerun (update.c) stays the fallback when the estimate was
 * short; an estimate that finds the journal long enough changes nothing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "update_int.h"
#include "journal/xr_journal.h"
#include "tree/extref_int.h"
#include "txn/xr_txio.h"

struct fit {
	ext2_filsys	fs;
	int		del;		/* EXTREF_UPDATE_DELETE */
	__u8		*itb;		/* inode table blocks touched */
	__u64		nitb;
	__u64		dirblk;		/* directory blocks touched */
	__u64		touched;	/* entries changed, new or gone */
	__u64		data;		/* blocks of changed or new files */
	ext2fs_inode_bitmap seen;	/* directories walked: a damaged
					 * image's loop is walked once */
};

/* Whether dir was walked already; marks it. */
static int seen(struct fit *f, ext2_ino_t dir)
{
	if (dir < 1 || dir > f->fs->super->s_inodes_count ||
	    ext2fs_test_inode_bitmap2(f->seen, dir))
		return 1;
	ext2fs_mark_inode_bitmap2(f->seen, dir);
	return 0;
}

struct fit_dir {
	struct fit	*f;
	int		dfd;
	__u64		matched;
	__u64		touched;
	errcode_t	err;
};

static __thread __u64 new_bytes;

static int new_file(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)path; (void)ftw; (void)type;
	new_bytes += (__u64)st->st_size + 4096;	/* data, an inode's due */
	return 0;
}

static void mark_ino(struct fit *f, ext2_ino_t ino)
{
	__u64 per = f->fs->blocksize / EXT2_INODE_SIZE(f->fs->super);
	__u64 b = (ino - 1) / per;

	if (!(f->itb[b / 8] & (1u << (b % 8)))) {
		f->itb[b / 8] |= 1u << (b % 8);
		f->nitb++;
	}
}

/* The image's inode and the source's entry differ as the update sees. */
static int differs(const struct ext2_inode *in, const struct stat *st)
{
	if (in->i_mode != (st->st_mode & 0xffff) ||
	    inode_uid(*in) != st->st_uid || inode_gid(*in) != st->st_gid)
		return 1;
	if (S_ISDIR(st->st_mode))
		return 0;
	return in->i_mtime != (__u32)st->st_mtime ||
	       EXT2_I_SIZE(in) != (__u64)st->st_size;
}

static errcode_t fit_walk(struct fit *f, int dfd, ext2_ino_t dir);

static errcode_t sub(struct fit *f, int dfd, const char *name,
		     ext2_ino_t ino)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);
	errcode_t err;

	if (fd < 0)
		return 0;	/* the update says why */
	err = fit_walk(f, fd, ino);
	close(fd);
	return err;
}

static void new_tree(struct fit *f, int dfd, const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d/", dfd);
	if (strlen(path) + strlen(name) >= sizeof(path) - 1) {
		f->data += 1;
		return;
	}
	strcat(path, name);
	new_bytes = 0;
	nftw(path, new_file, 16, FTW_PHYS);
	f->data += new_bytes / f->fs->blocksize;
}

/* A directory of the image the update removes: every inode below. */
static int gone_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *d,
		   int offset, int blocksize, char *buf, void *priv)
{
	struct fit *f = priv;
	struct ext2_inode in;

	(void)dir; (void)offset; (void)blocksize; (void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE ||
	    !d->inode || ext2fs_read_inode(f->fs, d->inode, &in))
		return 0;
	mark_ino(f, d->inode);
	if (LINUX_S_ISDIR(in.i_mode) && !seen(f, d->inode))
		ext2fs_dir_iterate2(f->fs, d->inode, 0, NULL, gone_cb, f);
	return 0;
}

static int entry_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *d,
		    int offset, int blocksize, char *buf, void *priv)
{
	struct fit_dir *fd = priv;
	struct fit *f = fd->f;
	char name[EXT2_NAME_LEN + 1];
	int len = ext2fs_dirent_name_len(d);
	struct ext2_inode in;
	struct stat st;

	(void)dir; (void)offset; (void)blocksize; (void)buf;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE ||
	    !d->inode)
		return 0;
	memcpy(name, d->name, len);
	name[len] = 0;
	/* "." or ".." past a block's start: a damaged directory */
	if (!strcmp(name, ".") || !strcmp(name, "..") ||
	    ext2fs_read_inode(f->fs, d->inode, &in))
		return 0;
	if (fstatat(fd->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (f->del && strcmp(name, "lost+found")) {
			mark_ino(f, d->inode);
			fd->touched++;
			if (LINUX_S_ISDIR(in.i_mode) && !seen(f, d->inode))
				ext2fs_dir_iterate2(f->fs, d->inode, 0, NULL,
						    gone_cb, f);
		}
		return 0;
	}
	fd->matched++;
	if (differs(&in, &st)) {
		mark_ino(f, d->inode);
		if ((in.i_mode & LINUX_S_IFMT) != (st.st_mode & S_IFMT) ||
		    S_ISREG(st.st_mode)) {
			fd->touched++;		/* replaced: its name */
			if (S_ISREG(st.st_mode))
				f->data += ((__u64)st.st_size +
					    f->fs->blocksize - 1) /
					   f->fs->blocksize;
		}
	}
	if (S_ISDIR(st.st_mode) && LINUX_S_ISDIR(in.i_mode))
		fd->err = sub(f, fd->dfd, name, d->inode);
	else if (S_ISDIR(st.st_mode))
		new_tree(f, fd->dfd, name);
	return fd->err ? DIRENT_ABORT : 0;
}

/* The source directory on dfd against the image's directory dir. */
static errcode_t fit_walk(struct fit *f, int dfd, ext2_ino_t dir)
{
	struct fit_dir fd = { f, dfd, 0, 0, 0 };
	struct ext2_inode in;
	__u64 nsrc = 0, added, blocks;
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;
	errcode_t err;

	if (!d || seen(f, dir)) {
		if (d)
			closedir(d);
		else if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			nsrc++;
	closedir(d);
	err = ext2fs_read_inode(f->fs, dir, &in);
	if (!err)
		err = ext2fs_dir_iterate2(f->fs, dir, 0, NULL, entry_cb, &fd);
	if (err || fd.err)
		return err ? err : fd.err;
	added = nsrc > fd.matched ? nsrc - fd.matched : 0;
	/* names added fill the directory's blocks first; any at all: one */
	blocks = EXT2_I_SIZE(&in) / f->fs->blocksize;
	fd.touched += added ? 1 : 0;
	f->dirblk += fd.touched < blocks ? fd.touched : blocks;
	f->touched += fd.touched + added;
	if (fd.touched)
		mark_ino(f, dir);
	return 0;
}

/* The blocks the commit will journal, from the walk. */
static blk64_t commit_estimate(extref_fs_t xfs, const struct fit *f)
{
	ext2_filsys fs = f->fs;
	extref_tree_t t = extref_fs_tree(xfs);
	blk64_t tree = t ? t->nblocks : 0;
	blk64_t groups = fs->group_desc_count;
	blk64_t n = f->nitb + f->dirblk + 1;

	/* a node's new block and its old one freed, at most the tree */
	if (tree > f->touched)
		tree = f->touched;
	n += 2 * tree + tree / 64 + 3;
	/* bitmaps and descriptor of every group changed */
	if (groups > f->nitb + f->data / fs->super->s_blocks_per_group + 2)
		groups = f->nitb + f->data / fs->super->s_blocks_per_group + 2;
	return n + 3 * groups;
}

#ifdef EXTREF_FAULT_INJECTION
/*
 * Tests only (configure --enable-fault-injection): EXTREF_FAULT_FIT=N
 * makes the estimate N blocks (0: the journal is not grown before the
 * first run), one short of what the commit holds, so that the measured
 * rerun of update.c runs.
 */
static blk64_t fit_forced(blk64_t n)
{
	const char *s = getenv("EXTREF_FAULT_FIT");

	return s && *s ? strtoull(s, NULL, 10) : n;
}
#else
#define fit_forced(n)	(n)	/* no symbol of it in a production build */
#endif

static errcode_t grow_for(extref_fs_t xfs, struct extref_update *u,
			  const struct fit *f)
{
	struct xr_journal *j = xr_tx_journal(xfs);
	blk64_t n = fit_forced(commit_estimate(xfs, f));
	blk64_t have = xr_journal_len(j);
	blk64_t need = xr_journal_len_for(j, n, 0);
	blk64_t len, add, free;
	errcode_t err;

	if (need <= have)
		return 0;
	len = need + need / 8 + 16;	/* as extref_journal_fit's margin */
	add = len - have;
	free = ext2fs_free_blocks_count(f->fs->super);
	/* room for the growth besides the update's own blocks, else the
	 * measured rerun decides (update.c) */
	if (add + add / 256 + 16 + f->data + f->data / 8 > free)
		return 0;
	xr_upd_say(u, EXTREF_NOTE_WRITING, 2);
	err = extref_journal_grow(xfs, len);
	xr_upd_say(u, EXTREF_NOTE_WRITTEN, 0);
	/* no run of free blocks, or inside a caller's transaction */
	if (err == EXT2_ET_BLOCK_ALLOC_FAIL || err == EXTREF_ERR_JNL_GROW ||
	    err == EXT2_ET_INVALID_ARGUMENT)
		return 0;
	if (!err)	/* the growth reloaded the journal: j is gone */
		u->journal_grown += xr_journal_len(xr_tx_journal(xfs)) - have;
	return err;
}

errcode_t xr_upd_fit_first(extref_fs_t xfs, const char *dir,
			   struct extref_update *u)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct fit f;
	ext2_ino_t at = 0;
	__u64 nblk;
	int fd;
	errcode_t err;

	if ((u->flags & EXTREF_UPDATE_KEEP_JOURNAL) || xr_op_begin(xfs) ||
	    !xr_tx_journal(xfs) || extref_namei(xfs, EXT2_ROOT_INO, EXT2_ROOT_INO, u->at ? u->at : "/",
			 EXTREF_NAMEI_FOLLOW, &at))
		return 0;	/* a new --at: its entries are all new */
	memset(&f, 0, sizeof(f));
	f.fs = fs;
	f.del = !!(u->flags & EXTREF_UPDATE_DELETE);
	nblk = fs->super->s_inodes_count /
	       (fs->blocksize / EXT2_INODE_SIZE(fs->super)) + 1;
	err = ext2fs_get_memzero(nblk / 8 + 1, &f.itb);
	if (!err)
		err = ext2fs_allocate_inode_bitmap(fs, "update estimate",
						   &f.seen);
	if (err) {
		ext2fs_free_mem(&f.itb);
		return err;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		/* what the walk cannot read, the update refuses and names */
		err = fit_walk(&f, fd, at);
		close(fd);
		err = err ? 0 : grow_for(xfs, u, &f);
	}
	ext2fs_free_mem(&f.itb);
	ext2fs_free_inode_bitmap(f.seen);
	return err;
}
