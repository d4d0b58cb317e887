/*
 * update.c --- extref_update_dir: a host directory into an existing
 * image, sharing the data the image already holds (update_int.h).
 *
 * The whole update is one atomic transaction of the image's journal,
 * whatever its size: the blocks it allocates (new directories' and
 * files' metadata blocks, the tree's new nodes, the inode table blocks
 * of new inodes past the used part of their group's table) are written
 * in place early, at the split points between two entries of the source
 * (update_walk.c) once half a journal's worth is held, and at the commit
 * (xr_tx_spill_inodes_on, txn/txn_split.c); only the blocks that were in
 * use before go through the journal, in the one commit at the end.  A
 * crash before that commit block leaves the image as it was (new bytes
 * in free blocks and unused inode slots only), after it the whole
 * update: never a committed part (docs/TRANSACTIONS.md).  An update whose in-use blocks
 * outgrow the journal is rolled back (EXTREF_ERR_TXN_TOO_BIG), the
 * journal grown to hold it (extref_journal_fit, txn/journal_grow.c) and
 * the update run again from the start, one transaction still; unless
 * EXTREF_UPDATE_KEEP_JOURNAL or no room, when it stays refused (a split
 * point ends it as soon as its in-use blocks outgrow the journal it may
 * have).  Inside it the update is the
 * library's own operation (xr_tx_begin): its writes keep the open's
 * verification standing (xr_fs_verified).  Quota usage, where the image
 * keeps quotas, is counted again at the end, inside the transaction.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "update_int.h"
#include "journal/xr_journal.h"
#include "txn/xr_txio.h"
#include "image/xr_seen.h"

static errcode_t up_init(extref_fs_t xfs, struct extref_update *u,
			 struct xr_upd *up)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct xr_pop *p = &up->p;
	errcode_t err;

	up->xfs = xfs;
	up->fs = fs;
	up->u = u;
	xr_seen_copied(xfs);	/* the source's times, not the clock's */
	up->preq.flags = u->flags & (EXTREF_POP_ALL_ROOT | EXTREF_POP_EPOCH);
	up->preq.epoch = u->epoch;
	p->fs = fs;
	p->req = &up->preq;
	p->isz = EXT2_INODE_SIZE(fs->super);
	err = xr_op_begin(xfs);		/* read-write, a tree, bitmaps */
	if (!err)
		err = ext2fs_get_memzero(p->isz, &p->in);
	if (!err)	/* a slow symlink's target is staged there */
		err = ext2fs_get_mem(XR_POP_STAGE_BYTES, &p->stage);
	if (!err)
		err = ext2fs_get_mem(fs->blocksize, &p->blk);
	if (!err)
		err = ext2fs_get_memzero(fs->blocksize, &p->zero);
	if (!err)
		err = ext2fs_get_mem(XR_POP_STAGE_BYTES, &up->a);
	if (!err)
		err = ext2fs_get_mem(XR_POP_STAGE_BYTES, &up->b);
	if (!err)
		err = xr_upd_index_init(up);
	return err;
}

static void up_done(struct xr_upd *up)
{
	ext2fs_free_mem(&up->p.in);
	ext2fs_free_mem(&up->p.stage);
	ext2fs_free_mem(&up->p.blk);
	ext2fs_free_mem(&up->p.zero);
	ext2fs_free_mem(&up->a);
	ext2fs_free_mem(&up->b);
	ext2fs_free_mem(&up->bh);
	xr_upd_index_free(&up->ix);
	xr_pop_table_free(&up->links);
	ext2fs_free_mem(&up->xa.v);
	ext2fs_free_mem(&up->xa.store);
}

static errcode_t is_dir(struct xr_upd *up, const char *path,
			 ext2_ino_t *ino)
{
	struct ext2_inode inode;
	errcode_t err = extref_namei(up->xfs, EXT2_ROOT_INO, EXT2_ROOT_INO,
				     path, EXTREF_NAMEI_FOLLOW, ino);

	if (!err)
		err = ext2fs_read_inode(up->fs, *ino, &inode);
	if (!err && !LINUX_S_ISDIR(inode.i_mode))
		err = EXTREF_ERR_NOT_DIR;
	return err;
}

/*
 * The directory the source goes into: *ino, or 0 when its last
 * component is missing in a directory that exists (up->at_dir,
 * up->at_name): the update makes it, as rsync makes its destination.
 * A symlink to a directory in the image is followed; one whose target
 * does not resolve is not a directory (EXTREF_ERR_NOT_DIR), as a
 * regular file is: the last component exists, nothing is made beside it.
 */
static errcode_t target_dir(struct xr_upd *up, const char *at,
			    ext2_ino_t *ino)
{
	char parent[4096];
	size_t len = strlen(at), cut;
	errcode_t err = is_dir(up, at, ino);

	if (err != EXT2_ET_FILE_NOT_FOUND)
		return err;
	if (!extref_namei(up->xfs, EXT2_ROOT_INO, EXT2_ROOT_INO, at, 0, ino))
		return EXTREF_ERR_NOT_DIR;
	while (len > 1 && at[len - 1] == '/')
		len--;
	for (cut = len; cut && at[cut - 1] != '/'; cut--)
		;
	if (len - cut > EXT2_NAME_LEN || cut >= sizeof(parent) ||
	    (len - cut == 1 && at[cut] == '.') ||
	    (len - cut == 2 && !strncmp(at + cut, "..", 2)))
		return err;
	memcpy(parent, at, cut);
	parent[cut ? cut : 0] = 0;
	memcpy(up->at_name, at + cut, len - cut);
	up->at_name[len - cut] = 0;
	*ino = 0;
	return is_dir(up, cut ? parent : ".", &up->at_dir);
}

/* A missing --at: made with the source root's owner, mode and times. */
static errcode_t make_target(struct xr_upd *up, const char *dir,
			     ext2_ino_t *ino)
{
	struct xr_pop_meta m;
	struct statx st;

	if (statx(AT_FDCWD, dir, 0, STATX_BASIC_STATS | STATX_BTIME, &st) < 0)
		return errno ? (errcode_t)errno : EXT2_ET_FILE_NOT_FOUND;
	xr_pop_meta_of(&st, &m);
	return xr_pop_mkdir(&up->p, up->at_dir, up->at_name, &m, ino);
}

static errcode_t update_op(struct xr_upd *up, const char *dir,
			   ext2_ino_t at)
{
	errcode_t err = xr_upd_index_image(up);

	if (!err && up->layer)
		err = xr_upd_layer(up, up->layer_fd);
	else if (!err && !at)
		err = make_target(up, dir, &at);
	if (!err && !up->layer)
		err = xr_upd_walk(up, dir, at);
	if (!err)
		err = extref_quota_recompute(up->xfs);
	return err;
}

/* Inside the atomic transaction, the library's own operation: its
 * writes (the populate makers') are not an outsider's raw edits; the
 * blocks it allocates go in place early (one commit at the end).  One
 * that may grow the journal runs on past the journal it has, up to the
 * one the free space allows, so that its refusal says what it needs. */
static errcode_t own_op(struct xr_upd *up, const char *dir, ext2_ino_t at)
{
	errcode_t err = xr_tx_begin(up->xfs);

	if (err)
		return err;
	err = xr_tx_spill_inodes_on(up->xfs);
	if (!(up->u->flags & EXTREF_UPDATE_KEEP_JOURNAL))
		xr_tx_set_ceiling(up->xfs, xr_journal_grow_limit(up->xfs));
	return xr_tx_end(up->xfs, err ? err : update_op(up, dir, at));
}

/* A failed end whose commit was written (the log holds it: a write in
 * place after it failed): the update is committed all the same. */
static int logged(extref_fs_t xfs)
{
	struct xr_journal *j = xr_tx_journal(xfs);

	return j && xr_journal_dirty(j);
}

/* The update: one atomic transaction (no part committed before its
 * end) on an image with a journal, without one as it comes. */
static errcode_t commit(struct xr_upd *up, const char *dir, ext2_ino_t at)
{
	errcode_t err = extref_tx_begin2(up->xfs, 0);

	if (err)
		return err;
	err = own_op(up, dir, at);
	xr_upd_say(up->u, EXTREF_NOTE_WRITING, 1);
	err = extref_tx_end(up->xfs, err);
	xr_upd_say(up->u, EXTREF_NOTE_WRITTEN, !err || logged(up->xfs));
	return err;
}

void xr_upd_say(const struct extref_update *u, int what, unsigned int n)
{
	if (u->note)
		u->note(what, n, u->priv);
}

static errcode_t update_dir(extref_fs_t xfs, const char *dir,
			    struct extref_update *u)
{
	struct xr_upd *up;
	ext2_ino_t at = 0;
	errcode_t err;

	u->entries = u->files_kept = u->files_linked = 0;
	u->blocks_shared = u->blocks_written = u->removed = 0;
	u->where = u->why = NULL;
	err = ext2fs_get_memzero(sizeof(*up), &up);
	if (err)
		return err;
	err = up_init(xfs, u, up);
	if (!err) {
		err = target_dir(up, u->at ? u->at : "/", &at);
		if (err)
			xr_pop_fail(&up->p, u->at ? u->at : "/", NULL);
	}
	if (!err && at)		/* a new target has nothing in the way */
		err = xr_upd_check(up, dir, at);
	if (!err)
		err = xr_upd_verify(up);	/* update_verify.c */
	if (!err)
		err = commit(up, dir, at);
	u->where = up->preq.where;
	u->why = up->preq.why;
	up_done(up);
	ext2fs_free_mem(&up);
	return err;
}

static errcode_t update_layer(extref_fs_t xfs, int fd,
			     struct extref_update *u)
{
	struct xr_upd *up;
	errcode_t err;

	u->entries = u->files_kept = u->files_linked = 0;
	u->blocks_shared = u->blocks_written = u->removed = 0;
	u->where = u->why = NULL;
	if (u->at || (u->flags & EXTREF_UPDATE_DELETE))
		return EXT2_ET_INVALID_ARGUMENT;
	err = ext2fs_get_memzero(sizeof(*up), &up);
	if (err)
		return err;
	up->layer = 1;
	up->layer_fd = fd;
	err = up_init(xfs, u, up);
	if (!err)
		err = xr_upd_verify(up);	/* update_verify.c */
	if (!err)
		err = commit(up, NULL, EXT2_ROOT_INO);
	u->where = up->preq.where;
	u->why = up->preq.why;
	up_done(up);
	ext2fs_free_mem(&up);
	return err;
}

/*
 * An update whose in-use blocks outgrow the journal was rolled back
 * (EXTREF_ERR_TXN_TOO_BIG, the image as it was): the journal grows to
 * hold it (extref_journal_fit: refused, nothing changed, without room)
 * and the update runs again from the start, as one transaction still; a
 * few times, should the new run touch more than the measure said.  The
 * journal's growth is counted in u->journal_grown.
 */
#define FIT_TRIES	3

static int grow_again(extref_fs_t xfs, struct extref_update *u,
		      errcode_t *err, int *tries)
{
	blk64_t before;
	errcode_t e;

	if (*err != EXTREF_ERR_TXN_TOO_BIG || *tries >= FIT_TRIES ||
	    (u->flags & EXTREF_UPDATE_KEEP_JOURNAL) || !xr_tx_journal(xfs))
		return 0;
	(*tries)++;
	before = xr_journal_len(xr_tx_journal(xfs));
	xr_upd_say(u, EXTREF_NOTE_WRITING, 2);
	e = extref_journal_fit(xfs);
	xr_upd_say(u, EXTREF_NOTE_WRITTEN, 0);
	if (e) {
		*err = e;
		return 0;
	}
	u->journal_grown += xr_journal_len(xr_tx_journal(xfs)) - before;
	extref_update_free(u);
	return 1;
}

errcode_t extref_update_dir(extref_fs_t xfs, const char *dir,
			    struct extref_update *u)
{
	errcode_t err;
	int tries = 0;

	u->journal_grown = 0;
	err = xr_upd_fit_first(xfs, dir, u);	/* update_fit.c */
	if (err)
		return err;
	do
		err = update_dir(xfs, dir, u);
	while (grow_again(xfs, u, &err, &tries));
	return err;
}

errcode_t extref_update_layer(extref_fs_t xfs, int fd,
			      struct extref_update *u)
{
	errcode_t err;
	int tries = 0;

	u->journal_grown = 0;
	for (;;) {
		err = update_layer(xfs, fd, u);
		/* a pipe is read once only: refused, the journal as it was */
		if (err == EXTREF_ERR_TXN_TOO_BIG &&
		    lseek(fd, 0, SEEK_CUR) < 0)
			return err;
		if (!grow_again(xfs, u, &err, &tries))
			return err;
		if (lseek(fd, 0, SEEK_SET) != 0)
			return errno ? (errcode_t)errno : EXT2_ET_SHORT_READ;
	}
}

void extref_update_free(struct extref_update *u)
{
	free(u->where);
	free(u->why);
	u->where = u->why = NULL;
}
