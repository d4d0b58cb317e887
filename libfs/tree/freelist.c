/*
 * freelist.c --- free nodes of the tree's file.
 *
 * On disk the free nodes form a chain from h_free_head, h_free_count long.
 * In memory t->free holds it in chain order, head first.  Allocation
 * takes the tail: the committed chain then stays valid up to the blocks
 * being reused, so a crash before the next commit loses no free node
 * but those (see FORMAT.md, "Commit").
 */
#include "extref_int.h"

/*
 * Read the chain.  A chain that ends early (bad block, loop, wrong
 * length) is not fatal: the nodes read so far are used, the rest leak
 * until fsck rebuilds the list, and free_damaged records it.
 */
errcode_t xr_free_load(struct extref_tree *t)
{
	__u32 lblk = t->hdr.h_free_head;
	__u32 count = t->hdr.h_free_count;
	struct extref_node_hdr h;
	ext2fs_generic_bitmap seen = NULL;
	errcode_t err;

	t->free.n = 0;
	if (count == 0)
		return 0;
	err = ext2fs_allocate_generic_bitmap(0, t->nblocks, t->nblocks,
					     "extref free list", &seen);
	if (err)
		return err;
	while (count-- > 0) {
		if (lblk == 0 || lblk >= t->nblocks ||
		    ext2fs_test_generic_bitmap(seen, lblk) ||
		    xr_read_lblk(t, lblk, t->buf) ||
		    xr_check_free_block(t->buf, t->bs, t->seed, lblk,
					t->nblocks)) {
			t->free_damaged = 1;
			break;
		}
		ext2fs_mark_generic_bitmap(seen, lblk);
		err = xr_lblk_push(&t->free, lblk);
		if (err)
			break;
		extref_node_hdr_decode(&h, (const void *)t->buf);
		lblk = h.n_next;
	}
	ext2fs_free_generic_bitmap(seen);
	return err;
}

/*
 * A block for a node being written: a free node, else a new one, proven
 * the tree's own (owned.c) before it is handed out.
 */
errcode_t xr_lblk_alloc(struct extref_tree *t, __u32 *ret)
{
	errcode_t err;

	if (t->free.n) {
		/* Taken off the list only once it is proven writable. */
		err = xr_lblk_prove(t, t->free.v[t->free.n - 1]);
		if (err)
			return err;
		*ret = t->free.v[--t->free.n];
		return 0;
	}
	if (t->nblocks >= 0x7fffffffU)
		return EXTREF_ERR_TREE_FULL;
	err = xr_pmap_grow(t, t->nblocks);
	if (!err)
		err = xr_lblk_prove(t, t->nblocks);
	if (err)
		return err;
	*ret = t->nblocks++;
	return 0;
}
