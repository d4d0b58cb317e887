/*
 * ondisk_checks.h --- compile-time size and offset checks of every on-disk
 * structure of extref_format.h.
 *
 * Kept out of the public header so that it stays includable from C++;
 * included by exactly one file (ondisk.c), which is enough for the checks
 * to run at every build.
 */
#ifndef EXTREF_ONDISK_CHECKS_H
#define EXTREF_ONDISK_CHECKS_H

#include <stddef.h>
#include "extref_format.h"

/* Compile-time checks of every on-disk structure. */
#define EXTREF_CHECK_SIZE(type, size) \
	_Static_assert(sizeof(struct type) == (size), #type " size")
#define EXTREF_CHECK_OFF(type, field, off) \
	_Static_assert(offsetof(struct type, field) == (off), \
		       #type "." #field " offset")

EXTREF_CHECK_SIZE(extref_disk_header, 0x80);
EXTREF_CHECK_OFF(extref_disk_header, h_version, 0x04);
EXTREF_CHECK_OFF(extref_disk_header, h_depth, 0x06);
EXTREF_CHECK_OFF(extref_disk_header, h_compat, 0x08);
EXTREF_CHECK_OFF(extref_disk_header, h_ro_compat, 0x0c);
EXTREF_CHECK_OFF(extref_disk_header, h_incompat, 0x10);
EXTREF_CHECK_OFF(extref_disk_header, h_blocksize, 0x14);
EXTREF_CHECK_OFF(extref_disk_header, h_uuid, 0x18);
EXTREF_CHECK_OFF(extref_disk_header, h_root, 0x28);
EXTREF_CHECK_OFF(extref_disk_header, h_nblocks, 0x2c);
EXTREF_CHECK_OFF(extref_disk_header, h_nrecords, 0x30);
EXTREF_CHECK_OFF(extref_disk_header, h_free_head, 0x38);
EXTREF_CHECK_OFF(extref_disk_header, h_free_count, 0x3c);
EXTREF_CHECK_OFF(extref_disk_header, h_generation, 0x40);
EXTREF_CHECK_OFF(extref_disk_header, h_stamp, 0x48);
EXTREF_CHECK_OFF(extref_disk_header, h_seen_flags, 0x4c);
EXTREF_CHECK_OFF(extref_disk_header, h_seen_csum, 0x50);
EXTREF_CHECK_OFF(extref_disk_header, h_seen_nsec, 0x54);
EXTREF_CHECK_OFF(extref_disk_header, h_seen_time, 0x58);
EXTREF_CHECK_OFF(extref_disk_header, h_seen_mtime, 0x60);
EXTREF_CHECK_OFF(extref_disk_header, h_seen_mnt_count, 0x68);
EXTREF_CHECK_OFF(extref_disk_header, h_reserved, 0x6c);
EXTREF_CHECK_OFF(extref_disk_header, h_checksum, EXTREF_HDR_CSUM_OFFSET);

EXTREF_CHECK_SIZE(extref_disk_node, 0x20);
EXTREF_CHECK_OFF(extref_disk_node, n_level, 0x04);
EXTREF_CHECK_OFF(extref_disk_node, n_nr, 0x06);
EXTREF_CHECK_OFF(extref_disk_node, n_blkno, 0x08);
EXTREF_CHECK_OFF(extref_disk_node, n_next, 0x0c);
EXTREF_CHECK_OFF(extref_disk_node, n_generation, 0x10);
EXTREF_CHECK_OFF(extref_disk_node, n_checksum, EXTREF_NODE_CSUM_OFFSET);

EXTREF_CHECK_SIZE(extref_disk_rec, 0x10);
EXTREF_CHECK_OFF(extref_disk_rec, r_len, 0x08);
EXTREF_CHECK_OFF(extref_disk_rec, r_count, 0x0c);

EXTREF_CHECK_SIZE(extref_disk_key, 0x10);
EXTREF_CHECK_OFF(extref_disk_key, k_child, 0x08);
EXTREF_CHECK_OFF(extref_disk_key, k_reserved, 0x0c);


#endif /* EXTREF_ONDISK_CHECKS_H */
