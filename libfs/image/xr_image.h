/*
 * xr_image.h --- the session's calls for the layer above it (the
 * builder), not exported.
 *
 * A walk that takes the image's write lock itself (extref_image_lock)
 * before its first check, and holds it through every step, opens the
 * image with these: the lock is the caller's, the extref_fs neither
 * takes it again (flock would refuse the second one) nor drops it at
 * its close.
 */
#ifndef EXTREF_XR_IMAGE_H
#define EXTREF_XR_IMAGE_H

#include "extref.h"

/* extref_fs_open, read-write, under the caller's write lock. */
errcode_t xr_fs_open_held(const char *name, int flags, extref_fs_t *ret,
			  errcode_t *tree_err);
/* extref_fs_wrap, under the caller's write lock. */
errcode_t xr_fs_wrap_held(ext2_filsys fs, int flags, extref_fs_t *ret,
			  errcode_t *tree_err);
/* The lock's descriptor, for a child to inherit (imglock.c): the lock
 * then lasts until the child ends too, should the caller die first. */
int xr_image_lock_fd(extref_image_lock_t l);

#endif /* EXTREF_XR_IMAGE_H */
