/*
 * populate_layers.h --- the archive reader's state (populate_archive.c),
 * shared with the layers' rules (populate_layers.c): a later layer finds
 * what the layers below left in the image, replaces it, and (an OCI
 * layer) deletes it with whiteouts.
 */
#ifndef EXTREF_POPULATE_LAYERS_H
#define EXTREF_POPULATE_LAYERS_H

#include <limits.h>
#include "populate_int.h"

struct rd {
	struct xr_pop		*p;
	struct archive		*a;
	struct xr_pop_table	paths;		/* this layer's path -> inode
						   (0: removed since) */
	struct xr_pop_table	lower;		/* directories of the layers
						   below met (a cache, emptied
						   at each removal) */
	unsigned int		layer;		/* 0: the first (or only) */
	int			oci;		/* whiteouts apply */
	int			ended;		/* the tar's trailer missing
						   (trailer_missing) */
	struct xr_pop_xattrs	xa;
	void			*acl[2];
	char			path[PATH_MAX];
	char			target[PATH_MAX];
	char			name[NAME_MAX + 1];
};

/*
 * path (len bytes, normalised; "" the root) in the image as it is now:
 * *ino (0: absent, or under something that is not a directory) and
 * *is_dir.  Symbolic links are not followed.
 */
errcode_t xr_layer_find(struct rd *r, const char *path, size_t len,
			ext2_ino_t *ino, int *is_dir);
/*
 * r->path, about to be written by a later layer (r->layer > 0) and not
 * yet by this one: what a layer below put there goes (a directory with
 * everything below it), unless it is a directory and keep_dir is set:
 * then *ino is that directory (else 0).
 */
errcode_t xr_layer_replace(struct rd *r, int keep_dir, ext2_ino_t *ino);
/* Is the last component of path an OCI whiteout (".wh." prefix)? */
int xr_layer_is_whiteout(const char *path);
/*
 * r->path is a whiteout: ".wh.NAME" removes NAME as the layers below left
 * it, ".wh..wh..opq" empties its directory of what the layers below put
 * there; other ".wh..wh." names (aufs's own) are dropped.  A whiteout
 * never touches what its own layer wrote, nor is it itself written.
 */
errcode_t xr_layer_whiteout(struct rd *r);

#endif /* EXTREF_POPULATE_LAYERS_H */
