/*
 * hdr.c --- the one decoder and the one encoder of the tree header and of
 * the node header (xr_hdr.h).
 *
 * Decoders fill a separate CPU-order structure from the little-endian
 * one; encoders write every field of the little-endian one, reserved
 * fields zero.  Nothing is byte-swapped in place.
 */
#include <string.h>
#include "extref_int.h"

void extref_tree_hdr_decode(struct extref_tree_hdr *to, const struct extref_disk_header *from)
{
	memset(to, 0, sizeof(*to));
	to->h_magic = ext2fs_le32_to_cpu(from->h_magic);
	to->h_version = ext2fs_le16_to_cpu(from->h_version);
	to->h_depth = ext2fs_le16_to_cpu(from->h_depth);
	to->h_compat = ext2fs_le32_to_cpu(from->h_compat);
	to->h_ro_compat = ext2fs_le32_to_cpu(from->h_ro_compat);
	to->h_incompat = ext2fs_le32_to_cpu(from->h_incompat);
	to->h_blocksize = ext2fs_le32_to_cpu(from->h_blocksize);
	memcpy(to->h_uuid, from->h_uuid, sizeof(to->h_uuid));
	to->h_root = ext2fs_le32_to_cpu(from->h_root);
	to->h_nblocks = ext2fs_le32_to_cpu(from->h_nblocks);
	to->h_nrecords = ext2fs_le64_to_cpu(from->h_nrecords);
	to->h_free_head = ext2fs_le32_to_cpu(from->h_free_head);
	to->h_free_count = ext2fs_le32_to_cpu(from->h_free_count);
	to->h_generation = ext2fs_le64_to_cpu(from->h_generation);
	to->h_stamp = ext2fs_le32_to_cpu(from->h_stamp);
	to->h_checksum = ext2fs_le32_to_cpu(from->h_checksum);
	to->h_seen_flags = ext2fs_le32_to_cpu(from->h_seen_flags);
	to->h_seen_csum = ext2fs_le32_to_cpu(from->h_seen_csum);
	to->h_seen_nsec = ext2fs_le32_to_cpu(from->h_seen_nsec);
	to->h_seen_time = ext2fs_le64_to_cpu(from->h_seen_time);
	to->h_seen_mtime = ext2fs_le64_to_cpu(from->h_seen_mtime);
	to->h_seen_mnt_count = ext2fs_le16_to_cpu(from->h_seen_mnt_count);
}

void xr_hdr_to_disk(struct extref_disk_header *to, const struct extref_tree_hdr *from)
{
	memset(to, 0, sizeof(*to));
	to->h_magic = ext2fs_cpu_to_le32(from->h_magic);
	to->h_version = ext2fs_cpu_to_le16(from->h_version);
	to->h_depth = ext2fs_cpu_to_le16(from->h_depth);
	to->h_compat = ext2fs_cpu_to_le32(from->h_compat);
	to->h_ro_compat = ext2fs_cpu_to_le32(from->h_ro_compat);
	to->h_incompat = ext2fs_cpu_to_le32(from->h_incompat);
	to->h_blocksize = ext2fs_cpu_to_le32(from->h_blocksize);
	memcpy(to->h_uuid, from->h_uuid, sizeof(to->h_uuid));
	to->h_root = ext2fs_cpu_to_le32(from->h_root);
	to->h_nblocks = ext2fs_cpu_to_le32(from->h_nblocks);
	to->h_nrecords = ext2fs_cpu_to_le64(from->h_nrecords);
	to->h_free_head = ext2fs_cpu_to_le32(from->h_free_head);
	to->h_free_count = ext2fs_cpu_to_le32(from->h_free_count);
	to->h_generation = ext2fs_cpu_to_le64(from->h_generation);
	to->h_stamp = ext2fs_cpu_to_le32(from->h_stamp);
	to->h_checksum = ext2fs_cpu_to_le32(from->h_checksum);
	to->h_seen_flags = ext2fs_cpu_to_le32(from->h_seen_flags);
	to->h_seen_csum = ext2fs_cpu_to_le32(from->h_seen_csum);
	to->h_seen_nsec = ext2fs_cpu_to_le32(from->h_seen_nsec);
	to->h_seen_time = ext2fs_cpu_to_le64(from->h_seen_time);
	to->h_seen_mtime = ext2fs_cpu_to_le64(from->h_seen_mtime);
	to->h_seen_mnt_count = ext2fs_cpu_to_le16(from->h_seen_mnt_count);
}

void extref_node_hdr_decode(struct extref_node_hdr *to,
			   const struct extref_disk_node *from)
{
	memset(to, 0, sizeof(*to));
	to->n_magic = ext2fs_le32_to_cpu(from->n_magic);
	to->n_level = ext2fs_le16_to_cpu(from->n_level);
	to->n_nr = ext2fs_le16_to_cpu(from->n_nr);
	to->n_blkno = ext2fs_le32_to_cpu(from->n_blkno);
	to->n_next = ext2fs_le32_to_cpu(from->n_next);
	to->n_generation = ext2fs_le64_to_cpu(from->n_generation);
	to->n_checksum = ext2fs_le32_to_cpu(from->n_checksum);
}

void xr_node_hdr_to_disk(struct extref_disk_node *to,
			 const struct extref_node_hdr *from)
{
	memset(to, 0, sizeof(*to));
	to->n_magic = ext2fs_cpu_to_le32(from->n_magic);
	to->n_level = ext2fs_cpu_to_le16(from->n_level);
	to->n_nr = ext2fs_cpu_to_le16(from->n_nr);
	to->n_blkno = ext2fs_cpu_to_le32(from->n_blkno);
	to->n_next = ext2fs_cpu_to_le32(from->n_next);
	to->n_generation = ext2fs_cpu_to_le64(from->n_generation);
	to->n_checksum = ext2fs_cpu_to_le32(from->n_checksum);
}
