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
 * Kept apart from extref_int.h so that debugfs.extref, which shows raw
 * blocks, decodes them with the same functions.
 */
#ifndef XR_HDR_H
#define XR_HDR_H

#include "extref_format.h"

/* The header block (lblk 0), decoded. */
struct xr_hdr {
	__u32	h_magic;
	__u16	h_version;
	__u16	h_depth;
	__u32	h_compat;
	__u32	h_ro_compat;
	__u32	h_incompat;
	__u32	h_blocksize;
	__u8	h_uuid[16];
	__u32	h_root;
	__u32	h_nblocks;
	__u64	h_nrecords;
	__u32	h_free_head;
	__u32	h_free_count;
	__u64	h_generation;
	__u32	h_checksum;
};

/* The header of a tree or free node, decoded. */
struct xr_node_hdr {
	__u32	n_magic;
	__u16	n_level;
	__u16	n_nr;
	__u32	n_blkno;
	__u32	n_next;
	__u64	n_generation;
	__u32	n_checksum;
};

/* hdr.c */
void xr_hdr_from_disk(struct xr_hdr *to, const struct extref_disk_header *from);
void xr_hdr_to_disk(struct extref_disk_header *to, const struct xr_hdr *from);
void xr_node_hdr_from_disk(struct xr_node_hdr *to,
			   const struct extref_disk_node *from);
void xr_node_hdr_to_disk(struct extref_disk_node *to,
			 const struct xr_node_hdr *from);

#endif /* XR_HDR_H */
