/*
 * ondisk.c --- converters between on-disk structures and memory.
 *
 * Nothing is byte-swapped in place: decoders read a disk structure into
 * a separate CPU-order copy, encoders write a whole block afresh.
 */
#include <string.h>
#include "extref_int.h"
#include "ondisk_checks.h"

void xr_hdr_to_cpu(const struct extref_disk_header *d,
		   struct extref_disk_header *c)
{
	memset(c, 0, sizeof(*c));
	c->h_magic = ext2fs_le32_to_cpu(d->h_magic);
	c->h_version = ext2fs_le16_to_cpu(d->h_version);
	c->h_depth = ext2fs_le16_to_cpu(d->h_depth);
	c->h_compat = ext2fs_le32_to_cpu(d->h_compat);
	c->h_ro_compat = ext2fs_le32_to_cpu(d->h_ro_compat);
	c->h_incompat = ext2fs_le32_to_cpu(d->h_incompat);
	c->h_blocksize = ext2fs_le32_to_cpu(d->h_blocksize);
	memcpy(c->h_uuid, d->h_uuid, sizeof(c->h_uuid));
	c->h_root = ext2fs_le32_to_cpu(d->h_root);
	c->h_nblocks = ext2fs_le32_to_cpu(d->h_nblocks);
	c->h_nrecords = ext2fs_le64_to_cpu(d->h_nrecords);
	c->h_free_head = ext2fs_le32_to_cpu(d->h_free_head);
	c->h_free_count = ext2fs_le32_to_cpu(d->h_free_count);
	c->h_generation = ext2fs_le64_to_cpu(d->h_generation);
	c->h_checksum = ext2fs_le32_to_cpu(d->h_checksum);
}

void xr_hdr_to_disk(const struct extref_disk_header *c,
		    struct extref_disk_header *d)
{
	memset(d, 0, sizeof(*d));
	d->h_magic = ext2fs_cpu_to_le32(c->h_magic);
	d->h_version = ext2fs_cpu_to_le16(c->h_version);
	d->h_depth = ext2fs_cpu_to_le16(c->h_depth);
	d->h_compat = ext2fs_cpu_to_le32(c->h_compat);
	d->h_ro_compat = ext2fs_cpu_to_le32(c->h_ro_compat);
	d->h_incompat = ext2fs_cpu_to_le32(c->h_incompat);
	d->h_blocksize = ext2fs_cpu_to_le32(c->h_blocksize);
	memcpy(d->h_uuid, c->h_uuid, sizeof(d->h_uuid));
	d->h_root = ext2fs_cpu_to_le32(c->h_root);
	d->h_nblocks = ext2fs_cpu_to_le32(c->h_nblocks);
	d->h_nrecords = ext2fs_cpu_to_le64(c->h_nrecords);
	d->h_free_head = ext2fs_cpu_to_le32(c->h_free_head);
	d->h_free_count = ext2fs_cpu_to_le32(c->h_free_count);
	d->h_generation = ext2fs_cpu_to_le64(c->h_generation);
	d->h_checksum = ext2fs_cpu_to_le32(c->h_checksum);
}

/* Fill in the checksum of an encoded header block. */
void xr_hdr_set_csum(__u32 seed, void *block, unsigned int bs)
{
	struct extref_disk_header *d = block;

	(void) bs;
	d->h_checksum = ext2fs_cpu_to_le32(xr_header_csum(seed, block));
}

static void node_hdr_encode(const struct extref_tree *t, __u32 magic,
			    int level, int nr, __u32 lblk, __u32 next,
			    void *block)
{
	struct extref_disk_node *h = block;

	memset(block, 0, t->bs);
	h->n_magic = ext2fs_cpu_to_le32(magic);
	h->n_level = ext2fs_cpu_to_le16(level);
	h->n_nr = ext2fs_cpu_to_le16(nr);
	h->n_blkno = ext2fs_cpu_to_le32(lblk);
	h->n_next = ext2fs_cpu_to_le32(next);
	h->n_generation = ext2fs_cpu_to_le64(t->generation);
}

static void node_set_csum(const struct extref_tree *t, void *block)
{
	struct extref_disk_node *h = block;

	h->n_checksum = ext2fs_cpu_to_le32(
		xr_block_csum(t->seed, block, t->bs, EXTREF_NODE_CSUM_OFFSET));
}

/* Encode a tree node for writing at lblk. */
void xr_node_encode(const struct extref_tree *t, const struct xr_node *n,
		    __u32 lblk, void *block)
{
	struct extref_disk_rec *r;
	struct extref_disk_key *k;
	int i;

	node_hdr_encode(t, EXTREF_NODE_MAGIC, n->level, n->nr, lblk, 0, block);
	r = (struct extref_disk_rec *)((char *)block +
				       sizeof(struct extref_disk_node));
	k = (struct extref_disk_key *)r;
	for (i = 0; i < n->nr; i++) {
		if (n->level == 0) {
			r[i].r_start = ext2fs_cpu_to_le64(n->u.recs[i].start);
			r[i].r_len = ext2fs_cpu_to_le32(n->u.recs[i].len);
			r[i].r_count = ext2fs_cpu_to_le32(n->u.recs[i].count);
		} else {
			k[i].k_key = ext2fs_cpu_to_le64(n->u.keys[i].key);
			k[i].k_child = ext2fs_cpu_to_le32(n->u.keys[i].child);
		}
	}
	node_set_csum(t, block);
}

/* Encode a free node for writing at lblk, linked to next. */
void xr_free_encode(const struct extref_tree *t, __u32 lblk, __u32 next,
		    void *block)
{
	node_hdr_encode(t, EXTREF_FREE_MAGIC, 0, 0, lblk, next, block);
	node_set_csum(t, block);
}
