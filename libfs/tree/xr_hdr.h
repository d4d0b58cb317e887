/*
 * xr_hdr.h --- the tree header and the node header in CPU byte order.
 *
 * One decoder and one encoder per on-disk header (as xfs_sb_from_disk /
 * xfs_sb_to_disk): every reader of a header field decodes the block's
 * header into one of these structures first, every writer fills one in
 * and encodes it.  Nothing else converts header fields between byte
 * orders.  The fields mirror extref_disk_header and extref_disk_node in
 * extref_format.h one for one, with the same widths, so a decode then an
 * encode gives back the same bytes (reserved fields excepted: the
 * encoders write them zero).
 *
 * The decoders are public (extref.h) so that debugfs.extref, which shows
 * raw blocks, decodes them with the same functions; the encoders stay
 * here.
 */
#ifndef XR_HDR_H
#define XR_HDR_H

#include "extref_format.h"

/* The decoded forms (struct extref_tree_hdr, struct extref_node_hdr) and
 * their decoders are public: extref.h. */
#include "extref.h"

/* hdr.c */
void xr_hdr_to_disk(struct extref_disk_header *to, const struct extref_tree_hdr *from);
void xr_node_hdr_to_disk(struct extref_disk_node *to,
			 const struct extref_node_hdr *from);

#endif /* XR_HDR_H */
