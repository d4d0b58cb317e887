/*
 * rdump.c --- a directory tree to the host, as stock debugfs's rdump:
 * data, modes and times, plus user.* extended attributes where the host
 * takes them; what else is kept (owner, set-id bits, devices, every
 * xattr) the options say (hostmeta.c).
 *
 * The image is hostile: every host object is made relative to an open
 * directory (mkdirat, openat with O_NOFOLLOW and O_EXCL, symlinkat),
 * never through a path, so no name and no symlink, in the image or
 * planted on the host, can lead outside the target directory; names
 * holding '/' and the entries "." and ".." are skipped; a directory
 * that contains itself (a loop) is refused, and one reached again by
 * another name (directories have one) is dumped once: each argument
 * costs at most its tree's size, never its paths' number.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "debugfs.h"

#define RDUMP_MAX_DEPTH	1024

/* ----- rdump ----- */

struct rd_ctx {
	const struct cmd_args *a;
	ext2_ino_t	stack[RDUMP_MAX_DEPTH];
	int		depth;
	int		failed;
	char		*buf;
	struct host_meta hm;
	ext2fs_inode_bitmap dumped;	/* directories of this argument */
};

static int rd_fail(struct rd_ctx *c, const char *name, const char *what)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s: %s: %s\n", c->a->name, name, what,
		strerror(errno));
	c->failed = 1;
	return 1;
}

static int rd_err(struct rd_ctx *c, const char *name, errcode_t err)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s: %s\n", c->a->name, name, error_message(err));
	c->failed = 1;
	return 1;
}

static int rd_file(struct rd_ctx *c, ext2_ino_t ino,
		   struct ext2_inode_large *inode, int dirfd, const char *name)
{
	ext2_file_t file;
	errcode_t err;
	unsigned int got;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return rd_fail(c, name, "creating");
	err = ext2fs_file_open(sh.fs, ino, 0, &file);
	if (err) {
		close(fd);
		return rd_err(c, name, err);
	}
	for (;;) {
		err = ext2fs_file_read(file, c->buf, 65536, &got);
		if (err) {
			ret = rd_err(c, name, err);
			break;
		}
		if (!got)
			break;
		if (write(fd, c->buf, got) != (ssize_t)got) {
			ret = rd_fail(c, name, "writing");
			break;
		}
	}
	ext2fs_file_close(file);
	if (!ret)
		set_host_meta(c->a, &c->hm, ino, inode, fd, name);
	close(fd);
	return ret;
}

/* Owner (-p) and times of a name that is not opened (symlink, special). */
static void link_meta(struct rd_ctx *c, struct ext2_inode_large *inode,
		      int dirfd, const char *name)
{
	struct timespec ts[2];

	if ((c->hm.flags & HM_OWNER) &&
	    fchownat(dirfd, name, inode_uid(*inode), inode_gid(*inode),
		     AT_SYMLINK_NOFOLLOW))
		host_warn(c->a, "setting the owner", name);
	host_times(inode, ts);
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW))
		host_warn(c->a, "setting the times", name);
}

static int rd_symlink(struct rd_ctx *c, ext2_ino_t ino,
		      struct ext2_inode_large *inode, int dirfd,
		      const char *name)
{
	__u64 size = EXT2_I_SIZE(inode);
	ext2_file_t file;
	unsigned int got = 0;
	errcode_t err;

	if (size >= sh.fs->blocksize || size >= 65536) {
		errno = ENAMETOOLONG;
		return rd_fail(c, name, "reading the link target");
	}
	if (ext2fs_is_fast_symlink((struct ext2_inode *)inode) &&
	    !(inode->i_flags & EXT4_INLINE_DATA_FL)) {
		memcpy(c->buf, inode->i_block, size);
		got = size;
	} else {
		err = ext2fs_file_open(sh.fs, ino, 0, &file);
		if (err)
			return rd_err(c, name, err);
		err = ext2fs_file_read(file, c->buf, size, &got);
		ext2fs_file_close(file);
		if (err)
			return rd_err(c, name, err);
	}
	c->buf[got] = 0;
	if (symlinkat(c->buf, dirfd, name))
		return rd_fail(c, name, "making the symlink");
	link_meta(c, inode, dirfd, name);
	return 0;
}

/*
 * A FIFO, socket or device: skipped (and counted) unless --devices asks
 * for it, then made with mknodat where the host lets us.
 */
static int rd_special(struct rd_ctx *c, struct ext2_inode_large *inode,
		      int dirfd, const char *name)
{
	mode_t type = 0;
	dev_t dev = 0;
	__u32 b0 = inode->i_block[0], b1 = inode->i_block[1];

	switch (inode->i_mode & LINUX_S_IFMT) {
	case LINUX_S_IFIFO: type = S_IFIFO; break;
	case LINUX_S_IFSOCK: type = S_IFSOCK; break;
	case LINUX_S_IFCHR: type = S_IFCHR; break;
	case LINUX_S_IFBLK: type = S_IFBLK; break;
	default:
		fflush(stdout);
		fprintf(stderr, "%s: warning: %s: bad file type 0%o, skipped\n",
			c->a->name, name, inode->i_mode & LINUX_S_IFMT);
		return 0;
	}
	if (!(c->hm.flags & HM_DEVICES)) {
		c->hm.specials_skipped++;
		return 0;
	}
	if (type == S_IFCHR || type == S_IFBLK)
		dev = b0 ? makedev((b0 >> 8) & 0xff, b0 & 0xff) :
			   makedev((b1 & 0xfff00) >> 8,
				   (b1 & 0xff) | ((b1 >> 12) & 0xfff00));
	if (mknodat(dirfd, name, type | 0600, dev)) {
		host_warn(c->a, "making the special file (skipped)", name);
		return 0;
	}
	link_meta(c, inode, dirfd, name);
	if (fchmodat(dirfd, name, host_mode(&c->hm, inode),
		     AT_SYMLINK_NOFOLLOW))
		host_warn(c->a, "setting the mode", name);
	return 0;
}

static int rd_inode(struct rd_ctx *c, ext2_ino_t ino, int dirfd,
		    const char *name);

struct rd_dir {
	struct rd_ctx	*c;
	int		fd;
};

static int rd_dir_cb(struct ext2_dir_entry *de, int offset, int blocksize,
		     char *buf, void *priv)
{
	struct rd_dir *d = priv;
	int len = ext2fs_dirent_name_len(de);
	char name[EXT2_NAME_LEN + 1];

	(void)offset; (void)blocksize; (void)buf;
	if (!de->inode || is_dot_entry(de))
		return 0;
	memcpy(name, de->name, len);
	name[len] = 0;
	if (!len || memchr(name, '/', len) || strlen(name) != (size_t)len) {
		fflush(stdout);
		fprintf(stderr, "%s: warning: a name holding '/' or a NUL byte "
			"(inode %u) skipped\n", d->c->a->name, de->inode);
		d->c->failed = 1;
		return 0;
	}
	rd_inode(d->c, de->inode, d->fd, name);
	return 0;
}

/* The entries of directory ino into the open host directory fd. */
static int rd_contents(struct rd_ctx *c, ext2_ino_t ino,
		       struct ext2_inode_large *inode, int fd, const char *name)
{
	struct rd_dir d;
	errcode_t err;
	int i;

	for (i = 0; i < c->depth; i++)
		if (c->stack[i] == ino) {
			fflush(stdout);
			fprintf(stderr, "%s: %s: directory inode %u contains "
				"itself, not followed\n", c->a->name, name, ino);
			c->failed = 1;
			return 1;
		}
	if (c->depth == RDUMP_MAX_DEPTH) {
		fflush(stdout);
		fprintf(stderr, "%s: %s: directories nested deeper than %d, "
			"not followed\n", c->a->name, name, RDUMP_MAX_DEPTH);
		c->failed = 1;
		return 1;
	}
	if (ext2fs_test_inode_bitmap2(c->dumped, ino)) {
		fflush(stdout);
		fprintf(stderr, "%s: %s: directory inode %u reached again "
			"by another name, not followed\n", c->a->name, name,
			ino);
		c->failed = 1;
		return 1;
	}
	ext2fs_mark_inode_bitmap2(c->dumped, ino);
	c->stack[c->depth++] = ino;
	d.c = c;
	d.fd = fd;
	err = ext2fs_dir_iterate(sh.fs, ino, 0, NULL, rd_dir_cb, &d);
	c->depth--;
	if (err)
		rd_err(c, name, err);
	set_host_meta(c->a, &c->hm, ino, inode, fd, name);
	return err ? 1 : 0;
}

static int rd_dir(struct rd_ctx *c, ext2_ino_t ino,
		  struct ext2_inode_large *inode, int dirfd, const char *name)
{
	int fd, ret;

	for (ret = 0; ret < c->depth; ret++)
		if (c->stack[ret] == ino)
			return rd_contents(c, ino, inode, -1, name);
	if (mkdirat(dirfd, name, 0700))
		return rd_fail(c, name, "making the directory");
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return rd_fail(c, name, "opening the directory");
	ret = rd_contents(c, ino, inode, fd, name);
	close(fd);
	return ret;
}

static int rd_inode(struct rd_ctx *c, ext2_ino_t ino, int dirfd,
		    const char *name)
{
	struct ext2_inode_large inode;
	errcode_t err;

	memset(&inode, 0, sizeof(inode));
	err = ext2fs_read_inode_full(sh.fs, ino, (struct ext2_inode *)&inode,
				     sizeof(inode));
	if (err)
		return rd_err(c, name, err);
	if (LINUX_S_ISDIR(inode.i_mode))
		return rd_dir(c, ino, &inode, dirfd, name);
	if (LINUX_S_ISREG(inode.i_mode))
		return rd_file(c, ino, &inode, dirfd, name);
	if (LINUX_S_ISLNK(inode.i_mode))
		return rd_symlink(c, ino, &inode, dirfd, name);
	return rd_special(c, &inode, dirfd, name);
}

/* A directory with no last name: its entries straight into HOSTDIR. */
static void rd_root(struct rd_ctx *c, ext2_ino_t ino, int destfd,
		    const char *dest)
{
	struct ext2_inode_large inode;
	errcode_t err;

	memset(&inode, 0, sizeof(inode));
	err = ext2fs_read_inode_full(sh.fs, ino, (struct ext2_inode *)&inode,
				     sizeof(inode));
	if (err) {
		rd_err(c, dest, err);
		return;
	}
	if (!LINUX_S_ISDIR(inode.i_mode)) {
		errno = ENOTDIR;
		rd_fail(c, dest, "the source");
		return;
	}
	rd_contents(c, ino, &inode, destfd, dest);
}

/* The last component of an image path ("/" for the root). */
static const char *image_basename(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);
	const char *s;

	while (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(buf, len, "%.*s", (int)n, path);
	s = strrchr(buf, '/');
	if (s && s[1])
		return s + 1;
	return buf;
}

int impl_rdump(struct cmd_args *a)
{
	const char *dest = a->argv[a->argc - 1];
	struct rd_ctx *c;
	struct stat st;
	int destfd, i;
	int ret;

	destfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (destfd < 0)
		return cmd_fail(a, "%s: %s", dest, errno == ENOTDIR ?
				"Not a directory" : strerror(errno));
	if (fstat(destfd, &st) || !S_ISDIR(st.st_mode)) {
		close(destfd);
		return cmd_fail(a, "%s: Not a directory", dest);
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->buf = malloc(65536);
	if (c && c->buf &&
	    ext2fs_allocate_inode_bitmap(sh.fs, "rdump", &c->dumped))
		c->dumped = NULL;
	if (!c || !c->buf || !c->dumped) {
		if (c)
			free(c->buf);
		free(c);
		close(destfd);
		return cmd_fail(a, "out of memory");
	}
	c->a = a;
	host_meta_init(&c->hm, a, 1);
	for (i = 0; i < a->argc - 1; i++) {
		char base[4096];
		const char *name;
		ext2_ino_t ino;

		ext2fs_clear_inode_bitmap(c->dumped);
		if (resolve_path(a, a->argv[i], &ino)) {
			c->failed = 1;
			continue;
		}
		name = image_basename(a->argv[i], base, sizeof(base));
		/* No last name to make (/, ., ..): as stock debugfs, the
		 * directory's entries go into HOSTDIR itself. */
		if (!strcmp(name, "/") || !strcmp(name, ".") ||
		    !strcmp(name, "..")) {
			rd_root(c, ino, destfd, dest);
			continue;
		}
		rd_inode(c, ino, destfd, name);
	}
	host_meta_report(a, &c->hm);
	ret = c->failed;
	ext2fs_free_inode_bitmap(c->dumped);
	free(c->buf);
	free(c);
	close(destfd);
	return ret;
}
