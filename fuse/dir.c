/*
 * dir.c --- names: readdir, mkdir, symlink, readlink, unlink, rmdir,
 * rename, link and mknod.
 */
#include <errno.h>
#include <string.h>
#include "xfuse.h"

/* The file type of a directory entry as st_mode's type bits. */
static mode_t type_of(int ft)
{
	static const mode_t types[] = {
		[EXT2_FT_REG_FILE] = S_IFREG, [EXT2_FT_DIR] = S_IFDIR,
		[EXT2_FT_CHRDEV] = S_IFCHR, [EXT2_FT_BLKDEV] = S_IFBLK,
		[EXT2_FT_FIFO] = S_IFIFO, [EXT2_FT_SOCK] = S_IFSOCK,
		[EXT2_FT_SYMLINK] = S_IFLNK,
	};

	return ft > 0 && ft < (int)(sizeof(types) / sizeof(types[0])) ?
		types[ft] : 0;
}

/* The whole directory in one call (offset 0 to every filler call). */
int xf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
	       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct extref_dirlist list;
	struct stat st;
	ext2_ino_t ino;
	size_t i;
	int res;

	(void)off, (void)fi, (void)flags;
	res = xf_ino(path, &ino);
	if (!res)
		res = xf_err(extref_access(xf.xfs, ino, EXTREF_MAY_READ));
	if (res)
		return res;
	memset(&list, 0, sizeof(list));
	res = xf_err(extref_dir_list(xf.xfs, ino, 0, &list));
	if (res)
		return res;
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR;
	st.st_ino = ino;
	fill(buf, ".", &st, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (i = 0; i < list.n; i++) {
		st.st_ino = list.v[i].ino;
		st.st_mode = type_of(list.v[i].file_type);
		if (fill(buf, list.v[i].name, &st, 0, 0))
			break;
	}
	extref_dir_list_free(&list);
	return 0;
}

/* A directory as mknod makes one (mknod.c): the identity's owner, a
 * setgid parent's group and setgid bit (inode_init_owner), the mode
 * less the umask unless the parent's default ACL decides (the library;
 * FUSE passes the umask applied). */
int xf_mkdir(const char *path, mode_t mode)
{
	struct extref_cred c;
	const char *name;
	ext2_ino_t dir;
	int res = xf_parent(path, &dir, &name);

	if (res)
		return res;
	c = *extref_identity(xf.xfs);
	c.umask = 0;
	return xf_err(extref_mknod(xf.xfs, dir, name, LINUX_S_IFDIR |
				   (mode & 07777), 0, &c, NULL));
}

int xf_symlink(const char *target, const char *path)
{
	const char *name;
	ext2_ino_t dir;
	int res = xf_parent(path, &dir, &name);

	return res ? res : xf_err(extref_symlink(xf.xfs, dir, name, target,
						 NULL));
}

/* A fast symlink's target is in i_block; any other is read as data. */
int xf_readlink(const char *path, char *buf, size_t size)
{
	struct ext2_inode_large in;
	ext2_ino_t ino;
	__u64 len, got = 0;
	int res;

	if (size == 0)
		return -EINVAL;
	res = xf_ino(path, &ino);
	if (!res)
		res = xf_read_inode(ino, &in);
	if (res)
		return res;
	if (!LINUX_S_ISLNK(in.i_mode))
		return -EINVAL;
	len = EXT2_I_SIZE(&in);
	if (len > size - 1)
		len = size - 1;
	if (ext2fs_is_fast_symlink((struct ext2_inode *)&in)) {
		got = len < sizeof(in.i_block) ? len : sizeof(in.i_block);
		memcpy(buf, in.i_block, got);
	} else {
		res = xf_err(extref_pread(xf.xfs, ino, 0, buf, len, &got));
	}
	buf[got] = 0;
	return res;
}

/*
 * The name goes.  An inode still open whose last name this was is kept
 * on the orphan list until its last release (handle.c); one not open (or
 * a directory) is freed at once, and a handle it had goes stale.
 */
static void after_drop(ext2_ino_t ino, int keep)
{
	struct ext2_inode_large in;

	if (!ino || (!xf_read_inode(ino, &in) && in.i_links_count &&
		     !in.i_dtime))
		return;		/* still named */
	if (keep && !xf_read_inode(ino, &in) && !in.i_links_count)
		xf_handle_orphaned(ino);
	else
		xf_handle_gone(ino);
}

static int remove_name(const char *path, int flags)
{
	const char *name;
	ext2_ino_t dir, ino;
	int keep = 0, res = xf_parent(path, &dir, &name);

	if (!res)
		res = xf_ino(path, &ino);
	if (!res && !(flags & EXTREF_UNLINK_DIR) && xf_handle_is_open(ino))
		keep = EXTREF_UNLINK_KEEP;
	if (!res)
		res = xf_err(extref_unlink(xf.xfs, dir, name, flags | keep));
	xf_pathcache_forget();	/* the name, and every path below it */
	if (!res)
		after_drop(ino, keep);
	return res;
}

int xf_unlink(const char *path)
{
	return remove_name(path, 0);
}

int xf_rmdir(const char *path)
{
	return remove_name(path, EXTREF_UNLINK_DIR);
}

/* renameat2's RENAME_NOREPLACE and RENAME_EXCHANGE (1 and 2, as the
 * library's); any other flag is the library's to refuse, but its own
 * EXTREF_RENAME_KEEP (RENAME_WHITEOUT's bit) is refused here. */
int xf_rename(const char *from, const char *to, unsigned int flags)
{
	const char *oname, *nname;
	ext2_ino_t odir, ndir, gone = 0;
	int keep = 0, res = xf_parent(from, &odir, &oname);

	if (flags & EXTREF_RENAME_KEEP)
		return -EINVAL;
	if (!res)
		res = xf_parent(to, &ndir, &nname);
	if (res)
		return res;
	if (!(flags & EXTREF_RENAME_EXCHANGE) && xf_ino(to, &gone))
		gone = 0;
	if (xf_handle_is_open(gone))
		keep = EXTREF_RENAME_KEEP;
	res = xf_err(extref_rename(xf.xfs, odir, oname, ndir, nname,
				   (int)flags | keep));
	xf_pathcache_forget();	/* both names, and every path below */
	if (!res)
		after_drop(gone, keep);
	return res;
}

int xf_link(const char *from, const char *to)
{
	const char *name;
	ext2_ino_t ino, dir;
	int res = xf_ino(from, &ino);

	if (!res)
		res = xf_parent(to, &dir, &name);
	if (!res)
		res = xf_err(extref_link(xf.xfs, ino, dir, name));
	/* the kernel holds each name as an inode of its own (libfuse's
	 * high-level API): the old name's ctime and link count are new */
	if (!res)
		xf_inval(from);
	return res;
}

/* Devices, FIFOs, sockets (and regular files): the identity's owner, its
 * umask applied by the library where no default ACL decides (create). */
int xf_mknod(const char *path, mode_t mode, dev_t rdev)
{
	struct extref_cred c;
	const char *name;
	ext2_ino_t dir;
	int res = xf_parent(path, &dir, &name);

	if (res)
		return res;
	c = *extref_identity(xf.xfs);
	c.umask = 0;
	return xf_err(extref_mknod(xf.xfs, dir, name, mode, (__u64)rdev, &c,
				   NULL));
}
