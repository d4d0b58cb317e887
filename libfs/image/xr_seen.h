/*
 * xr_seen.h --- foreign writers seen by the session (seen.c).
 */
#ifndef XR_SEEN_H
#define XR_SEEN_H

#include "txn/xr_handle.h"

/* At the open (once; cached): the superblock changed since our last
 * close, another tool wrote (the stamp is not trusted). */
int xr_seen_open(extref_fs_t xfs);
/* At a read-write close, before the tree closes: the record it leaves
 * (proven: xr_fs_proven before the journal was detached). */
errcode_t xr_seen_close(extref_fs_t xfs, int proven);

#endif /* XR_SEEN_H */
