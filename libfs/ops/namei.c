/*
 * namei.c --- path walk with the kernel's search permission.
 *
 * As link_path_walk: every directory a name is looked up in needs
 * execute (search) permission for the identity (perm.c; none without
 * one); a symlink inside the path is followed from the directory that
 * holds it (from root when absolute), the last component only with
 * EXTREF_NAMEI_FOLLOW; at most NAMEI_MAX_LINKS links per walk (the
 * kernel's MAXSYMLINKS).  ".." of root is root.
 */
#include <string.h>
#include "extref_ops_int.h"

#define NAMEI_MAX_LINKS	40

struct walk {
	ext2_filsys			fs;
	const struct extref_cred	*c;
	ext2_ino_t			root;
	int				links;
};

/* A symlink's target, NUL-terminated, in a buffer of blocksize + 1. */
static errcode_t link_target(ext2_filsys fs, ext2_ino_t ino,
			     struct ext2_inode *inode, char **buf)
{
	__u64 size = EXT2_I_SIZE(inode);
	size_t isz = size;
	unsigned got = 0;
	ext2_file_t f;
	errcode_t err;

	if (size >= fs->blocksize)
		return EXT2_ET_FILE_TOO_BIG;
	err = ext2fs_get_memzero(fs->blocksize + 1, buf);
	if (err)
		return err;
	if (ext2fs_is_fast_symlink(inode)) {
		memcpy(*buf, inode->i_block, size);
		return 0;
	}
	if (inode->i_flags & EXT4_INLINE_DATA_FL)
		return ext2fs_inline_data_get(fs, ino, inode, *buf, &isz);
	err = ext2fs_file_open2(fs, ino, inode, 0, &f);
	if (err)
		return err;
	err = ext2fs_file_read(f, *buf, size, &got);
	ext2fs_file_close(f);
	return err;
}

static errcode_t walk(struct walk *w, ext2_ino_t dir, const char *path,
		      int follow, ext2_ino_t *ret);

/* NAME looked up in directory cur (searchable), symlinks resolved. */
static errcode_t step(struct walk *w, ext2_ino_t cur, const char *name,
		      int follow, ext2_ino_t *next)
{
	struct ext2_inode inode;
	char *target = NULL;
	errcode_t err = xr_read_inode(w->fs, cur, &inode);

	if (err)
		return err;
	if (!LINUX_S_ISDIR(inode.i_mode))
		return EXTREF_ERR_NOT_DIR;
	err = xr_permission(w->fs, w->c, cur, &inode, XR_MAY_EXEC);
	if (err)
		return err;
	if (!strcmp(name, ".") || (cur == w->root && !strcmp(name, ".."))) {
		*next = cur;
		return 0;
	}
	/* "." and ".." are in no hash index: read from the first block */
	if (!strcmp(name, ".."))
		err = ext2fs_lookup(w->fs, cur, name, 2, NULL, next);
	else
		err = xr_lookup(w->fs, cur, name, next);
	if (!err)
		err = xr_read_inode(w->fs, *next, &inode);
	if (err || !follow || !LINUX_S_ISLNK(inode.i_mode))
		return err;
	if (++w->links > NAMEI_MAX_LINKS)
		return EXT2_ET_SYMLINK_LOOP;
	err = link_target(w->fs, *next, &inode, &target);
	if (!err)
		err = walk(w, cur, target, 1, next);
	ext2fs_free_mem(&target);
	return err;
}

static errcode_t walk(struct walk *w, ext2_ino_t dir, const char *path,
		      int follow, ext2_ino_t *ret)
{
	char name[EXT2_NAME_LEN + 1];
	ext2_ino_t cur = *path == '/' ? w->root : dir;
	const char *p = path;
	size_t len;
	errcode_t err;

	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (len > EXT2_NAME_LEN)
			return EXT2_ET_INVALID_ARGUMENT;
		memcpy(name, p, len);
		name[len] = 0;
		p += len;
		while (*p == '/')
			p++;
		err = step(w, cur, name, *p || follow, &cur);
		if (err)
			return err;
	}
	*ret = cur;
	return 0;
}

errcode_t extref_namei(extref_fs_t xfs, ext2_ino_t root, ext2_ino_t cwd,
		       const char *path, int flags, ext2_ino_t *ino)
{
	struct walk w = { extref_fs_ext2(xfs), xr_actor(xfs), root, 0 };

	return walk(&w, cwd, path, flags & EXTREF_NAMEI_FOLLOW, ino);
}
