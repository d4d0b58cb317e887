/*
 * handle.c --- open files.  A handle names its inode.  When the last
 * name of an open file goes (unlink, rename over it), the library keeps
 * the inode on ext4's orphan list (EXTREF_UNLINK_KEEP, dir.c) and its
 * handles keep reading and writing it; the last release frees it
 * (extref_orphan_release), and unmount frees any left.  A directory's
 * last name frees it at once: a handle to it (none here today) would go
 * stale and answer ESTALE.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "xfuse.h"

struct xf_handle {
	ext2_ino_t		ino;
	int			stale;
	int			orphan;	/* kept without a name */
	struct xf_handle	*next;
};

/* Every open handle (one thread: no lock). */
static struct xf_handle *handles;

int xf_handle_new(ext2_ino_t ino, struct fuse_file_info *fi)
{
	struct xf_handle *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->ino = ino;
	h->next = handles;
	handles = h;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

/* The open handle of ino, or NULL. */
static struct xf_handle *find(ext2_ino_t ino)
{
	struct xf_handle *h;

	for (h = handles; h; h = h->next)
		if (h->ino == ino)
			return h;
	return NULL;
}

int xf_handle_is_open(ext2_ino_t ino)
{
	return ino && find(ino) != NULL;
}

/* ino lost its last name and is kept on the orphan list. */
void xf_handle_orphaned(ext2_ino_t ino)
{
	struct xf_handle *h;

	for (h = handles; h; h = h->next)
		if (h->ino == ino)
			h->orphan = 1;
}

int xf_release(const char *path, struct fuse_file_info *fi)
{
	struct xf_handle **p, *h = (struct xf_handle *)(uintptr_t)fi->fh;
	ext2_ino_t ino = 0;
	int orphan = 0, res = 0;

	(void)path;
	for (p = &handles; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			ino = h->ino;
			orphan = h->orphan && !h->stale;
			free(h);
			break;
		}
	fi->fh = 0;
	/* the last close of a file kept without a name frees it */
	if (orphan && !find(ino))
		res = xf_err(extref_orphan_release(xf.xfs, ino));
	return res;
}

/* The inode of a handle, or -ESTALE. */
int xf_handle_ino(struct fuse_file_info *fi, ext2_ino_t *ino)
{
	const struct xf_handle *h = (struct xf_handle *)(uintptr_t)fi->fh;

	*ino = h->ino;
	return h->stale ? -ESTALE : 0;
}

/* ino was freed: its handles go stale. */
void xf_handle_gone(ext2_ino_t ino)
{
	struct xf_handle *h;

	for (h = handles; h; h = h->next)
		if (h->ino == ino)
			h->stale = 1;
}
