/*
 * tree_check.c --- full structural check of the committed tree on disk.
 *
 * Reads every block afresh (the cache is not trusted), so it reports what
 * a later open would find.  Each problem is reported with the lblk it
 * concerns; the walk goes on past problems where it safely can.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "extref_int.h"

struct walk {
	struct extref_tree	*t;
	extref_problem_func	report;
	void			*priv;
	ext2fs_generic_bitmap	seen;	/* lblks found as node or free */
	errcode_t		first;	/* first problem */
	errcode_t		cb_err;	/* an error report() returned */
	int			stop;
	__u64			nrecords;
	int			have_prev;
	int			node_failed;	/* records went uncounted */
	struct extref_rec	prev;	/* last record met, across leaves */
};

static void problem(struct walk *w, errcode_t code, __u32 lblk,
		    const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void problem(struct walk *w, errcode_t code, __u32 lblk,
		    const char *fmt, ...)
{
	char detail[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (!w->first)
		w->first = code;
	if (w->report && !w->stop) {
		w->cb_err = w->report(code, lblk, detail, w->priv);
		if (w->cb_err)
			w->stop = 1;
		if (w->cb_err == EXTREF_ITER_STOP)
			w->cb_err = 0;
	}
}

/* Order and merging of records across leaf boundaries. */
static void check_sequence(struct walk *w, const struct xr_node *n)
{
	int i;

	for (i = 0; i < n->nr; i++) {
		const struct extref_rec *r = &n->u.recs[i];

		if (w->have_prev && i == 0) {
			if (w->prev.start + w->prev.len > r->start)
				problem(w, EXTREF_ERR_NODE_ORDER, n->lblk,
					"record at block %llu overlaps the one before",
					(unsigned long long)r->start);
			else if (w->prev.start + w->prev.len == r->start &&
				 w->prev.count == r->count &&
				 w->prev.len + r->len <= EXTREF_MAX_REC_LEN)
				problem(w, EXTREF_ERR_REC_UNMERGED, n->lblk,
					"record at block %llu not merged with the one before",
					(unsigned long long)r->start);
		}
		w->prev = *r;
		w->have_prev = 1;
	}
	w->nrecords += n->nr;
}

static void walk_node(struct walk *w, __u32 lblk, int level,
		      const struct xr_bounds *b)
{
	struct xr_node *n;
	struct xr_bounds cb;
	errcode_t err;
	int i;

	if (w->stop)
		return;
	if (lblk == 0 || lblk >= w->t->nblocks) {
		problem(w, EXTREF_ERR_NODE_CHILD, lblk,
			"node pointer %u outside the tree's %u blocks",
			lblk, w->t->nblocks);
		return;
	}
	if (ext2fs_test_generic_bitmap(w->seen, lblk)) {
		problem(w, EXTREF_ERR_NODE_TWICE, lblk,
			"node %u reachable twice", lblk);
		return;
	}
	ext2fs_mark_generic_bitmap(w->seen, lblk);
	err = xr_node_read(w->t, lblk, level, b, &n);
	if (err) {
		w->node_failed = 1;
		problem(w, err, lblk, "node %u (level %d)", lblk, level);
		return;
	}
	if (level == 0)
		check_sequence(w, n);
	for (i = 0; level > 0 && i < n->nr && !w->stop; i++) {
		xr_child_bounds(n, i, b, &cb);
		walk_node(w, n->u.keys[i].child, level - 1, &cb);
	}
	xr_node_free_mem(n);
}

static void walk_free(struct walk *w)
{
	__u32 lblk = w->t->hdr.h_free_head;
	__u32 count = w->t->hdr.h_free_count;
	struct extref_node_hdr h;
	__u32 i;

	for (i = 0; i < count && !w->stop; i++) {
		if (lblk == 0 || lblk >= w->t->nblocks ||
		    ext2fs_test_generic_bitmap(w->seen, lblk) ||
		    xr_read_lblk(w->t, lblk, w->t->buf) ||
		    xr_check_free_block(w->t->buf, w->t->bs, w->t->seed, lblk,
					w->t->nblocks)) {
			problem(w, EXTREF_ERR_FREE_LIST, lblk,
				"free list breaks at entry %u of %u (block %u)",
				i + 1, count, lblk);
			return;
		}
		ext2fs_mark_generic_bitmap(w->seen, lblk);
		extref_node_hdr_decode(&h, (const void *)w->t->buf);
		lblk = h.n_next;
	}
}

static void check_accounting(struct walk *w)
{
	__u32 lblk;

	if (!w->node_failed && w->nrecords != w->t->nrecords)
		problem(w, EXTREF_ERR_HDR_NRECORDS, 0,
			"header says %llu records, tree holds %llu",
			(unsigned long long)w->t->nrecords,
			(unsigned long long)w->nrecords);
	for (lblk = 1; lblk < w->t->nblocks && !w->stop; lblk++) {
		if (lblk >= w->t->pmap_len || w->t->pmap[lblk] == 0)
			problem(w, EXTREF_ERR_INO5_SIZE, lblk,
				"block %u of inode 5 is not mapped", lblk);
		else if (!ext2fs_test_generic_bitmap(w->seen, lblk))
			problem(w, EXTREF_ERR_LOST_BLOCK, lblk,
				"block %u is neither a node nor free", lblk);
	}
}

static errcode_t walk_tree(struct walk *w)
{
	static const struct xr_bounds all = { 0, 0, 0 };
	__u32 root = w->t->hdr.h_root;
	errcode_t err;

	err = ext2fs_allocate_generic_bitmap(0, w->t->nblocks, w->t->nblocks,
					     "extref check", &w->seen);
	if (err)
		return err;
	ext2fs_mark_generic_bitmap(w->seen, 0);
	if (root)
		walk_node(w, root, w->t->depth - 1, &all);
	walk_free(w);
	if (!w->stop)
		check_accounting(w);
	ext2fs_free_generic_bitmap(w->seen);
	return 0;
}

/*
 * Check the tree committed in fs.  Returns 0 when sound, the first
 * problem's code otherwise, or an operational error (I/O, memory).
 */
errcode_t extref_check_fs(ext2_filsys fs, extref_problem_func report,
			  void *priv)
{
	struct extref_tree *t;
	struct walk w = { .report = report, .priv = priv };
	errcode_t err;

	err = xr_tree_open_header(fs, &t);
	if (err) {
		w.t = NULL;
		problem(&w, err, 0, "tree header");
		return w.cb_err ? w.cb_err : err;
	}
	w.t = t;
	err = walk_tree(&w);
	extref_tree_free(t);
	if (!err)
		err = w.cb_err;
	return err ? err : w.first;
}

errcode_t extref_tree_check(extref_tree_t t, extref_problem_func report,
			    void *priv)
{
	return extref_check_fs(t->fs, report, priv);
}
