/*
 * handle.c --- open files.  A handle names its inode; when the inode's
 * last link goes while it is open the handle goes stale: the library
 * frees the inode at once (it cannot yet keep an unlinked inode until
 * the last close, as ext4's orphan list does), and its number may be
 * given to the next new file, which a late write must not reach.  A
 * stale handle answers ESTALE.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "xfuse.h"

struct xf_handle {
	ext2_ino_t		ino;
	int			stale;
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

int xf_release(const char *path, struct fuse_file_info *fi)
{
	struct xf_handle **p, *h = (struct xf_handle *)(uintptr_t)fi->fh;

	(void)path;
	for (p = &handles; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			free(h);
			break;
		}
	fi->fh = 0;
	return 0;
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
