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
/* The session wrote times it did not stamp (a build's, copied): its
 * close looks at every file's before it says EXTREF_SEEN_NSEC. */
void xr_seen_copied(extref_fs_t xfs);
/* extref_fs_accept of a foreign write by a tool the caller ran at the
 * session's clock (E2FSPROGS_FAKE_TIME: resize2fs for --grow): the
 * record takes SOURCE_DATE_EPOCH as after writes of ours. */
void xr_seen_accept_run(extref_fs_t xfs);

/* seen_whole.c: an in-use regular file's ctime is the whole second sec
 * (or an inode could not be read). */
int xr_seen_whole(ext2_filsys fs, __u64 sec);

#endif /* XR_SEEN_H */
