/*
 * ondisk.c --- converters between on-disk structures and memory.
 *
 * Nothing is byte-swapped in place: decoders read a disk structure into
 * a separate CPU-order copy, encoders write a whole block afresh.
 */
#include <string.h>
#include "extref_int.h"
#include "ondisk_checks.h"

/*
 * Encode the header h as the whole block (the rest of the block zero),
 * with the checksum of what was encoded; h's own h_checksum is ignored.
 */
void xr_hdr_encode(__u32 seed, const struct extref_tree_hdr *h, void *block,
		   unsigned int bs)
{
	struct extref_tree_hdr c = *h;

	memset(block, 0, bs);
	c.h_checksum = 0;
	xr_hdr_to_disk(block, &c);
	c.h_checksum = xr_header_csum(seed, block);
	xr_hdr_to_disk(block, &c);
}

static void node_hdr_encode(const struct extref_tree *t, __u32 magic,
			    int level, int nr, __u32 lblk, __u32 next,
			    void *block)
{
	struct extref_node_hdr h = {
		.n_magic = magic,
		.n_level = level,
		.n_nr = nr,
		.n_blkno = lblk,
		.n_next = next,
		.n_generation = t->generation,
	};

	memset(block, 0, t->bs);
	xr_node_hdr_to_disk(block, &h);
}

/* Checksum an encoded node block: its header is decoded and encoded anew. */
static void node_set_csum(const struct extref_tree *t, void *block)
{
	struct extref_node_hdr h;

	extref_node_hdr_decode(&h, block);
	h.n_checksum = xr_block_csum(t->seed, block, t->bs,
				     EXTREF_NODE_CSUM_OFFSET);
	xr_node_hdr_to_disk(block, &h);
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
