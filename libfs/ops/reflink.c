/*
 * reflink.c --- reflink a file, or a directory tree, to a new name.
 *
 * A file's blocks gain a mapping first (counts raised and committed),
 * then the new inode is written with the same extents, then it gets its
 * name.  Copy mode gives the new file the caller's owner, a mode masked
 * by the caller's umask, fresh times, no extended attributes but the
 * label the caller gives (security.selinux, label.c); preserve mode keeps
 * the whole inode, extended attributes included (an external xattr block
 * is shared through its h_refcount), and of what it copies rather than
 * shares every field stat and getfattr show (reflink_meta.c).
 *
 * A directory tree is walked once before anything changes (scan_tree):
 * a destination inside the source, a directory reached twice and a tree
 * deeper than RL_MAX_DEPTH are refused there, so the copy, which recurses
 * once a level, can neither copy itself nor run off the C stack.
 */
#include <string.h>
#include "tree/extref_int.h"
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/* Directory levels below the source that a recursive reflink copies. */
#define RL_MAX_DEPTH	1024

struct rl {
	extref_fs_t		xfs;
	ext2_filsys		fs;
	int			flags;
	struct extref_cred	cred;
	const struct extref_cred *actor;	/* the identity checked, or NULL */
	int			sgid_dir;	/* copies made in a setgid dir */
	const char		*label;		/* copy mode: security.selinux */
	/* Hard links inside a recursive copy: source inode -> new inode. */
	ext2_ino_t		*hl_src, *hl_dst;
	size_t			hl_n, hl_cap;
	unsigned		depth;		/* reflink_dir calls active */
	extref_progress_func	progress;	/* or NULL */
	void			*progress_priv;
	__u64			done, total;	/* entries copied, to copy */
};

static int preserve(const struct rl *r)
{
	return r->flags & EXTREF_REFLINK_PRESERVE;
}

/* A copy's permission bits: the umask applied; an identity's copy
 * loses setuid and setgid, as cp's does, but for the setgid bit a
 * directory made in a setgid directory gets (inode_init_owner). */
static __u16 copy_perm(const struct rl *r, const struct ext2_inode *src)
{
	__u16 perm = src->i_mode & 07777 & ~r->cred.umask;

	if (!r->actor)
		return perm;
	perm &= ~06000;
	return r->sgid_dir && LINUX_S_ISDIR(src->i_mode) ? perm | 02000 : perm;
}

/* Metadata of a new inode in copy mode (type kept, umask applied). */
static void copy_mode_meta(const struct rl *r, const struct ext2_inode *src,
			   struct ext2_inode *dst)
{
	time_t now = xr_now(r->fs);

	memset(dst, 0, sizeof(*dst));
	dst->i_mode = (src->i_mode & LINUX_S_IFMT) | copy_perm(r, src);
	dst->i_links_count = 1;
	dst->i_atime = dst->i_ctime = dst->i_mtime = now;
	xr_set_owner(dst, r->cred.uid, r->cred.gid);
}

/* The whole on-disk inode of src, for preserve mode. */
static errcode_t read_full(ext2_filsys fs, ext2_ino_t ino, char **buf)
{
	int sz = EXT2_INODE_SIZE(fs->super);
	errcode_t err = ext2fs_get_memzero(sz, buf);

	if (!err)
		err = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)*buf,
					     sz);
	return err;
}

/*
 * Write the new inode: preserve mode from the source's full inode (empty
 * extent tree, one link, the xattr block shared), copy mode fresh.
 */
static errcode_t make_inode(struct rl *r, ext2_ino_t dir, ext2_ino_t src,
			    const struct ext2_inode *sinode, ext2_ino_t *ino)
{
	ext2_filsys fs = r->fs;
	struct ext2_inode base;
	char *full = NULL;
	blk64_t acl;
	__u32 count;
	errcode_t err;

	if (!preserve(r)) {
		copy_mode_meta(r, sinode, &base);
		err = ext2fs_inode_size_set(fs, &base, EXT2_I_SIZE(sinode));
		return err ? err : xr_new_inode(fs, dir, &base, 1, ino);
	}
	err = read_full(fs, src, &full);
	if (err)
		return err;
	err = ext2fs_new_inode(fs, dir, sinode->i_mode, 0, ino);
	if (!err) {
		struct ext2_inode *in = (struct ext2_inode *)full;
		ext2_extent_handle_t h;

		in->i_links_count = 1;
		ext2fs_iblk_set(fs, in, 0);
		memset(in->i_block, 0, sizeof(in->i_block));
		in->i_flags &= ~EXT4_INLINE_DATA_FL;
		err = ext2fs_extent_open2(fs, *ino, in, &h);
		if (!err)
			ext2fs_extent_free(h);
		acl = ext2fs_file_acl_block(fs, in);
		if (!err && acl) {
			err = ext2fs_adjust_ea_refcount3(fs, acl, NULL, +1,
							 &count, *ino);
			if (!err)
				err = ext2fs_iblk_add_blocks(fs, in, 1);
		}
		if (!err)
			err = ext2fs_write_inode_full(fs, *ino, in,
						EXT2_INODE_SIZE(fs->super));
		if (!err) {
			ext2fs_inode_alloc_stats2(fs, *ino, +1, 0);
			xr_tx_note_inode(fs, *ino);
		}
	}
	ext2fs_free_mem(&full);
	return err;
}

/*
 * Undo a reflink_file that failed after its counts were raised: the new
 * inode (never named) loses its mappings and is freed, then the counts
 * go back down.  Best effort: what it cannot undo leaks until fsck.
 */
static void unshare_new(struct rl *r, ext2_ino_t ino,
			const struct xr_map_vec *maps)
{
	struct xr_prange_vec raised = { 0 }, gone = { 0 };
	struct ext2_inode in;
	errcode_t err = 0;
	size_t i;

	/* in use only once make_inode counted it so */
	if (ino && ext2fs_test_inode_bitmap2(r->fs->inode_map, ino) &&
	    !ext2fs_read_inode(r->fs, ino, &in)) {
		if (in.i_flags & EXT4_EXTENTS_FL)
			err = xr_unmap(r->fs, ino, &in, 0, 1ULL << 32, &gone);
		if (!err)
			err = xr_drop_xattr_block(r->fs, ino, &in);
		in.i_links_count = 0;
		in.i_dtime = xr_now(r->fs);
		if (!err)
			err = ext2fs_write_inode(r->fs, ino, &in);
		if (!err) {
			ext2fs_inode_alloc_stats2(r->fs, ino, -1, 0);
			xr_tx_note_inode(r->fs, ino);
		}
	}
	for (i = 0; !err && i < maps->n; i++)
		err = xr_prange_push(&raised, maps->v[i].pblk, maps->v[i].len);
	if (!err)
		xr_release_ranges(r->xfs, &raised);
	xr_prange_vec_free(&raised);
	xr_prange_vec_free(&gone);
}

/* Reflink one regular file to NAME in DIR. */
static errcode_t reflink_file(struct rl *r, ext2_ino_t src, ext2_ino_t dir,
			      const char *name, ext2_ino_t *ret)
{
	ext2_filsys fs = r->fs;
	struct ext2_inode sinode, dinode;
	struct xr_map_vec maps = { 0 };
	struct xr_extent_plan plan = { 0 };
	ext2_ino_t ino = 0;
	errcode_t err;

	err = extref_check_modifiable(r->xfs, src);
	if (!err)
		err = ext2fs_read_inode(fs, src, &sinode);
	if (err)
		return err;
	if (!(sinode.i_flags & EXT4_EXTENTS_FL))
		return EXT2_ET_INODE_NOT_EXTENT;
	err = xr_get_mappings(fs, src, &sinode, 0, 1ULL << 32, &maps);
	/* the new tree planned (its memory, its room) before any change */
	if (!err)
		err = xr_extent_plan(fs, maps.v, maps.n, &plan);
	if (err)
		goto out;
	err = xr_share_ranges(r->xfs, &maps);
	if (err)
		goto out;
	err = make_inode(r, dir, src, &sinode, &ino);
	if (!err)
		err = ext2fs_read_inode(fs, ino, &dinode);
	/* the whole tree at once, the inode written after it (extent_bulk.c) */
	if (!err)
		err = xr_extent_plan_build(fs, ino, &dinode, &plan);
	if (!err && !preserve(r) && r->label)
		err = xr_label_set(fs, ino, r->label);
	/* The inode is whole on disk before a name points at it. */
	if (!err)
		err = io_channel_flush(fs->io);
	if (!err)
		err = xr_link(fs, dir, name, ino, EXT2_FT_REG_FILE);
	if (err)
		unshare_new(r, ino, &maps);
out:
	xr_extent_plan_free(&plan);
	xr_map_vec_free(&maps);
	if (!err && ret)
		*ret = ino;
	return err;
}

/* Bytes of a file, through the library's reader (inline data too). */
static errcode_t read_all(extref_fs_t xfs, ext2_ino_t ino, __u64 size,
			  char **buf)
{
	__u64 got;
	errcode_t err = ext2fs_get_memzero(size + 1, buf);

	if (!err)
		err = extref_pread(xfs, ino, 0, *buf, size, &got);
	return err;
}

static errcode_t set_meta(struct rl *r, ext2_ino_t ino, ext2_ino_t src_ino,
			  const struct ext2_inode *src);

/* Files that cannot share blocks are copied: inline data, symlinks. */
static errcode_t copy_inline_file(struct rl *r, ext2_ino_t src,
				  const struct ext2_inode *sinode,
				  ext2_ino_t dir, const char *name,
				  ext2_ino_t *ret)
{
	struct extref_cred c = r->cred;
	__u64 size = EXT2_I_SIZE(sinode);
	char *data = NULL;
	ext2_ino_t ino;
	errcode_t err;

	if (preserve(r)) {
		c.uid = inode_uid(*sinode);
		c.gid = inode_gid(*sinode);
		c.umask = 0;
	}
	err = read_all(r->xfs, src, size, &data);
	if (!err)
		err = extref_create_file(r->xfs, dir, name,
					 sinode->i_mode & 07777, &c, &ino);
	if (!err)
		err = extref_pwrite(r->xfs, ino, 0, data, size);
	ext2fs_free_mem(&data);
	if (!err)
		err = set_meta(r, ino, src, sinode);
	if (!err)
		*ret = ino;
	return err;
}

static errcode_t read_link_target(struct rl *r, ext2_ino_t ino,
				  const struct ext2_inode *inode, char **target)
{
	__u64 size = EXT2_I_SIZE(inode);
	errcode_t err;

	if (ext2fs_is_fast_symlink((struct ext2_inode *)inode)) {
		err = ext2fs_get_memzero(size + 1, target);
		if (!err)
			memcpy(*target, inode->i_block, size);
		return err;
	}
	return read_all(r->xfs, ino, size, target);
}

/*
 * Give a copied inode the source's metadata and extended attributes
 * (preserve: reflink_meta.c) or the caller's owner, mode and label.
 */
static errcode_t set_meta(struct rl *r, ext2_ino_t ino, ext2_ino_t src_ino,
			  const struct ext2_inode *src)
{
	struct ext2_inode in;
	errcode_t err;

	if (preserve(r))
		return xr_meta_copy(r->fs, src_ino, ino);
	err = ext2fs_read_inode(r->fs, ino, &in);
	if (err)
		return err;
	in.i_mode = (src->i_mode & LINUX_S_IFMT) | copy_perm(r, src);
	xr_set_owner(&in, r->cred.uid, r->cred.gid);
	err = ext2fs_write_inode(r->fs, ino, &in);
	if (!err && r->label)
		err = xr_label_set(r->fs, ino, r->label);
	return err;
}

static errcode_t copy_symlink(struct rl *r, ext2_ino_t src,
			      const struct ext2_inode *sinode,
			      ext2_ino_t dir, const char *name, ext2_ino_t *ino)
{
	char *target = NULL;
	errcode_t err = read_link_target(r, src, sinode, &target);

	if (!err)
		err = extref_symlink(r->xfs, dir, name, target, ino);
	ext2fs_free_mem(&target);
	return err ? err : set_meta(r, *ino, src, sinode);
}

/* Devices, FIFOs and sockets: a new inode with the same type and rdev. */
static errcode_t copy_special(struct rl *r, ext2_ino_t src,
			      const struct ext2_inode *sinode, ext2_ino_t dir,
			      const char *name, int ftype, ext2_ino_t *ino)
{
	struct ext2_inode in;
	errcode_t err;

	copy_mode_meta(r, sinode, &in);
	memcpy(in.i_block, sinode->i_block, sizeof(in.i_block));
	err = xr_new_inode(r->fs, dir, &in, 0, ino);
	if (!err)
		err = xr_link(r->fs, dir, name, *ino, ftype);
	return err ? err : set_meta(r, *ino, src, sinode);
}

static errcode_t reflink_any(struct rl *r, ext2_ino_t src, ext2_ino_t dir,
			     const char *name, ext2_ino_t *ret);

/*
 * A file an identity copies into a directory with a default ACL: its
 * mode is the source's masked by that ACL (not by the umask), and it
 * gets the ACL, as cp's open(O_CREAT) does (acl.c).
 */
static errcode_t copy_inheritable_acl(struct rl *r, ext2_ino_t dir,
				  ext2_ino_t ino, const struct ext2_inode *src)
{
	struct ext2_inode in;
	__u16 mode;
	int inherit;
	errcode_t err;

	if (!r->actor || preserve(r))
		return 0;
	mode = (src->i_mode & LINUX_S_IFMT) | (src->i_mode & 0777);
	err = xr_acl_create_mode(r->xfs, dir, &mode, &inherit);
	if (err || !inherit)
		return err;
	err = ext2fs_read_inode(r->fs, ino, &in);
	if (err)
		return err;
	in.i_mode = mode;
	err = ext2fs_write_inode(r->fs, ino, &in);
	return err ? err : xr_acl_inherit(r->xfs, dir, ino);
}

static errcode_t reflink_dir(struct rl *r, ext2_ino_t src,
			     const struct ext2_inode *sinode, ext2_ino_t dir,
			     const char *name, ext2_ino_t *ret)
{
	struct extref_dirlist e = { 0 };
	ext2_ino_t ino;
	size_t i;
	errcode_t err;

	/* scan_tree refused deeper trees; this only guards the C stack. */
	if (r->depth > RL_MAX_DEPTH)
		return EXTREF_ERR_DIR_DEPTH;
	err = extref_mkdir(r->xfs, dir, name, &ino);
	if (!err)
		err = xr_tx_split_point(r->xfs);
	if (!err)
		err = xr_dir_list(r->fs, src, 0, &e);
	r->depth++;
	for (i = 0; !err && i < e.n; i++) {
		err = reflink_any(r, e.v[i].ino, ino, e.v[i].name, NULL);
		if (!err)	/* a copy larger than the journal goes in parts */
			err = xr_tx_split_point(r->xfs);
	}
	r->depth--;
	extref_dir_list_free(&e);
	if (!err)
		err = set_meta(r, ino, src, sinode);
	if (!err && ret)
		*ret = ino;
	return err;
}

/* A source inode with several links already copied: link it again. */
static errcode_t hardlink_seen(struct rl *r, ext2_ino_t src, ext2_ino_t dir,
			       const char *name, int *done)
{
	struct ext2_inode in;
	size_t i;
	errcode_t err;

	*done = 0;
	for (i = 0; i < r->hl_n && r->hl_src[i] != src; i++)
		;
	if (i == r->hl_n)
		return 0;
	*done = 1;
	err = ext2fs_read_inode(r->fs, r->hl_dst[i], &in);
	if (err)
		return err;
	in.i_links_count++;
	err = ext2fs_write_inode(r->fs, r->hl_dst[i], &in);
	return err ? err : xr_link(r->fs, dir, name, r->hl_dst[i],
				   xr_file_type(in.i_mode));
}

static errcode_t remember_link(struct rl *r, ext2_ino_t src, ext2_ino_t dst)
{
	errcode_t err;

	if (r->hl_n == r->hl_cap) {
		size_t cap = r->hl_cap ? r->hl_cap * 2 : 16;

		err = ext2fs_resize_mem(r->hl_cap * sizeof(ext2_ino_t),
					cap * sizeof(ext2_ino_t), &r->hl_src);
		if (!err)
			err = ext2fs_resize_mem(r->hl_cap * sizeof(ext2_ino_t),
						cap * sizeof(ext2_ino_t),
						&r->hl_dst);
		if (err)
			return err;
		r->hl_cap = cap;
	}
	r->hl_src[r->hl_n] = src;
	r->hl_dst[r->hl_n++] = dst;
	return 0;
}

static errcode_t reflink_entry(struct rl *r, ext2_ino_t src, ext2_ino_t dir,
			       const char *name, ext2_ino_t *ret)
{
	struct ext2_inode s;
	ext2_ino_t ino = 0;
	int done;
	errcode_t err;

	err = ext2fs_read_inode(r->fs, src, &s);
	if (!err && !LINUX_S_ISDIR(s.i_mode) && s.i_links_count > 1)
		err = hardlink_seen(r, src, dir, name, &done);
	else
		done = 0;
	if (err || done)
		return err;
	if (LINUX_S_ISDIR(s.i_mode))
		return reflink_dir(r, src, &s, dir, name, ret);
	if (LINUX_S_ISLNK(s.i_mode))
		err = copy_symlink(r, src, &s, dir, name, &ino);
	else if (LINUX_S_ISREG(s.i_mode) && (s.i_flags & EXT4_INLINE_DATA_FL))
		err = copy_inline_file(r, src, &s, dir, name, &ino);
	else if (LINUX_S_ISREG(s.i_mode))
		err = reflink_file(r, src, dir, name, &ino);
	else
		err = copy_special(r, src, &s, dir, name,
				   xr_file_type(s.i_mode), &ino);
	if (!err && ino)
		err = copy_inheritable_acl(r, dir, ino, &s);
	if (!err && ino && s.i_links_count > 1)
		err = remember_link(r, src, ino);
	if (!err && ret)
		*ret = ino;
	return err;
}

/* One entry copied; a checksum that fails names its inode and block
 * (the deepest entry first: those above it keep its name). */
static errcode_t reflink_any(struct rl *r, ext2_ino_t src, ext2_ino_t dir,
			     const char *name, ext2_ino_t *ret)
{
	errcode_t err = reflink_entry(r, src, dir, name, ret);

	if (err)
		xr_note_damage(r->xfs, src, err);
	else if (r->progress)
		r->progress("reflinking", ++r->done, r->total,
			    r->progress_priv);
	return err;
}

struct scan_item {
	ext2_ino_t	ino;
	unsigned	depth;		/* levels below the source */
};

/* Push DIR's subdirectories (by their inodes' mode, not the entries'
 * file types) onto the walk's stack; one reached before is a loop. */
static errcode_t scan_dir(extref_fs_t xfs, struct scan_item it,
			  ext2fs_inode_bitmap seen, struct scan_item **stack,
			  size_t *n, size_t *cap)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct extref_dirlist e = { 0 };
	struct ext2_inode in;
	size_t i;
	errcode_t err;

	err = xr_dir_list(fs, it.ino, 0, &e);
	if (err)
		xr_note_damage(xfs, it.ino, err);
	for (i = 0; !err && i < e.n; i++) {
		err = ext2fs_read_inode(fs, e.v[i].ino, &in);
		if (err || !LINUX_S_ISDIR(in.i_mode))
			continue;
		if (ext2fs_test_inode_bitmap2(seen, e.v[i].ino))
			err = EXTREF_ERR_DIR_LOOP;
		else if (it.depth >= RL_MAX_DEPTH)
			err = EXTREF_ERR_DIR_DEPTH;
		else
			err = xr_grow(stack, cap, *n, sizeof(**stack));
		if (err)
			break;
		ext2fs_mark_inode_bitmap2(seen, e.v[i].ino);
		(*stack)[(*n)++] = (struct scan_item){ e.v[i].ino,
						       it.depth + 1 };
	}
	extref_dir_list_free(&e);
	return err;
}

/* What a recursive copy will take: inodes, and blocks besides data. */
struct need {
	__u64	inodes, blocks;
	__u64	max_inodes;	/* stop counting past what is free */
};

#define COUNT_MAX_DEPTH	4096	/* a deeper source is refused */

static errcode_t count_tree(struct rl *r, ext2_ino_t src, int depth,
			    struct need *nd)
{
	struct extref_dirlist e = { 0 };
	struct ext2_inode s;
	blk64_t own;
	size_t i;
	errcode_t err;

	err = ext2fs_read_inode(r->fs, src, &s);
	if (!err)
		err = xr_perm_reflink_src(r->xfs, r->actor, src, &s,
					  preserve(r));
	if (err)
		return err;
	nd->inodes++;
	own = ext2fs_get_stat_i_blocks(r->fs, &s) / (r->fs->blocksize / 512);
	if (LINUX_S_ISREG(s.i_mode) && (s.i_flags & EXT4_INLINE_DATA_FL)) {
		nd->blocks += xr_size_blocks(r->fs, EXT2_I_SIZE(&s));
	} else if (LINUX_S_ISREG(s.i_mode)) {
		/* shared, not copied; its extent tree is rebuilt (at worst
		 * of half-full nodes) and must be readable to the end */
		err = extref_check_modifiable(r->xfs, src);
		if (!err && !(s.i_flags & EXT4_EXTENTS_FL))
			err = EXT2_ET_INODE_NOT_EXTENT;
		if (!err)
			err = xr_extent_tree_verify(r->fs, src, &s, &own);
		if (err) {
			xr_note_damage(r->xfs, src, err);
			return err;
		}
		nd->blocks += 2 * own;
	} else {
		nd->blocks += own;	/* a directory, a slow symlink: copied */
	}
	if (!LINUX_S_ISDIR(s.i_mode) || nd->inodes > nd->max_inodes)
		return 0;
	if (depth >= COUNT_MAX_DEPTH)
		return EXT2_ET_DIR_CORRUPTED;
	nd->blocks += 2;	/* growing into an htree adds two blocks */
	err = xr_dir_list(r->fs, src, 0, &e);
	for (i = 0; !err && i < e.n && nd->inodes <= nd->max_inodes; i++)
		err = count_tree(r, e.v[i].ino, depth + 1, nd);
	extref_dir_list_free(&e);
	return err;
}

/*
 * Walk the tree of directory SRC before anything changes, with a stack
 * on the heap: DEST (the new name's directory) inside it, a directory
 * reached twice or more than RL_MAX_DEPTH levels are refused.
 */
static errcode_t scan_tree(extref_fs_t xfs, ext2_ino_t src, ext2_ino_t dest)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	ext2fs_inode_bitmap seen = NULL;
	struct scan_item *stack = NULL, it;
	size_t n = 0, cap = 0;
	errcode_t err;

	err = ext2fs_allocate_inode_bitmap(fs, "reflink tree", &seen);
	if (!err)
		err = xr_grow(&stack, &cap, n, sizeof(*stack));
	if (err)
		goto cleanup;
	ext2fs_mark_inode_bitmap2(seen, src);
	stack[n++] = (struct scan_item){ src, 0 };
	while (!err && n > 0) {
		it = stack[--n];
		if (it.ino == dest)
			err = EXTREF_ERR_INTO_ITSELF;
		else
			err = scan_dir(xfs, it, seen, &stack, &n, &cap);
	}
cleanup:
	ext2fs_free_mem(&stack);
	if (seen)
		ext2fs_free_inode_bitmap(seen);
	return err;
}

/*
 * Refuse a recursive copy the filesystem has no room for before making
 * anything: one inode per source inode (hard links counted each time,
 * which only overcounts), and the blocks of the directories and of what
 * is copied rather than shared.
 */
static errcode_t tree_room(struct rl *r, ext2_ino_t src)
{
	struct need nd = { 0, 0, r->fs->super->s_free_inodes_count };
	errcode_t err = count_tree(r, src, 0, &nd);

	if (!err && nd.inodes > nd.max_inodes)
		err = EXT2_ET_INODE_ALLOC_FAIL;
	if (!err && nd.blocks + XR_EXTENT_SLACK >
		    ext2fs_free_blocks_count(r->fs->super))
		err = EXT2_ET_BLOCK_ALLOC_FAIL;
	/* its one commit must fit the journal (reflink_publish.c) */
	if (!err)
		err = xr_publish_check(r->xfs, nd.inodes, nd.blocks);
	r->total = nd.inodes;
	return err;
}

/*
 * Remove what a failed recursive copy made under NAME in DIR, deepest
 * first, through the ordinary unlink (which lowers the counts raised).
 */
static errcode_t remove_tree(struct rl *r, ext2_ino_t dir, const char *name,
			     int depth)
{
	struct extref_dirlist e = { 0 };
	struct ext2_inode in;
	ext2_ino_t ino;
	size_t i;
	errcode_t err;

	err = xr_lookup(r->fs, dir, name, &ino);
	if (!err)
		err = ext2fs_read_inode(r->fs, ino, &in);
	if (err)
		return err;
	if (!LINUX_S_ISDIR(in.i_mode))
		return extref_unlink(r->xfs, dir, name, 0);
	if (depth >= COUNT_MAX_DEPTH)
		return EXT2_ET_DIR_CORRUPTED;
	err = xr_dir_list(r->fs, ino, 0, &e);
	for (i = 0; !err && i < e.n; i++)
		err = remove_tree(r, ino, e.v[i].name, depth + 1);
	extref_dir_list_free(&e);
	return err ? err : extref_unlink(r->xfs, dir, name, EXTREF_UNLINK_DIR);
}

/* The options a reflink may not combine, checked before anything else. */
static errcode_t check_opts(const struct extref_reflink_opts *o)
{
	size_t i;

	if (!o || (o->flags & ~(EXTREF_REFLINK_PRESERVE |
				EXTREF_REFLINK_RECURSIVE)))
		return EXT2_ET_INVALID_ARGUMENT;
	for (i = 0; i < sizeof(o->reserved) / sizeof(o->reserved[0]); i++)
		if (o->reserved[i])
			return EXT2_ET_INVALID_ARGUMENT;
	/* as cp: a snapshot keeps its source's label, it gets no other */
	if (o->label && (o->flags & EXTREF_REFLINK_PRESERVE))
		return EXT2_ET_INVALID_ARGUMENT;
	return o->label ? extref_label_check(o->label) : 0;
}

/* One transaction (txn.c): extref_reflink2's. */
errcode_t extref_reflink(extref_fs_t xfs, ext2_ino_t src, ext2_ino_t dir,
			 const char *name, int flags,
			 const struct extref_cred *cred, ext2_ino_t *ret_ino)
{
	struct extref_reflink_opts o = { .flags = flags, .cred = cred };

	return extref_reflink2(xfs, src, dir, name, &o, ret_ino);
}

static errcode_t reflink2_op(extref_fs_t xfs, ext2_ino_t src, ext2_ino_t dir,
			  const char *name,
			  const struct extref_reflink_opts *opts,
			  ext2_ino_t *ret_ino)
{
	struct rl r = { .xfs = xfs, .fs = extref_fs_ext2(xfs) };
	struct ext2_inode s;
	int flags;
	errcode_t err;

	xr_fs_set_damage(xfs, 0, 0);
	r.flags = flags = opts ? opts->flags : 0;
	r.label = opts ? opts->label : NULL;
	err = check_opts(opts);
	if (err)
		return err;
	if (flags & EXTREF_REFLINK_RECURSIVE) {
		r.progress = opts->progress;
		r.progress_priv = opts->progress_priv;
	}
	if (opts->cred)
		r.cred = *opts->cred;
	else
		extref_cred_current(&r.cred);
	r.actor = xr_actor(xfs);
	if (r.actor) {		/* the copy is the caller's */
		r.cred.uid = r.actor->uid;
		r.cred.gid = r.actor->gid;
		r.cred.umask = r.actor->umask;
	}
	err = extref_check_modifiable(xfs, dir);
	if (!err)
		err = extref_check_modifiable(xfs, src);
	if (!err)
		err = xr_read_inode(r.fs, src, &s);
	if (!err)
		err = xr_perm_reflink_src(xfs, r.actor, src, &s, preserve(&r));
	if (!err)
		err = xr_may_create_name(xfs, dir, name);
	if (!err && r.actor)	/* a setgid directory's group */
		err = xr_new_group(xfs, dir, &r.cred.gid, &r.sgid_dir);
	if (err)
		return err;
	if (LINUX_S_ISDIR(s.i_mode) && !(flags & EXTREF_REFLINK_RECURSIVE))
		return EXTREF_ERR_IS_DIR;
	if (!LINUX_S_ISDIR(s.i_mode) && !LINUX_S_ISREG(s.i_mode))
		return EXTREF_ERR_NOT_REG;
	if (LINUX_S_ISDIR(s.i_mode))
		err = scan_tree(xfs, src, dir);
	if (!err && LINUX_S_ISDIR(s.i_mode))
		err = tree_room(&r, src);
	if (!err && preserve(&r))
		err = xr_preserve_check(r.fs, src);
	if (!err)
		err = xr_quota_check_reflink(xfs, src, dir, flags, &r.cred);
	if (err)
		return err;
	/* One transaction whatever its size: the blocks it allocates go in
	 * place early, the rest in one commit (txn/txn_split.c). */
	err = xr_tx_spill_on(xfs);
	if (err)
		return err;
	/* Checked: the copy's own steps are not checked again. */
	xr_perm_hold(xfs, +1);
	err = reflink_any(&r, src, dir, name, ret_ino);
	/* A copy that failed half-way is taken back out (with a journal,
	 * the rollback does it). */
	if (err && LINUX_S_ISDIR(s.i_mode) && !extref_fs_journaled(xfs) &&
	    xr_name_free(r.fs, dir, name))
		remove_tree(&r, dir, name, 0);
	xr_perm_hold(xfs, -1);
	ext2fs_free_mem(&r.hl_src);
	ext2fs_free_mem(&r.hl_dst);
	return xr_quota_end(xfs, err);
}

/* One transaction (txn.c); one too big for the journal grows it and
 * runs again (reflink_publish.c). */
errcode_t extref_reflink2(extref_fs_t xfs, ext2_ino_t src, ext2_ino_t dir,
			  const char *name,
			  const struct extref_reflink_opts *opts,
			  ext2_ino_t *ret_ino)
{
	errcode_t err;
	int tries = 0;

	do {
		err = xr_tx_begin(xfs);
		if (err)
			return err;
		err = xr_tx_end(xfs, reflink2_op(xfs, src, dir, name, opts,
						 ret_ino));
	} while (opts && (opts->flags & EXTREF_REFLINK_RECURSIVE) &&
		 xr_publish_grow(xfs, &err, &tries));
	return err;
}
