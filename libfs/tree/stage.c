/*
 * stage.c --- bulk loading a new tree bottom-up (extref_stage.h).
 *
 * One node is open at each level: records fill the leaf; a full node is
 * written to a new block and its low key goes into the node open one
 * level up, opened (and, when full, written) the same way.  Nodes are
 * written once, children before the parents that name them; the header,
 * written last, is the commit point.
 */
#include "extref_int.h"
#include "extref_stage.h"

struct xr_stage {
	struct extref_tree	*t;
	struct xr_node		*open[EXTREF_MAX_DEPTH];  /* per level */
	int			written[EXTREF_MAX_DEPTH]; /* nodes, per level */
	struct extref_rec	last;	/* the record added last */
	__u64			nrecords;
};

errcode_t xr_stage_begin(ext2_filsys fs, xr_stage_t *ret)
{
	struct xr_stage *st;
	errcode_t err;

	err = ext2fs_get_memzero(sizeof(*st), &st);
	if (err)
		return err;
	err = extref_format(fs);
	if (!err)
		err = extref_tree_open(fs, EXTREF_TREE_RW, &st->t);
	if (err) {
		ext2fs_free_mem(&st);
		return err;
	}
	*ret = st;
	return 0;
}

static errcode_t push_key(struct xr_stage *st, int level, blk64_t key,
			  __u32 child);

/* Write the node open at level; its key goes one level up. */
static errcode_t write_open(struct xr_stage *st, int level)
{
	struct extref_tree *t = st->t;
	struct xr_node *n = st->open[level];
	errcode_t err;
	__u32 lblk;

	err = xr_lblk_alloc(t, &lblk);
	if (err)
		return err;
	n->lblk = lblk;
	xr_node_encode(t, n, lblk, t->buf);
	err = xr_write_lblk(t, lblk, t->buf);
	if (err)
		return err;
	xr_node_clean(t, n);
	st->written[level]++;
	return 0;
}

/* Write and close the node open at level (not the root). */
static errcode_t close_open(struct xr_stage *st, int level)
{
	struct xr_node *n = st->open[level];
	errcode_t err;

	err = write_open(st, level);
	if (!err)
		err = push_key(st, level + 1, xr_node_low_key(n, 0), n->lblk);
	if (err)
		return err;
	xr_node_free_mem(n);
	st->open[level] = NULL;
	return 0;
}

/* The node open at level with room for one more entry. */
static errcode_t room_at(struct xr_stage *st, int level, struct xr_node **ret)
{
	errcode_t err;

	if (level >= EXTREF_MAX_DEPTH)
		return EXTREF_ERR_TREE_FULL;
	if (st->open[level] &&
	    (unsigned int)st->open[level]->nr >= st->t->cap) {
		err = close_open(st, level);
		if (err)
			return err;
	}
	if (!st->open[level]) {
		err = xr_node_new(st->t, level, &st->open[level]);
		if (err)
			return err;
	}
	*ret = st->open[level];
	return 0;
}

static errcode_t push_key(struct xr_stage *st, int level, blk64_t key,
			  __u32 child)
{
	struct xr_node *n;
	errcode_t err;

	err = room_at(st, level, &n);
	if (err)
		return err;
	n->u.keys[n->nr].key = key;
	n->u.keys[n->nr].child = child;
	n->u.keys[n->nr].ptr = NULL;
	n->nr++;
	return 0;
}

errcode_t xr_stage_add(xr_stage_t st, const struct extref_rec *r)
{
	ext2_filsys fs = st->t->fs;
	struct xr_node *n;
	errcode_t err;

	err = xr_check_rec(r, fs->super->s_first_data_block,
			   ext2fs_blocks_count(fs->super));
	if (err)
		return err;
	if (st->nrecords && r->start < st->last.start + st->last.len)
		return EXTREF_ERR_NODE_ORDER;
	/* as the node verifier: neighbours that could be one record are */
	if (st->nrecords && r->start == st->last.start + st->last.len &&
	    r->count == st->last.count &&
	    r->len + st->last.len <= EXTREF_MAX_REC_LEN)
		return EXTREF_ERR_REC_UNMERGED;
	err = room_at(st, 0, &n);
	if (err)
		return err;
	n->u.recs[n->nr++] = *r;
	st->last = *r;
	st->nrecords++;
	return 0;
}

static void stage_free(struct xr_stage *st)
{
	int i;

	for (i = 0; i < EXTREF_MAX_DEPTH; i++)
		xr_node_free_mem(st->open[i]);
	ext2fs_free_mem(&st);
}

/*
 * Close every level below the top; the top level's one node is the
 * root.  Then the header names the new tree.
 */
errcode_t xr_stage_commit(xr_stage_t st)
{
	struct extref_tree *t = st->t;
	errcode_t err = 0;
	int level;

	for (level = 0; !err && st->open[level]; level++) {
		if (st->written[level] == 0 &&
		    (level + 1 >= EXTREF_MAX_DEPTH || !st->open[level + 1]))
			break;
		err = close_open(st, level);
	}
	if (!err && st->nrecords) {
		err = write_open(st, level);
		if (!err) {
			t->root = st->open[level];
			st->open[level] = NULL;
			t->depth = level + 1;
			t->nrecords = st->nrecords;
			t->generation++;
			err = xr_write_header(t, 1);
		}
	}
	stage_free(st);
	if (err) {
		extref_tree_free(t);
		return err;
	}
	return extref_tree_close(t);
}

void xr_stage_abort(xr_stage_t st)
{
	extref_tree_free(st->t);
	stage_free(st);
}
