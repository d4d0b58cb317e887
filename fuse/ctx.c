/*
 * ctx.c --- what every request needs first: the identity of the process
 * that asked (the library then checks what the kernel would check for
 * it), its path resolved to an inode, and the errno of a library error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "xfuse.h"

/*
 * Act as the process behind the request, with its umask: the kernel
 * leaves it to the server (FUSE_CAP_DONT_MASK, main.c), which applies
 * it only where no default ACL decides (create.c's xr_new_owner).  Root has every capability; other users none, and their supplementary
 * groups as /proc says (fuse_getgroups).
 */
void xf_identity(void)
{
	xf_identity_caps(0);
}

/* The same with capabilities added (EXTREF_CAP_*). */
void xf_identity_caps(__u32 caps)
{
	const struct fuse_context *ctx = fuse_get_context();
	struct extref_cred c;
	gid_t groups[EXTREF_NGROUPS_MAX];
	int i, n = 0;

	memset(&c, 0, sizeof(c));
	c.uid = ctx->uid;
	c.gid = ctx->gid;
	c.umask = ctx->umask;
	if (ctx->uid == 0) {
		c.caps = EXTREF_CAP_ALL;
	} else {
		n = fuse_getgroups(EXTREF_NGROUPS_MAX, groups);
		if (n < 0 || n > EXTREF_NGROUPS_MAX)
			n = 0;
	}
	for (i = 0; i < n; i++)
		c.groups[i] = groups[i];
	c.ngroups = n;
	c.caps |= caps;
	extref_set_identity(xf.xfs, &c);
}

/* The negative errno FUSE wants for a library error (0 for none). */
int xf_err(errcode_t err)
{
	/* a step rolled back, a batch dropped: names may have gone */
	if (err && err != EXT2_ET_FILE_NOT_FOUND)
		xf_pathcache_forget();
	return err ? -extref_errno(err) : 0;
}

/* ENAMETOOLONG when a name of path is longer than ext4 keeps (the
 * library would call it damage, EIO). */
static int names_fit(const char *path)
{
	size_t n;

	for (; *path; path += n) {
		path += strspn(path, "/");
		n = strcspn(path, "/");
		if (n > EXT2_NAME_LEN)
			return -ENAMETOOLONG;
	}
	return 0;
}

/* The inode at path (FUSE's paths are absolute, resolved by the kernel:
 * a symlink at the end is not followed). */
int xf_ino(const char *path, ext2_ino_t *ino)
{
	int res = names_fit(path);
	int root = fuse_get_context()->uid == 0;

	xf_identity();
	if (res || (root && xf_pathcache_get(path, ino)))
		return res;
	res = xf_err(extref_namei(xf.xfs, EXT2_ROOT_INO, EXT2_ROOT_INO, path,
				  0, ino));
	if (!res && root)
		xf_pathcache_put(path, *ino);
	return res;
}

/* The directory holding path and the last name of path (pointing into
 * path: FUSE never passes a path ending in '/'). */
int xf_parent(const char *path, ext2_ino_t *dir, const char **name)
{
	const char *slash = strrchr(path, '/');
	char *d;
	int res;

	if (!slash || !slash[1])
		return -EINVAL;
	*name = slash + 1;
	if (strlen(*name) > EXT2_NAME_LEN)
		return -ENAMETOOLONG;
	if (slash == path)
		d = strdup("/");
	else
		d = strndup(path, slash - path);
	if (!d)
		return -ENOMEM;
	res = xf_ino(d, dir);
	free(d);
	return res;
}

int xf_read_inode(ext2_ino_t ino, struct ext2_inode_large *in)
{
	memset(in, 0, sizeof(*in));
	return xf_err(ext2fs_read_inode_full(xf.fs, ino,
					     (struct ext2_inode *)in,
					     sizeof(*in)));
}

/*
 * The inode of an open file (its handle), else the one at path.  On a
 * handle, read and write permission were checked at the open, as the
 * kernel checks them once (a file created 0444 is written through the
 * descriptor that created it): the caller acts with
 * EXTREF_CAP_DAC_OVERRIDE; append-only, quota and the removal of setuid
 * on a write are still checked.
 */
ext2_ino_t xf_fh_ino(const char *path, struct fuse_file_info *fi, int *res)
{
	ext2_ino_t ino = 0;

	*res = 0;
	if (fi && fi->fh) {
		xf_identity_caps(EXTREF_CAP_DAC_OVERRIDE);
		*res = xf_handle_ino(fi, &ino);
		return ino;
	}
	*res = xf_ino(path, &ino);
	return ino;
}
