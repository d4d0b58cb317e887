/*
 * change.c --- commands that change the image: write, mkdir, rm, rmdir,
 * symlink, reflink, clone_range, dedupe, pwrite, truncate, punch,
 * unshare, chmod, chown.  cmds.c has already checked -w and the tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "debugfs.h"

static int op_err(struct cmd_args *a, errcode_t err, const char *what);

#define IO_CHUNK	(1024 * 1024)

static int modifiable(struct cmd_args *a, ext2_ino_t ino, const char *path)
{
	errcode_t err = extref_check_modifiable(sh.xfs, ino);

	if (err)
		return cmd_err(a, err, "%s", path);
	return 0;
}

static int load_bitmaps(struct cmd_args *a)
{
	errcode_t err = ext2fs_read_bitmaps(sh.fs);

	if (err)
		return cmd_err(a, err, "reading the bitmaps");
	return 0;
}

/* Resolve PATH, which must be a regular file, and check it may change. */
static int file_arg(struct cmd_args *a, const char *path, ext2_ino_t *ino)
{
	struct ext2_inode_large inode;

	if (resolve_path(a, path, ino) || read_inode(a, *ino, &inode))
		return 1;
	if (!LINUX_S_ISREG(inode.i_mode))
		return cmd_err_class(a, LINUX_S_ISDIR(inode.i_mode) ?
				     EXTREF_ERR_IS_DIR : EXTREF_ERR_NOT_REG,
				     "%s", path);
	return modifiable(a, *ino, path);
}

static int file_size(struct cmd_args *a, ext2_ino_t ino, __u64 *size)
{
	struct ext2_inode_large inode;

	if (read_inode(a, ino, &inode))
		return 1;
	*size = EXT2_I_SIZE(&inode);
	return 0;
}

/* Copy len bytes (from fd, or the pattern byte when fd < 0) to ino at off. */
static int copy_in(struct cmd_args *a, ext2_ino_t ino, const char *path,
		   __u64 off, __u64 len, int fd, int pattern, const char *what,
		   __u64 *done)
{
	/* a buffer the size of the write, up to IO_CHUNK (a pattern fills
	 * only what is written) */
	size_t chunk = len && len < IO_CHUNK ? (size_t)len : IO_CHUNK;
	char *buf = malloc(chunk);
	errcode_t err;
	int ret = 0;

	*done = 0;
	if (!buf)
		return cmd_fail(a, "out of memory");
	if (fd < 0)
		memset(buf, pattern, chunk);
	while (*done < len) {
		size_t want = len - *done > chunk ? chunk : len - *done;
		ssize_t got = want;

		if (fd >= 0) {
			got = read(fd, buf, want);
			if (got < 0) {
				if (errno == EINTR)
					continue;
				ret = cmd_fail(a, "%s: %s", what, strerror(errno));
				break;
			}
			if (got == 0)
				break;
		}
		err = extref_pwrite(sh.xfs, ino, off + *done, buf, got);
		if (err) {
			ret = cmd_err_class(a, err, "%s: writing at offset %llu",
					    path,
					    (unsigned long long)(off + *done));
			break;
		}
		*done += got;
	}
	free(buf);
	return ret;
}

/* ----- write HOSTFILE PATH ----- */

int impl_write(struct cmd_args *a)
{
	const char *host = a->argv[0], *path = a->argv[1];
	struct extref_cred cred;
	struct stat st;
	ext2_ino_t dir, ino;
	char *name = NULL;
	errcode_t err;
	__u64 done;
	int fd, ret = 1;

	fd = open(host, O_RDONLY);
	if (fd < 0)
		return cmd_fail(a, "%s: %s", host, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		cmd_fail(a, "%s: not a regular file", host);
		goto out;
	}
	if (resolve_parent(a, path, &dir, &name) ||
	    check_absent(a, dir, name, path) || modifiable(a, dir, path))
		goto out;
	cred.uid = st.st_uid;
	cred.gid = st.st_gid;
	cred.umask = 0;
	err = extref_create_file(sh.xfs, dir, name,
				 LINUX_S_IFREG | (st.st_mode & 07777), &cred,
				 &ino);
	if (err) {
		cmd_err(a, err, "creating %s", path);
		goto out;
	}
	ret = copy_in(a, ino, path, 0, st.st_size, fd, 0, host, &done);
	if (!ret && done != (__u64)st.st_size)
		ret = cmd_fail(a, "%s: short read (%llu of %llu bytes)", host,
			       (unsigned long long)done,
			       (unsigned long long)st.st_size);
	if (!ret)
		printf("Allocated inode: %u\n", ino);
out:
	free(name);
	close(fd);
	return ret;
}

/* ----- mkdir, symlink ----- */

/* A new directory (target NULL) or symlink at path. */
static int make_entry(struct cmd_args *a, const char *path,
		      const char *target)
{
	ext2_ino_t dir;
	char *name = NULL;
	errcode_t err;
	int ret = 1;

	if (resolve_parent(a, path, &dir, &name) ||
	    check_absent(a, dir, name, path) || modifiable(a, dir, path) ||
	    load_bitmaps(a))
		goto out;
	err = target ? extref_symlink(sh.xfs, dir, name, target, NULL)
		     : extref_mkdir(sh.xfs, dir, name, NULL);
	if (err) {
		cmd_err(a, err, "%s", path);
		goto out;
	}
	ret = 0;
out:
	free(name);
	return ret;
}

int impl_mkdir(struct cmd_args *a)
{
	return make_entry(a, a->argv[0], NULL);
}

int impl_symlink(struct cmd_args *a)
{
	return make_entry(a, a->argv[0], a->argv[1]);
}

/* ----- rm, rmdir ----- */

static int do_unlink(struct cmd_args *a, int dirflag, int keep)
{
	const char *path = a->argv[0];
	struct ext2_inode_large inode;
	ext2_ino_t dir, ino;
	char *name = NULL;
	errcode_t err;
	int ret = 1;

	if (resolve_parent(a, path, &dir, &name))
		goto out;
	err = ext2fs_lookup(sh.fs, dir, name, strlen(name), NULL, &ino);
	if (err) {
		cmd_err(a, err, "%s", path);
		goto out;
	}
	if (read_inode(a, ino, &inode) || modifiable(a, dir, path) ||
	    modifiable(a, ino, path))
		goto out;
	if (!dirflag && LINUX_S_ISDIR(inode.i_mode)) {
		cmd_fail(a, "%s: %s (use rmdir)", path,
			 error_message(EXTREF_ERR_IS_DIR));
		goto out;
	}
	if (dirflag && !LINUX_S_ISDIR(inode.i_mode)) {
		cmd_fail(a, "%s: %s", path, error_message(EXTREF_ERR_NOT_DIR));
		goto out;
	}
	err = extref_unlink(sh.xfs, dir, name,
			    (dirflag ? EXTREF_UNLINK_DIR : 0) |
			    (keep ? EXTREF_UNLINK_KEEP : 0));
	if (err) {
		op_err(a, err, path);
		goto out;
	}
	if (keep && !ext2fs_read_inode(sh.fs, ino, (struct ext2_inode *)&inode)
	    && !inode.i_links_count)
		printf("%s: inode %u kept on the orphan list\n", path, ino);
	if (dirflag && ino == sh.cwd)
		sh.cwd = EXT2_ROOT_INO;
	ret = 0;
out:
	free(name);
	return ret;
}

int impl_rm(struct cmd_args *a)
{
	return do_unlink(a, 0, a->opts['k']);
}

int impl_rmdir(struct cmd_args *a)
{
	return do_unlink(a, 1, 0);
}

/* An inode rm -k kept, off the orphan list and freed (extref_orphan_release). */
int impl_orphan_release(struct cmd_args *a)
{
	__u64 ino;
	errcode_t err;

	if (parse_num_arg(a, a->argv[0], "inode", &ino))
		return 1;
	if (ino == 0 || ino > sh.fs->super->s_inodes_count)
		return cmd_fail(a, "%s: %s", a->argv[0],
				error_message(EXT2_ET_BAD_INODE_NUM));
	err = extref_orphan_release(sh.xfs, (ext2_ino_t)ino);
	if (err)
		return cmd_err(a, err, "inode %llu", (unsigned long long)ino);
	return 0;
}

/* ----- reflink, clone_range, dedupe ----- */

/* -Z CONTEXT: the label of every inode a copy-mode reflink creates. */
static int reflink_label(struct cmd_args *a, struct extref_reflink_opts *ro)
{
	errcode_t err;

	if (a->opts['p'])
		return cmd_fail(a, "%s -> %s: -Z cannot be combined with -p (a "
				"snapshot keeps its source's labels)",
				a->argv[0], a->argv[1]);
	err = extref_label_check(a->optarg['Z']);
	if (err)
		return cmd_err(a, err, "%s -> %s: -Z %s", a->argv[0],
			       a->argv[1], a->optarg['Z']);
	ro->label = a->optarg['Z'];
	return 0;
}

/*
 * An operation's error: a checksum met on the way names its inode and
 * block (extref_damage_where), else the error's class.
 */
static int op_err(struct cmd_args *a, errcode_t err, const char *what)
{
	ext2_ino_t ino;
	blk64_t blk;

	extref_damage_where(sh.xfs, &ino, &blk);
	if (ino && blk)
		return cmd_err(a, err, "%s: inode %u, block %llu", what, ino,
			       (unsigned long long)blk);
	if (ino)
		return cmd_err(a, err, "%s: inode %u", what, ino);
	return cmd_err_class(a, err, "%s", what);
}

/* A reflink's error; a checksum met on the way names its inode and block. */
static void reflink_err(struct cmd_args *a, errcode_t err, const char *src,
			const char *dst)
{
	ext2_ino_t ino;
	blk64_t blk;

	extref_damage_where(sh.xfs, &ino, &blk);
	if (ino && blk)
		cmd_err(a, err, "%s -> %s: inode %u, block %llu", src, dst,
			ino, (unsigned long long)blk);
	else if (ino)
		cmd_err(a, err, "%s -> %s: inode %u", src, dst, ino);
	else
		cmd_err(a, err, "%s -> %s", src, dst);
}

int impl_reflink(struct cmd_args *a)
{
	const char *src = a->argv[0], *dst = a->argv[1];
	struct ext2_inode_large inode;
	ext2_ino_t sino, dir, nino = 0;
	char *name = NULL;
	errcode_t err;
	struct extref_reflink_opts ro = { 0 };
	int flags = 0, ret = 1;
	unsigned long long size;

	if (a->opts['p'])
		flags |= EXTREF_REFLINK_PRESERVE;
	if (a->opts['r'])
		flags |= EXTREF_REFLINK_RECURSIVE;
	ro.flags = flags;
	if (a->opts['Z'] && reflink_label(a, &ro))
		goto out;
	if (resolve_path(a, src, &sino) || read_inode(a, sino, &inode) ||
	    modifiable(a, sino, src))
		goto out;
	if (LINUX_S_ISDIR(inode.i_mode) && !a->opts['r']) {
		cmd_fail(a, "%s: %s (use -r)", src,
			 error_message(EXTREF_ERR_IS_DIR));
		goto out;
	}
	if (resolve_parent(a, dst, &dir, &name) ||
	    check_absent(a, dir, name, dst) || modifiable(a, dir, dst))
		goto out;
	ro.progress = shell_progress_on();
	sh.growable = a->opts['r'];
	err = extref_reflink2(sh.xfs, sino, dir, name, &ro, &nino);
	shell_progress_end();
	/* too big for the journal: cmds.c grows it and runs this again */
	if (err == EXTREF_ERR_TXN_TOO_BIG && sh.growable && sh.may_grow) {
		sh.too_big = 1;
		goto out;
	}
	if (err) {
		reflink_err(a, err, src, dst);
		goto out;
	}
	size = EXT2_I_SIZE(&inode);
	if (LINUX_S_ISDIR(inode.i_mode))
		printf("linked directory tree %s to %s (inode %u)\n",
		       esc(src), esc(dst), nino);
	else
		printf("linked %llu/%llu bytes at offset 0\n", size, size);
	ret = 0;
out:
	free(name);
	return ret;
}

/*
 * SRC SOFF DST DOFF LEN.  The files' types and the ranges are the
 * library's to judge (range_rules.c), in the kernel's order.
 */
static int range_args(struct cmd_args *a, ext2_ino_t *src, __u64 *soff,
		      ext2_ino_t *dst, __u64 *doff, __u64 *len)
{
	if (resolve_path(a, a->argv[0], src) ||
	    parse_num_arg(a, a->argv[1], "source offset", soff) ||
	    resolve_path(a, a->argv[2], dst) ||
	    parse_num_arg(a, a->argv[3], "destination offset", doff) ||
	    parse_num_arg(a, a->argv[4], "length", len))
		return 1;
	return 0;
}

int impl_clone_range(struct cmd_args *a)
{
	ext2_ino_t src, dst;
	__u64 soff, doff, len, done = 0;
	errcode_t err;

	if (range_args(a, &src, &soff, &dst, &doff, &len))
		return 1;
	err = extref_clone_range(sh.xfs, src, soff, dst, doff, len, &done);
	if (err) {
		char what[512];

		snprintf(what, sizeof(what), "%s -> %s", a->argv[0],
			 a->argv[2]);
		return op_err(a, err, what);
	}
	/* Length 0 means "to the source's EOF": report what that was. */
	printf("linked %llu/%llu bytes at offset %llu\n",
	       (unsigned long long)done,
	       (unsigned long long)(len ? len : done),
	       (unsigned long long)doff);
	return 0;
}

int impl_dedupe(struct cmd_args *a)
{
	ext2_ino_t src, dst;
	__u64 soff, doff, len, done = 0;
	int differs = 0;
	errcode_t err;

	if (range_args(a, &src, &soff, &dst, &doff, &len))
		return 1;
	err = extref_dedupe_range(sh.xfs, src, soff, dst, doff, len, &done,
				  &differs);
	if (err)
		return cmd_err_class(a, err, "%s -> %s", a->argv[0],
				     a->argv[2]);
	if (differs) {
		/* FILE_DEDUPE_RANGE_DIFFERS: a result, not a failure. */
		printf("%s: contents differ\n", a->name);
		return 0;
	}
	printf("deduped %llu/%llu bytes at offset %llu\n",
	       (unsigned long long)done, (unsigned long long)len,
	       (unsigned long long)doff);
	return 0;
}

/* ----- pwrite [-S BYTE] [-i HOSTFILE] PATH OFF LEN ----- */

int impl_pwrite(struct cmd_args *a)
{
	const char *infile = a->optarg['i'];
	__u64 pattern = 0xcd, off, len, done = 0;
	ext2_ino_t ino;
	int fd = -1, ret;

	if (a->opts['S'] && (parse_u64(a->optarg['S'], &pattern) ||
			     pattern > 0xff))
		return cmd_fail(a, "bad pattern byte: %s", a->optarg['S']);
	if (file_arg(a, a->argv[0], &ino) ||
	    parse_num_arg(a, a->argv[1], "offset", &off) ||
	    parse_num_arg(a, a->argv[2], "length", &len))
		return 1;
	if (infile) {
		fd = open(infile, O_RDONLY);
		if (fd < 0)
			return cmd_fail(a, "%s: %s", infile, strerror(errno));
	}
	ret = copy_in(a, ino, a->argv[0], off, len, fd, (int)pattern,
		      infile ? infile : "", &done);
	if (fd >= 0)
		close(fd);
	if (!ret)
		printf("wrote %llu/%llu bytes at offset %llu\n",
		       (unsigned long long)done, (unsigned long long)len,
		       (unsigned long long)off);
	return ret;
}

/* ----- truncate, punch, unshare ----- */

int impl_truncate(struct cmd_args *a)
{
	ext2_ino_t ino;
	__u64 size;
	errcode_t err;

	if (file_arg(a, a->argv[0], &ino) ||
	    parse_num_arg(a, a->argv[1], "size", &size))
		return 1;
	err = extref_truncate(sh.xfs, ino, size);
	if (err)
		return cmd_err_class(a, err, "%s", a->argv[0]);
	return 0;
}

int impl_punch(struct cmd_args *a)
{
	ext2_ino_t ino;
	__u64 off, len;
	errcode_t err;

	if (file_arg(a, a->argv[0], &ino) ||
	    parse_num_arg(a, a->argv[1], "offset", &off) ||
	    parse_num_arg(a, a->argv[2], "length", &len))
		return 1;
	err = extref_punch(sh.xfs, ino, off, len);
	if (err)
		return op_err(a, err, a->argv[0]);
	return 0;
}

int impl_unshare(struct cmd_args *a)
{
	ext2_ino_t ino;
	__u64 off = 0, len = 0;
	errcode_t err;

	if (a->argc == 2)
		return cmd_usage(a);
	if (file_arg(a, a->argv[0], &ino))
		return 1;
	if (a->argc == 3 &&
	    (parse_num_arg(a, a->argv[1], "offset", &off) ||
	     parse_num_arg(a, a->argv[2], "length", &len)))
		return 1;
	/* No range: the whole file (nothing to do when it is empty). */
	if (a->argc == 1 && file_size(a, ino, &len))
		return 1;
	if (a->argc == 1 && len == 0)
		return 0;
	err = extref_unshare(sh.xfs, ino, off, len);
	if (err)
		return cmd_err_class(a, err, "%s", a->argv[0]);
	return 0;
}

/* ----- chmod, chown ----- */

int impl_chmod(struct cmd_args *a)
{
	unsigned long mode;
	ext2_ino_t ino;
	errcode_t err;
	char *end;

	errno = 0;
	mode = strtoul(a->argv[0], &end, 8);
	if (errno || end == a->argv[0] || *end || mode > 07777)
		return cmd_fail(a, "bad mode (octal, at most 7777): %s",
				a->argv[0]);
	if (resolve_path(a, a->argv[1], &ino))
		return 1;
	err = extref_chmod(sh.xfs, ino, mode);
	if (err)
		return cmd_err(a, err, "%s", a->argv[1]);
	return 0;
}

int impl_chown(struct cmd_args *a)
{
	char *spec = strdup(a->argv[0]), *colon;
	__u64 uid = EXTREF_ID_UNCHANGED, gid = EXTREF_ID_UNCHANGED;
	int has_uid, has_gid = 0;
	ext2_ino_t ino;
	errcode_t err;

	if (!spec)
		return cmd_fail(a, "out of memory");
	colon = strchr(spec, ':');
	if (colon) {
		*colon = 0;
		has_gid = 1;
		if (parse_u64(colon + 1, &gid) || gid >= 0xffffffffULL) {
			free(spec);
			return cmd_fail(a, "bad group id: %s", a->argv[0]);
		}
	}
	has_uid = *spec != 0;
	if ((has_uid && (parse_u64(spec, &uid) || uid >= 0xffffffffULL)) ||
	    (!has_uid && !has_gid)) {
		free(spec);
		return cmd_fail(a, "bad user id: %s", a->argv[0]);
	}
	free(spec);
	if (resolve_path(a, a->argv[1], &ino))
		return 1;
	err = extref_chown(sh.xfs, ino, uid, gid);
	if (err)
		return cmd_err(a, err, "%s", a->argv[1]);
	return 0;
}
