/*
 * mappings.c --- a file's extents with their shared state.
 */
#include "extent/xr_extent.h"

struct split {
	const struct xr_map	*m;
	blk64_t			pos;	/* next physical block to report */
	extref_mapping_func	func;
	void			*priv;
	errcode_t		stop;	/* what func returned, when not 0 */
};

static errcode_t emit(struct split *s, blk64_t end, int shared)
{
	struct extref_mapping out;

	if (end <= s->pos)
		return 0;
	out.pblk = s->pos;
	out.lblk = s->m->lblk + (s->pos - s->m->pblk);
	out.len = end - s->pos;
	out.unwritten = s->m->uninit;
	out.shared = shared;
	s->pos = end;
	s->stop = s->func(&out, s->priv);
	return s->stop;
}

static errcode_t on_rec(const struct extref_rec *r, void *priv)
{
	struct split *s = priv;

	if (emit(s, r->start, 0) || emit(s, r->start + r->len, 1))
		return EXTREF_ITER_STOP;	/* s->stop says why */
	return 0;
}

errcode_t extref_iterate_mappings(extref_fs_t xfs, ext2_ino_t ino,
				  extref_mapping_func func, void *priv)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	extref_tree_t t = extref_fs_tree(xfs);
	struct ext2_inode inode;
	struct xr_map_vec maps = { 0 };
	struct split s = { .func = func, .priv = priv };
	errcode_t err;
	size_t i;

	err = ext2fs_read_inode(fs, ino, &inode);
	if (!err)
		err = xr_get_mappings(fs, ino, &inode, 0, 1ULL << 32, &maps);
	for (i = 0; !err && !s.stop && i < maps.n; i++) {
		s.m = &maps.v[i];
		s.pos = s.m->pblk;
		if (t)
			err = extref_tree_iterate(t, s.m->pblk, s.m->len, 1,
						  on_rec, &s);
		if (!err && !s.stop)
			emit(&s, s.m->pblk + s.m->len, 0);
	}
	xr_map_vec_free(&maps);
	if (!err && s.stop != EXTREF_ITER_STOP)
		err = s.stop;
	return err;
}
