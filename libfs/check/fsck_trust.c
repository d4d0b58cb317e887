/*
 * fsck_trust.c --- may a writer trust this tree?  The checker's read-only
 * passes, with each problem sorted into "only leaks space" and "a write
 * could free or overwrite a block another inode still maps".
 */
#include "extref_fsck_int.h"

struct trust {
	int	first;		/* first unsafe problem, 0 when none */
};

/*
 * Safe: a count too high (or a record of a block mapped once or not at
 * all) makes a later free stop one mapping early, so the block leaks;
 * a block of inode 5 outside the tree is a node of a commit that did not
 * happen, never handed out by the tree.  Everything else either says a
 * count is too low (a free would come while a mapping remains) or that
 * the tree or the mappings could not be read whole, so no count can be
 * shown to be high enough.
 */
static int leak_only(int code)
{
	return code == PR_X_COUNT_TOO_HIGH || code == PR_X_RECORD_UNSHARED ||
	       code == PR_X_TREE_LOST_BLOCK;
}

static void on_problem(const struct extref_problem_report *r, void *priv)
{
	struct trust *t = priv;

	if (!t->first && !leak_only(r->code))
		t->first = r->code;
}

/*
 * A read-only run of the checker on fs, which goes back as it came: the
 * passes read the block bitmap (as a tree of extents, and not the inode
 * bitmap); a writer reads both its own way when it needs them.
 */
errcode_t xr_fsck_look(ext2_filsys fs, const struct extref_fsck_opts *o,
		       struct extref_fsck_result *res)
{
	int had_block = fs->block_map != NULL;
	int had_inode = fs->inode_map != NULL;
	errcode_t err;

	err = extref_fsck(fs, o, res);
	if (!had_block && fs->block_map) {
		ext2fs_free_block_bitmap(fs->block_map);
		fs->block_map = NULL;
	}
	if (!had_inode && fs->inode_map) {
		ext2fs_free_inode_bitmap(fs->inode_map);
		fs->inode_map = NULL;
	}
	return err;
}

errcode_t extref_fsck_verify_write(ext2_filsys fs, int *first)
{
	struct extref_fsck_opts o = { .mode = EXTREF_FSCK_NO,
				      .report = on_problem,
				      /* the counts only: foreign writes are
				       * fsck.extref's to name */
				      .foreign = EXTREF_FSCK_FOREIGN_NONE };
	struct extref_fsck_result res;
	struct trust t = { 0 };
	errcode_t err;

	o.priv = &t;
	err = xr_fsck_look(fs, &o, &res);
	if (first)
		*first = t.first;
	if (err)
		return err;
	return t.first ? EXTREF_ERR_UNTRUSTED : 0;
}
