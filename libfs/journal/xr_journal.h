/* TEMPORARY stand-in until h-journal is merged (interface of task-journal.md) */
#ifndef XR_JOURNAL_H
#define XR_JOURNAL_H
#include "extref.h"
struct xr_journal;
struct xr_jblock { blk64_t blk; const void *data; };
errcode_t xr_journal_open(ext2_filsys fs, io_channel io, struct xr_journal **ret);
void      xr_journal_close(struct xr_journal *j);
blk64_t   xr_journal_capacity(struct xr_journal *j, size_t nrevoke);
blk64_t   xr_journal_room(struct xr_journal *j, size_t nrevoke);
int       xr_journal_dirty(struct xr_journal *j);
errcode_t xr_journal_commit(struct xr_journal *j, const struct xr_jblock *b, size_t n,
                            const blk64_t *revoke, size_t nrevoke);
errcode_t xr_journal_checkpoint_done(struct xr_journal *j);
errcode_t xr_journal_recover(ext2_filsys fs, io_channel io, unsigned *ntrans);
#endif
