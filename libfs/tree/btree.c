/*
 * btree.c --- the B+tree of records in memory: search, insert, delete.
 *
 * Interior entry i covers starts in [key[i], key[i+1]) (the last entry up
 * to the parent's bound), and key[i] is exactly the lowest start in child
 * i's subtree, so the record holding a block is always under the last key
 * that is <= the block.  Every node on a changed path is marked dirty:
 * commit.c rewrites the whole path copy-on-write anyway.
 */
#include <string.h>
#include "extref_int.h"
#include "base/xr_search.h"

#define VISIT_STOP	1

static const struct xr_bounds root_bounds = { 0, 0, 0 };

void xr_child_bounds(const struct xr_node *n, int i,
			 const struct xr_bounds *pb, struct xr_bounds *cb)
{
	cb->lo = n->u.keys[i].key;
	cb->hi = (i + 1 < n->nr) ? n->u.keys[i + 1].key : pb->hi;
	cb->exact = 1;
}

/* The cached child i of an interior node, read on first use. */
errcode_t xr_child(struct extref_tree *t, struct xr_node *n, int i,
			   const struct xr_bounds *pb, struct xr_node **ret)
{
	struct xr_key *k = &n->u.keys[i];
	struct xr_bounds cb;
	errcode_t err;

	if (!k->ptr) {
		xr_child_bounds(n, i, pb, &cb);
		err = xr_node_read(t, k->child, n->level - 1, &cb, &k->ptr);
		if (err)
			return err;
	}
	*ret = k->ptr;
	return 0;
}

/* Index of the last entry whose key is <= blk, or 0. */
static int find_slot(const struct xr_node *n, blk64_t blk)
{
	size_t after = XR_PARTITION_POINT(n->nr, i,
					  xr_node_low_key(n, i) <= blk);

	return after ? (int)after - 1 : 0;
}

static size_t entry_size(const struct xr_node *n)
{
	return n->level ? sizeof(struct xr_key) : sizeof(struct extref_rec);
}

static void *entry_ptr(const struct xr_node *n, int i)
{
	return (char *)n->u.recs + i * entry_size(n);
}

/* Open a gap at i (count entries move right). */
static void entry_insert_gap(struct xr_node *n, int i)
{
	memmove(entry_ptr(n, i + 1), entry_ptr(n, i),
		(n->nr - i) * entry_size(n));
	n->nr++;
}

static void entry_remove(struct xr_node *n, int i)
{
	memmove(entry_ptr(n, i), entry_ptr(n, i + 1),
		(n->nr - i - 1) * entry_size(n));
	n->nr--;
}

/* Move entries [from, nr) of src to the end of dst. */
static void entry_move_tail(struct xr_node *dst, struct xr_node *src, int from)
{
	int cnt = src->nr - from;

	memcpy(entry_ptr(dst, dst->nr), entry_ptr(src, from),
	       cnt * entry_size(src));
	dst->nr += cnt;
	src->nr = from;
}

/* Move the first cnt entries of src to the end of dst. */
static void entry_move_head(struct xr_node *dst, struct xr_node *src, int cnt)
{
	memcpy(entry_ptr(dst, dst->nr), entry_ptr(src, 0),
	       cnt * entry_size(src));
	dst->nr += cnt;
	memmove(entry_ptr(src, 0), entry_ptr(src, cnt),
		(src->nr - cnt) * entry_size(src));
	src->nr -= cnt;
}

/* Move the last cnt entries of src to the front of dst. */
static void entry_move_to_front(struct xr_node *dst, struct xr_node *src,
				int cnt)
{
	memmove(entry_ptr(dst, cnt), entry_ptr(dst, 0),
		dst->nr * entry_size(dst));
	memcpy(entry_ptr(dst, 0), entry_ptr(src, src->nr - cnt),
	       cnt * entry_size(src));
	dst->nr += cnt;
	src->nr -= cnt;
}

/* Split an overfull node: the upper half goes to a new right sibling. */
static errcode_t split_node(struct extref_tree *t, struct xr_node *n,
			    struct xr_node **split)
{
	struct xr_node *r;
	errcode_t err;

	err = xr_node_new(t, n->level, &r);
	if (err)
		return err;
	entry_move_tail(r, n, n->nr / 2);
	*split = r;
	return 0;
}

static errcode_t insert_rec(struct extref_tree *t, struct xr_node *n,
			    const struct xr_bounds *b,
			    const struct extref_rec *r, struct xr_node **split)
{
	struct xr_node *child, *csplit = NULL;
	errcode_t err;
	int i;

	*split = NULL;
	xr_node_touch(t, n);
	if (n->level == 0) {
		i = 0;
		if (n->nr) {
			i = find_slot(n, r->start);
			if (n->u.recs[i].start < r->start)
				i++;
		}
		entry_insert_gap(n, i);
		n->u.recs[i] = *r;
	} else {
		i = find_slot(n, r->start);
		/* Read the child before its key moves: it is checked against it. */
		err = xr_child(t, n, i, b, &child);
		if (err)
			return err;
		if (r->start < n->u.keys[0].key)
			n->u.keys[0].key = r->start;
		{
			struct xr_bounds cb;

			xr_child_bounds(n, i, b, &cb);
			err = insert_rec(t, child, &cb, r, &csplit);
		}
		if (err)
			return err;
		if (csplit) {
			entry_insert_gap(n, i + 1);
			n->u.keys[i + 1].key = xr_node_low_key(csplit, 0);
			n->u.keys[i + 1].child = 0;
			n->u.keys[i + 1].ptr = csplit;
		}
	}
	if ((unsigned int)n->nr > t->cap)
		return split_node(t, n, split);
	return 0;
}

errcode_t xr_insert(struct extref_tree *t, const struct extref_rec *r)
{
	struct xr_node *split, *nroot;
	errcode_t err;

	if (!t->root) {
		err = xr_node_new(t, 0, &t->root);
		if (err)
			return err;
		t->depth = 1;
	}
	err = insert_rec(t, t->root, &root_bounds, r, &split);
	if (err)
		return err;
	t->nrecords++;
	t->dirty = 1;
	if (!split)
		return 0;
	if (t->depth >= EXTREF_MAX_DEPTH)
		return EXTREF_ERR_TREE_FULL;
	err = xr_node_new(t, t->root->level + 1, &nroot);
	if (err)
		return err;
	nroot->nr = 2;
	nroot->u.keys[0].key = xr_node_low_key(t->root, 0);
	nroot->u.keys[0].child = t->root->lblk;
	nroot->u.keys[0].ptr = t->root;
	nroot->u.keys[1].key = xr_node_low_key(split, 0);
	nroot->u.keys[1].ptr = split;
	t->root = nroot;
	t->depth++;
	return 0;
}

/* Child i of n fell below half full: merge with or borrow from a sibling. */
static errcode_t rebalance(struct extref_tree *t, struct xr_node *n, int i,
			   const struct xr_bounds *b)
{
	struct xr_node *left, *right;
	int li = (i + 1 < n->nr) ? i : i - 1;
	int move;
	errcode_t err;

	if (li < 0)
		return 0;		/* an only child: nothing to balance */
	err = xr_child(t, n, li, b, &left);
	if (!err)
		err = xr_child(t, n, li + 1, b, &right);
	if (err)
		return err;
	xr_node_touch(t, left);
	xr_node_touch(t, right);
	if ((unsigned int)(left->nr + right->nr) <= t->cap) {
		entry_move_tail(left, right, 0);
		entry_remove(n, li + 1);
		xr_node_release(t, right);
		return 0;
	}
	if (left->nr < right->nr) {
		move = (right->nr - left->nr) / 2;
		entry_move_head(left, right, move);
	} else {
		move = (left->nr - right->nr) / 2;
		entry_move_to_front(right, left, move);
	}
	n->u.keys[li + 1].key = xr_node_low_key(right, 0);
	return 0;
}

static errcode_t delete_rec(struct extref_tree *t, struct xr_node *n,
			    const struct xr_bounds *b, blk64_t start)
{
	struct xr_node *child;
	struct xr_bounds cb;
	errcode_t err;
	int i = n->nr ? find_slot(n, start) : 0;

	xr_node_touch(t, n);
	if (n->level == 0) {
		if (n->nr == 0 || n->u.recs[i].start != start)
			return EXTREF_ERR_BAD_TREE;
		entry_remove(n, i);
		return 0;
	}
	err = xr_child(t, n, i, b, &child);
	if (err)
		return err;
	xr_child_bounds(n, i, b, &cb);
	err = delete_rec(t, child, &cb, start);
	if (err)
		return err;
	if (child->nr == 0) {
		entry_remove(n, i);
		xr_node_release(t, child);
		return 0;
	}
	n->u.keys[i].key = xr_node_low_key(child, 0);
	if ((unsigned int)child->nr < t->cap / 2)
		err = rebalance(t, n, i, b);
	return err;
}

errcode_t xr_delete(struct extref_tree *t, blk64_t start)
{
	struct xr_node *old;
	errcode_t err;

	if (!t->root)
		return EXTREF_ERR_BAD_TREE;
	err = delete_rec(t, t->root, &root_bounds, start);
	if (err)
		return err;
	t->nrecords--;
	t->dirty = 1;
	while (t->root->level > 0 && t->root->nr == 1) {
		old = t->root;
		err = xr_child(t, old, 0, &root_bounds, &t->root);
		if (err)
			return err;
		old->nr = 0;
		xr_node_release(t, old);
		t->depth--;
	}
	if (t->root->nr == 0) {
		xr_node_release(t, t->root);
		t->root = NULL;
		t->depth = 0;
	}
	return 0;
}

/*
 * Set the count of the record starting at start, in place: its keys do
 * not move, so only the path to it is marked dirty.
 */
errcode_t xr_set_count(struct extref_tree *t, blk64_t start, __u32 count)
{
	struct xr_node *n = t->root, *child;
	struct xr_bounds b = root_bounds, cb;
	errcode_t err;
	int i;

	while (n) {
		i = n->nr ? find_slot(n, start) : 0;
		xr_node_touch(t, n);
		if (n->level == 0)
			break;
		err = xr_child(t, n, i, &b, &child);
		if (err)
			return err;
		xr_child_bounds(n, i, &b, &cb);
		b = cb;
		n = child;
	}
	if (!n || n->nr == 0 || n->u.recs[i].start != start)
		return EXTREF_ERR_BAD_TREE;
	n->u.recs[i].count = count;
	t->dirty = 1;
	return 0;
}

static errcode_t visit_node(struct extref_tree *t, struct xr_node *n,
			    const struct xr_bounds *b, blk64_t lo, blk64_t hi,
			    xr_visit_func f, void *priv)
{
	struct xr_node *child;
	struct xr_bounds cb;
	errcode_t err;
	int i;

	if (n->level == 0) {
		for (i = n->nr ? find_slot(n, lo) : 0; i < n->nr; i++) {
			const struct extref_rec *r = &n->u.recs[i];

			if (r->start >= hi)
				break;
			if (r->start + r->len > lo && f(r, priv))
				return VISIT_STOP;
		}
		return 0;
	}
	for (i = find_slot(n, lo); i < n->nr && n->u.keys[i].key < hi; i++) {
		err = xr_child(t, n, i, b, &child);
		if (err)
			return err;
		xr_child_bounds(n, i, b, &cb);
		err = visit_node(t, child, &cb, lo, hi, f, priv);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Call f for each record overlapping [lo, hi), in order; f returns
 * non-zero to stop early.  A record that starts before lo lives in the
 * subtree find_slot(lo) picks, so the walk starts there.
 */
errcode_t xr_visit(struct extref_tree *t, blk64_t lo, blk64_t hi,
		   xr_visit_func f, void *priv)
{
	errcode_t err;

	if (!t->root || lo >= hi)
		return 0;
	err = visit_node(t, t->root, &root_bounds, lo, hi, f, priv);
	return err == VISIT_STOP ? 0 : err;
}

static int visit_none(const struct extref_rec *r, void *priv)
{
	(void) r; (void) priv;
	return 0;
}

/*
 * Read (and check) every node not yet in memory, once: a writer calls
 * this before its first write, so that an update never meets an
 * unreadable node half-way (a sibling read to rebalance included).
 * Nodes stay cached, so only the first call reads.
 */
errcode_t xr_tree_read_all(struct extref_tree *t)
{
	errcode_t err;

	if (t->broken)
		return t->broken;
	if (t->all_read)
		return 0;
	err = xr_visit(t, 0, ~(blk64_t)0, visit_none, NULL);
	if (!err)
		t->all_read = 1;
	return err;
}
