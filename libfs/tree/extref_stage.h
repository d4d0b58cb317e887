/*
 * extref_stage.h --- bulk loading a new tree (the tree layer's interface
 * for repair), after xfs's btree staging (libxfs/xfs_btree_staging.c).
 *
 * fsck.extref does not repair a damaged tree in place: it rebuilds it
 * from the counts it expects.  The records are handed over in order and
 * the tree is built bottom-up, as xfs repair's bulk loader does:
 *
 *	xr_stage_begin(fs, &st);		an empty tree in inode 5
 *	xr_stage_add(st, &rec);			each record, in order
 *	xr_stage_commit(st);			the header: the new tree is in
 *	  or xr_stage_abort(st);		the header never names it
 *
 * Leaves are filled in order (to the tree's fanout); each full node is
 * encoded, checksummed and written once, to a new block of inode 5, and
 * its key goes to the level above, which is filled the same way.  No
 * node is read back or rewritten.  Until the commit the header names
 * the empty tree that xr_stage_begin wrote; xr_stage_commit writes the
 * last node of each level (the top one is the root) and then the header
 * between two flushes (FORMAT.md's write order), so a crash leaves the
 * empty tree or the whole new one.
 *
 * xr_stage_begin formats inode 5 (extref_format): the caller first gives
 * back the old tree's blocks and empties the inode.
 */
#ifndef EXTREF_STAGE_H
#define EXTREF_STAGE_H

#include "extref.h"

typedef struct xr_stage *xr_stage_t;

errcode_t xr_stage_begin(ext2_filsys fs, xr_stage_t *ret);
/*
 * A valid record (xr_check_rec) after every one added so far
 * (EXTREF_ERR_NODE_ORDER if not), not one that could be merged with the
 * one before (EXTREF_ERR_REC_UNMERGED): the node verifier's rules.
 */
errcode_t xr_stage_add(xr_stage_t st, const struct extref_rec *r);
/* Both end the staging and free st, whatever they return. */
errcode_t xr_stage_commit(xr_stage_t st);
void xr_stage_abort(xr_stage_t st);

#endif /* EXTREF_STAGE_H */
