/*
 * counts.c --- the two count steps every operation is built from.
 *
 * Share: raise the count of every mapped range, then commit, before the
 * caller writes the mappings (a crash leaves counts too high).
 * Release: after the caller has written the inode without the mappings,
 * lower the counts, commit, and only then free in the bitmap the blocks
 * whose last mapping went away.
 */
#include "extref_ops_int.h"
#include "tree/extref_int.h"	/* the tree's sticky error, its depth */
#include "txn/xr_txio.h"
#include "txn/xr_zone.h"

static errcode_t count_rec(const struct extref_rec *rec, void *priv)
{
	size_t *n = priv;

	(void) rec;
	(*n)++;
	return 0;
}

/*
 * Whether the tree's next commit has room, checked before an operation
 * writes anything.  A commit writes every node it changed to a free node
 * or to a new block of inode 5.  Lowering the counts of maps changes only
 * the records they overlap (a block with no record just loses its last
 * mapping), each at most the path to it, twice over when nodes split.
 * On a filesystem with blocks to spare this always holds.
 */
errcode_t xr_tree_room(extref_fs_t xfs, const struct xr_map_vec *maps,
		       size_t more)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct extref_tree *t = extref_fs_tree(xfs);
	blk64_t need;
	size_t i, nrec = more;
	errcode_t err = 0;

	for (i = 0; !err && i < maps->n; i++)
		err = extref_tree_iterate(t, maps->v[i].pblk, maps->v[i].len,
					  0, count_rec, &nrec);
	need = 2 * ((blk64_t)t->depth + 1) * nrec;
	if (!err && t->free.n + ext2fs_free_blocks_count(fs->super) < need)
		err = EXT2_ET_BLOCK_ALLOC_FAIL;
	return err;
}

errcode_t xr_share_ranges(extref_fs_t xfs, const struct xr_map_vec *maps)
{
	extref_tree_t t = extref_fs_tree(xfs);
	errcode_t err = 0;
	size_t i, j;

	for (i = 0; !err && i < maps->n; i++)
		err = extref_tree_raise(t, maps->v[i].pblk, maps->v[i].len);
	if (err) {
		/*
		 * Undo what was raised: the tree stays as committed.  If the
		 * undo fails too, the tree in memory is not the committed one
		 * any more: it is marked broken, so that no later commit (the
		 * one at close included) writes counts no mapping needs.  The
		 * first error is the one returned.
		 */
		for (j = 0; j + 1 < i; j++) {
			errcode_t uerr = extref_tree_lower(t, maps->v[j].pblk,
							   maps->v[j].len,
							   NULL, NULL);

			if (uerr) {
				if (!t->broken)
					t->broken = uerr;
				break;
			}
		}
		return err;
	}
	return extref_tree_commit(t);
}

static errcode_t collect_freed(blk64_t start, blk64_t len, void *priv)
{
	return xr_prange_push(priv, start, len);
}

errcode_t xr_release_ranges(extref_fs_t xfs, const struct xr_prange_vec *r)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	extref_tree_t t = extref_fs_tree(xfs);
	struct xr_prange_vec freed = { 0 };
	errcode_t err = 0;
	size_t i;

	for (i = 0; !err && i < r->n; i++)
		err = extref_tree_lower(t, r->v[i].pblk, r->v[i].len,
					collect_freed, &freed);
	/* no block of the system zone, none the bitmap calls free */
	for (i = 0; !err && i < freed.n; i++)
		err = xr_zone_check_free(fs, freed.v[i].pblk, freed.v[i].len);
	if (!err)
		err = extref_tree_commit(t);
	for (i = 0; !err && i < freed.n; i++) {
		blk64_t b = freed.v[i].pblk, n = freed.v[i].len;

		while (n) {
			blk_t part = n > 0x10000000 ? 0x10000000 : n;

			xr_block_alloc_stats_range(fs, b, part, -1);
			b += part;
			n -= part;
		}
	}
	xr_prange_vec_free(&freed);
	return err;
}
