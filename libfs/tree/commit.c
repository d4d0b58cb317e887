/*
 * commit.c --- writing the tree: copy-on-write nodes, then the header.
 *
 * 1. Every dirty node is written to a block the committed tree does not
 *    use (a free node or a new block of inode 5), children before
 *    parents; the blocks it used before become "pending".
 * 2. Flush, write the header (the commit point), flush.
 * 3. If blocks became pending: write them as free nodes chained in front
 *    of the free list, flush, write the header again.
 * A crash at any point leaves the header naming either the old tree or
 * the new one, whole.
 */
#include <string.h>
#include "extref_int.h"

static errcode_t write_node(struct extref_tree *t, struct xr_node *n)
{
	errcode_t err;
	__u32 lblk;

	err = xr_lblk_alloc(t, &lblk);
	if (err)
		return err;
	if (n->lblk) {
		err = xr_lblk_push(&t->pending, n->lblk);
		if (err)
			return err;
	}
	n->lblk = lblk;
	xr_node_encode(t, n, lblk, t->buf);
	err = xr_write_lblk(t, lblk, t->buf);
	if (!err)
		xr_node_clean(t, n);
	return err;
}

/* Post-order: a parent is written after its children's new places. */
static errcode_t write_subtree(struct extref_tree *t, struct xr_node *n)
{
	errcode_t err;
	int i;

	if (!n->dirty)
		return 0;
	for (i = 0; n->level > 0 && i < n->nr; i++) {
		struct xr_key *k = &n->u.keys[i];

		if (!k->ptr || !k->ptr->dirty)
			continue;
		err = write_subtree(t, k->ptr);
		if (err)
			return err;
		k->child = k->ptr->lblk;
	}
	return write_node(t, n);
}

/*
 * Write the header between two flushes: the nodes it names are on disk
 * before it, and it is on disk before anything the caller writes next.
 * sync_after 0 skips the second flush where nothing depends on it;
 * sync_after -1 skips both (a header that names nothing new: the stamp).
 */
errcode_t xr_write_header(struct extref_tree *t, int sync_after)
{
	struct extref_tree_hdr c = t->hdr;
	errcode_t err;

	c.h_root = t->root ? t->root->lblk : 0;
	c.h_depth = t->depth;
	c.h_nrecords = t->nrecords;
	c.h_nblocks = t->nblocks;
	c.h_free_head = t->free.n ? t->free.v[0] : 0;
	c.h_free_count = t->free.n;
	c.h_generation = t->generation;
	c.h_stamp = t->stamp;
	err = xr_lblk_prove(t, 0);
	if (err)
		return err;
	xr_hdr_encode(t->seed, &c, t->buf, t->bs);
	err = sync_after >= 0 ? io_channel_flush(t->fs->io) : 0;
	if (!err)
		err = xr_write_lblk(t, 0, t->buf);
	if (!err && sync_after > 0)
		err = io_channel_flush(t->fs->io);
	if (!err)
		extref_tree_hdr_decode(&t->hdr, (const void *)t->buf);
	return err;
}

/* Chain the pending blocks in front of the free list. */
static errcode_t free_pending(struct extref_tree *t)
{
	struct xr_lblk_vec nv = { 0 };
	errcode_t err = 0;
	size_t i, npend = 0;

	/*
	 * Only blocks proven the tree's own become free nodes; any other
	 * is left off the list (a lost block, which fsck.extref reports
	 * with the reason) rather than written.
	 */
	for (i = 0; !err && i < t->pending.n; i++) {
		err = xr_lblk_prove(t, t->pending.v[i]);
		if (err == EXTREF_ERR_TREE_BLOCK_FOREIGN) {
			err = 0;
			continue;
		}
		if (!err)
			err = xr_lblk_push(&nv, t->pending.v[i]);
		npend++;
	}
	for (i = 0; !err && i < t->free.n; i++)
		err = xr_lblk_push(&nv, t->free.v[i]);
	for (i = 0; !err && i < npend; i++) {
		xr_free_encode(t, nv.v[i], i + 1 < nv.n ? nv.v[i + 1] : 0,
			       t->buf);
		err = xr_write_lblk(t, nv.v[i], t->buf);
	}
	if (err) {
		ext2fs_free_mem(&nv.v);
		return err;
	}
	ext2fs_free_mem(&t->free.v);
	t->free = nv;
	t->pending.n = 0;
	/* Lost in a power cut, this header only leaks the pending blocks. */
	return xr_write_header(t, 0);
}

/*
 * An empty tree gives its file back: the header goes first (one block,
 * no free nodes), then the blocks past it are released.  Interrupted in
 * between, inode 5 keeps blocks past h_nblocks, which belong to no one
 * until reused.  The blocks are released only if every one is proven the
 * tree's own (owned.c): freeing a block inode 5 shares with metadata or a
 * file would let it be allocated twice.  Otherwise they stay, past
 * h_nblocks, for fsck.extref to sort out.
 */
static errcode_t shrink_empty(struct extref_tree *t)
{
	struct ext2_inode inode;
	errcode_t err;

	t->free.n = 0;
	t->nblocks = 1;
	err = xr_write_header(t, 1);
	if (!err && !t->fs->block_map)
		err = ext2fs_read_bitmaps(t->fs);
	if (!err) {
		err = xr_lblks_prove_from(t, 1);
		if (err == EXTREF_ERR_TREE_BLOCK_FOREIGN)
			return 0;
	}
	if (!err)
		err = ext2fs_punch(t->fs, EXTREF_INO, NULL, NULL, 1, ~0ULL);
	if (!err)
		err = ext2fs_read_inode(t->fs, EXTREF_INO, &inode);
	if (!err)
		err = ext2fs_inode_size_set(t->fs, &inode, t->bs);
	if (!err)
		err = ext2fs_write_inode(t->fs, EXTREF_INO, &inode);
	if (!err && t->pmap_len > 1) {
		memset(t->pmap + 1, 0, (t->pmap_len - 1) * sizeof(*t->pmap));
		memset(t->pmap_own + 1, 0, t->pmap_len - 1);
	}
	/* Blocks past the header were given back: none is left over. */
	xr_owned_free(t);
	t->open_nblocks = 1;
	return err;
}

errcode_t extref_tree_commit(extref_tree_t t)
{
	errcode_t err;

	if (t->broken)
		return t->broken;
	if (!t->dirty)
		return 0;
	if (!(t->flags & EXTREF_TREE_RW))
		return EXTREF_ERR_READ_ONLY;
	t->generation++;
	err = t->root ? write_subtree(t, t->root) : 0;
	if (!err)
		err = xr_write_header(t, 1);
	if (!err && t->pending.n)
		err = free_pending(t);
	if (!err && !t->root && t->nblocks > 1)
		err = shrink_empty(t);
	if (err) {
		t->broken = err;
	} else {
		t->dirty = 0;
		t->ndirty = 0;
	}
	return err;
}
