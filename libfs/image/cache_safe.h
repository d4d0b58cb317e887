/*
 * cache_safe.h --- the image channel's block cache, kept true
 * (cache_safe.c).
 */
#ifndef EXTREF_CACHE_SAFE_H
#define EXTREF_CACHE_SAFE_H

#include "txn/xr_handle.h"

/* xfs->iom (a copy of the unix io manager, xfs->orig_iom): its writes
 * that go past the cache drop the cache after them.  Other managers are
 * left as they are. */
void xr_cache_safe(struct extref_fs *xfs);

#endif
