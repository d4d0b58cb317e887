/*
 * dirclean.c --- directory blocks hold nothing stale: past each entry's
 * name, and past an index block's last entry, zeros.
 *
 * libext2fs (1.47) splits a full leaf of an indexed directory into a
 * buffer it does not clear (dx_split_leaf) and lays a new index block
 * over the leaf it read (dx_grow_tree): the bytes past the last entry
 * were heap contents, so two builds of one tree differed there.  After
 * an insertion that grew an indexed directory, the blocks it can have
 * written (the lookup's path, htree.c xr_dx_path, and the blocks added)
 * are cleaned; one that did not grow it wrote a single entry into zeroed
 * slack.  A removal clears the entry's bytes, where ext2fs_unlink leaves
 * the name in its neighbour's slack.
 */
#include <string.h>
#include "tree/extref_int.h"
#include "extref_ops_int.h"

#define ROOT_ENTRIES	32	/* the root's count and limit */
#define NODE_ENTRIES	8	/* an index block's, after an empty dirent */

static unsigned tail_bytes(ext2_filsys fs)
{
	return ext2fs_has_feature_metadata_csum(fs->super) ?
	       sizeof(struct ext2_dir_entry_tail) : 0;
}

/* Zero each entry's bytes past its name; 1 if any changed. */
static int clean_leaf(ext2_filsys fs, char *buf)
{
	unsigned off = 0, rl, nl, end = fs->blocksize - tail_bytes(fs);
	int changed = 0;

	while (off + 8 <= end) {
		struct ext2_dir_entry *d = (void *)(buf + off);

		nl = ext2fs_dirent_name_len(d);
		if (ext2fs_get_rec_len(fs, d, &rl) || rl < 8 ||
		    off + rl > fs->blocksize || nl + 8 > rl)
			break;
		rl = off + rl > end ? end - off : rl;
		for (; nl + 8 < rl; nl++) {
			changed |= d->name[nl] != 0;
			d->name[nl] = 0;
		}
		off += rl;
	}
	return changed;
}

/* Zero an index block's entries past count; 1 if any changed. */
static int clean_node(ext2_filsys fs, char *buf, unsigned off)
{
	struct ext2_dx_countlimit *cl = (void *)(buf + off);
	unsigned count = ext2fs_le16_to_cpu(cl->count);
	unsigned limit = ext2fs_le16_to_cpu(cl->limit);
	struct ext2_dx_entry *e = (void *)cl;
	char *from = (char *)(e + count), *to = (char *)(e + limit);
	int changed = 0;

	if (count > limit || off + limit * sizeof(*e) > fs->blocksize)
		return 0;
	/* with checksums, the tail's reserved word too */
	if (tail_bytes(fs) && to + sizeof(struct ext2_dx_tail) <=
			      buf + fs->blocksize)
		to += sizeof(((struct ext2_dx_tail *)0)->dt_reserved);
	for (; from < to; from++) {
		changed |= *from != 0;
		*from = 0;
	}
	return changed;
}

/*
 * Clean DIR's block lblk: an index block when node_off is not 0 (its
 * count at that offset), a leaf when 0, and when -1 whichever it is.
 */
static errcode_t clean_block(ext2_filsys fs, ext2_ino_t dir,
			     struct ext2_inode *inode, char *buf,
			     blk64_t lblk, int node_off)
{
	struct ext2_dx_countlimit *cl;
	blk64_t pblk;
	int changed;
	errcode_t err;

	err = ext2fs_bmap2(fs, dir, inode, NULL, 0, lblk, NULL, &pblk);
	if (!err && !pblk)
		err = EXT2_ET_DIR_CORRUPTED;
	if (!err)
		err = ext2fs_read_dir_block4(fs, pblk, buf, 0, dir);
	if (err)
		return err;
	if (node_off < 0 &&
	    ext2fs_get_dx_countlimit(fs, (void *)buf, &cl, &node_off))
		node_off = 0;
	changed = node_off ? clean_node(fs, buf, node_off)
			   : clean_leaf(fs, buf);
	return changed ? ext2fs_write_dir_block4(fs, pblk, buf, 0, dir) : 0;
}

/*
 * After an insertion into DIR whose path p was taken before it: when DIR
 * grew, clean the path's blocks and the blocks added.
 */
errcode_t xr_dx_clean(ext2_filsys fs, ext2_ino_t dir,
		      const struct xr_dx_path *p)
{
	struct ext2_inode inode;
	blk64_t lblk, nblocks;
	char *buf = NULL;
	unsigned i;
	errcode_t err;

	err = ext2fs_read_inode(fs, dir, &inode);
	if (err)
		return err;
	nblocks = EXT2_I_SIZE(&inode) / fs->blocksize;
	if (!p->n || nblocks <= p->nblocks)
		return 0;
	err = ext2fs_get_mem(fs->blocksize, &buf);
	for (i = 0; !err && i < p->n; i++)
		err = clean_block(fs, dir, &inode, buf, p->lblk[i],
				  i + 1 == p->n ? 0 :
				  i ? NODE_ENTRIES : ROOT_ENTRIES);
	for (lblk = p->nblocks; !err && lblk < nblocks; lblk++)
		err = clean_block(fs, dir, &inode, buf, lblk, -1);
	ext2fs_free_mem(&buf);
	return err;
}

struct unlink_ctx {
	ext2_filsys		fs;
	const char		*name;
	unsigned		len;
	ext2_ino_t		ino;
	struct ext2_dir_entry	*prev;
	errcode_t		err;
	int			done;
};

/* NAME (-> ino, if not 0) goes into the entry before it, or when first
 * in its block is emptied: its bytes zeroed either way. */
static int unlink_proc(ext2_ino_t dir EXT2FS_ATTR((unused)),
		       int entry EXT2FS_ATTR((unused)),
		       struct ext2_dir_entry *d, int offset,
		       int blocksize EXT2FS_ATTR((unused)),
		       char *buf EXT2FS_ATTR((unused)), void *priv)
{
	struct unlink_ctx *u = priv;
	struct ext2_dir_entry *prev = u->prev;
	unsigned rl, prl;

	u->prev = d;
	if (!d->inode || (unsigned)ext2fs_dirent_name_len(d) != u->len ||
	    memcmp(d->name, u->name, u->len) || (u->ino && d->inode != u->ino))
		return 0;
	u->err = ext2fs_get_rec_len(u->fs, d, &rl);
	if (!u->err && offset) {
		u->err = ext2fs_get_rec_len(u->fs, prev, &prl);
		if (!u->err)
			u->err = ext2fs_set_rec_len(u->fs, prl + rl, prev);
		if (!u->err)
			memset(d, 0, rl);
	} else if (!u->err) {
		d->inode = 0;
		ext2fs_dirent_set_name_len(d, 0);
		ext2fs_dirent_set_file_type(d, 0);
		memset(d->name, 0, rl - 8);
	}
	u->done = !u->err;
	return DIRENT_ABORT | (u->err ? 0 : DIRENT_CHANGED);
}

/*
 * NAME out of DIR's leaf lblk (the one its index names), without a scan
 * of every block: u->done when it was there.
 */
static errcode_t unlink_in_leaf(ext2_filsys fs, ext2_ino_t dir,
				blk64_t lblk, struct unlink_ctx *u)
{
	struct ext2_inode inode;
	blk64_t pblk = 0;
	char *buf = NULL;
	unsigned off = 0, rl;
	int r = 0;
	errcode_t err = ext2fs_read_inode(fs, dir, &inode);

	if (!err)
		err = ext2fs_bmap2(fs, dir, &inode, NULL, 0, lblk, NULL, &pblk);
	if (!err && pblk)
		err = ext2fs_get_mem(fs->blocksize, &buf);
	if (!err && pblk)
		err = ext2fs_read_dir_block4(fs, pblk, buf, 0, dir);
	while (!err && buf && !(r & DIRENT_ABORT) &&
	       off + 8 <= fs->blocksize) {
		struct ext2_dir_entry *d = (void *)(buf + off);

		if (ext2fs_get_rec_len(fs, d, &rl) || rl < 8 ||
		    off + rl > fs->blocksize ||
		    ext2fs_dirent_name_len(d) + 8U > rl)
			break;		/* the full scan will say */
		r = unlink_proc(dir, 0, d, off, fs->blocksize, buf, u);
		err = u->err;
		off += rl;
	}
	if (!err && (r & DIRENT_CHANGED))
		err = ext2fs_write_dir_block4(fs, pblk, buf, 0, dir);
	ext2fs_free_mem(&buf);
	return err;
}

/*
 * ext2fs_unlink(fs, dir, name, ino, 0), the entry's bytes zeroed; in an
 * indexed DIR, the leaf the index names is tried before every block.
 */
errcode_t xr_unlink_name(ext2_filsys fs, ext2_ino_t dir, const char *name,
			 ext2_ino_t ino)
{
	struct unlink_ctx u = { .fs = fs, .name = name, .len = strlen(name),
				.ino = ino };
	struct xr_dx_path path;
	errcode_t err;

	if (!(fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	err = xr_dx_path(fs, dir, name, &path);
	if (!err && path.n)
		err = unlink_in_leaf(fs, dir, path.lblk[path.n - 1], &u);
	if (!err && !u.done) {
		u.prev = NULL;
		err = ext2fs_dir_iterate2(fs, dir, DIRENT_FLAG_INCLUDE_EMPTY,
					  NULL, unlink_proc, &u);
	}
	if (!err)
		err = u.err;
	return err ? err : u.done ? 0 : EXT2_ET_DIR_NO_SPACE;
}
