/*
 * node.c --- nodes in memory: create, read and check, release.
 */
#include <string.h>
#include "extref_int.h"

errcode_t xr_lblk_push(struct xr_lblk_vec *v, __u32 lblk)
{
	errcode_t err = xr_grow(&v->v, &v->cap, v->n, sizeof(*v->v));

	if (err)
		return err;
	v->v[v->n++] = lblk;
	return 0;
}

errcode_t xr_node_new(struct extref_tree *t, int level, struct xr_node **ret)
{
	struct xr_node *n;
	size_t esz = level ? sizeof(struct xr_key) : sizeof(struct extref_rec);
	errcode_t err;

	err = ext2fs_get_memzero(sizeof(*n), &n);
	if (err)
		return err;
	/* One spare entry: a node may overflow by one before it splits. */
	err = ext2fs_get_memzero((t->disk_cap + 1) * esz, &n->u.recs);
	if (err) {
		ext2fs_free_mem(&n);
		return err;
	}
	n->level = level;
	xr_node_touch(t, n);
	*ret = n;
	return 0;
}

void xr_node_free_mem(struct xr_node *n)
{
	if (!n)
		return;
	ext2fs_free_mem(&n->u.recs);
	ext2fs_free_mem(&n);
}

/* Free the memory of a cached subtree (nothing on disk changes). */
void xr_subtree_free_mem(struct xr_node *n)
{
	int i;

	if (!n)
		return;
	if (n->level > 0)
		for (i = 0; i < n->nr; i++)
			xr_subtree_free_mem(n->u.keys[i].ptr);
	xr_node_free_mem(n);
}

/*
 * A node leaves the tree: its block becomes free once the commit that
 * drops it is on disk (until then the committed tree still uses it).
 */
void xr_node_release(struct extref_tree *t, struct xr_node *n)
{
	if (n->lblk && xr_lblk_push(&t->pending, n->lblk))
		t->free_damaged = 1;	/* out of memory: the block leaks */
	xr_node_clean(t, n);
	xr_node_free_mem(n);
}

static void decode_entries(struct xr_node *n, const void *block)
{
	const struct extref_disk_rec *r = (const void *)((const char *)block +
					  sizeof(struct extref_disk_node));
	const struct extref_disk_key *k = (const void *)r;
	int i;

	for (i = 0; i < n->nr; i++) {
		if (n->level == 0) {
			n->u.recs[i].start = ext2fs_le64_to_cpu(r[i].r_start);
			n->u.recs[i].len = ext2fs_le32_to_cpu(r[i].r_len);
			n->u.recs[i].count = ext2fs_le32_to_cpu(r[i].r_count);
		} else {
			n->u.keys[i].key = ext2fs_le64_to_cpu(k[i].k_key);
			n->u.keys[i].child = ext2fs_le32_to_cpu(k[i].k_child);
			n->u.keys[i].ptr = NULL;
		}
	}
}

/*
 * Read the node at lblk, which must be at the given level with every key
 * inside the bounds.  Decode, validate, then hand out: on error nothing
 * is returned.
 */
errcode_t xr_node_read(struct extref_tree *t, __u32 lblk, int level,
		       const struct xr_bounds *b, struct xr_node **ret)
{
	struct extref_node_hdr h;
	struct xr_node *n;
	errcode_t err;

	if (lblk == 0 || lblk >= t->nblocks)
		return EXTREF_ERR_NODE_CHILD;
	err = xr_read_lblk(t, lblk, t->buf);
	if (err)
		return err;
	err = xr_check_node_block(t->buf, t->bs, t->seed, lblk);
	if (err)
		return err;
	extref_node_hdr_decode(&h, (const void *)t->buf);
	err = xr_node_new(t, h.n_level, &n);
	if (err)
		return err;
	n->nr = h.n_nr;
	n->lblk = lblk;
	xr_node_clean(t, n);
	decode_entries(n, t->buf);
	err = xr_check_node(t, n, level, b);
	if (err) {
		xr_node_free_mem(n);
		return err;
	}
	*ret = n;
	return 0;
}

/* Lowest key of entry i of a node. */
blk64_t xr_node_low_key(const struct xr_node *n, int i)
{
	return n->level ? n->u.keys[i].key : n->u.recs[i].start;
}
