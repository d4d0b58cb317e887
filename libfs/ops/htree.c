/*
 * htree.c --- indexed (htree) directories: making one of a directory
 * whose single block is full, as the kernel does, and looking a name up
 * through the index.
 *
 * libext2fs inserts into an indexed directory through its index
 * (ext2fs_link: leaf splits, a deeper tree), but grows a linear one by
 * scanning every block, and ext2fs_lookup always scans every block.  So
 * that the thousandth reflink into one directory costs about what the
 * first did, a directory becomes indexed when its first block fills, and
 * lookups follow the index.  A lookup that the index cannot settle for
 * certain (a damaged index, a hash run continued past an index block)
 * falls back to the full scan: a name is never reported absent when it
 * is there.
 *
 * The writes: two empty blocks added, the leaves filled, block 0
 * rewritten as the root, the inode flagged.  The kernel makes them in one
 * journal transaction; here a crash between them leaves names twice or
 * an unflagged root, which e2fsck -fy repairs keeping every name once
 * (docs/FORMAT.md; tests/test_htree.py crashes after every write).
 */
#include <stdlib.h>
#include <string.h>
#include "tree/extref_int.h"
#include "extref_ops_int.h"
#include "base/xr_search.h"

#define ROOT_INFO_OFF	24	/* after "." (12) and ".." (12) */
#define ROOT_ENTRIES	32	/* after the root info (8) */
#define MAX_LEVELS	3

struct dx_ent {
	__u32		hash;
	__u32		ino;
	__u8		name_len;
	__u8		type;
	const char	*name;
};

static int hash_alg(ext2_filsys fs, int version)
{
	if (version <= EXT2_HASH_TEA &&
	    (fs->super->s_flags & EXT2_FLAGS_UNSIGNED_HASH))
		version += 3;
	return version;
}

static errcode_t name_hash(ext2_filsys fs, int version, const char *name,
			   int len, __u32 *hash)
{
	ext2_dirhash_t h = 0, minor = 0;
	errcode_t err;

	err = ext2fs_dirhash2(hash_alg(fs, version), name, len, fs->encoding,
			      0, fs->super->s_hash_seed, &h, &minor);
	*hash = h & ~1U;
	return err;
}

static int csum_tails(ext2_filsys fs)
{
	return ext2fs_has_feature_metadata_csum(fs->super);
}

/* Usable bytes of a leaf block (before the checksum tail). */
static unsigned leaf_space(ext2_filsys fs)
{
	return fs->blocksize -
	       (csum_tails(fs) ? sizeof(struct ext2_dir_entry_tail) : 0);
}

/* Lay out v[0, n) as the entries of a leaf block. */
static errcode_t fill_leaf(ext2_filsys fs, char *buf,
			   const struct dx_ent *v, size_t n)
{
	unsigned off = 0, last = 0, space = leaf_space(fs);
	struct ext2_dir_entry *d = (struct ext2_dir_entry *)buf;
	size_t i;
	errcode_t err = 0;

	memset(buf, 0, fs->blocksize);
	for (i = 0; !err && i < n; i++) {
		unsigned rl = EXT2_DIR_REC_LEN(v[i].name_len);

		if (off + rl > space)
			return EXT2_ET_DIR_NO_SPACE;
		d = (struct ext2_dir_entry *)(buf + off);
		d->inode = v[i].ino;
		ext2fs_dirent_set_name_len(d, v[i].name_len);
		ext2fs_dirent_set_file_type(d, v[i].type);
		memcpy(d->name, v[i].name, v[i].name_len);
		err = ext2fs_set_rec_len(fs, rl, d);
		last = off;
		off += rl;
	}
	/* the last entry (or the one empty entry) runs to the tail */
	if (!err)
		err = ext2fs_set_rec_len(fs, space - last, d);
	if (!err && csum_tails(fs))
		ext2fs_initialize_dirent_tail(fs, EXT2_DIRENT_TAIL(buf,
							fs->blocksize));
	return err;
}

static int by_hash(const void *a, const void *b)
{
	const struct dx_ent *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/*
 * The entries of block 0 other than "." and "..", with their hashes.  A
 * record shorter than 8 bytes plus its name, or running past the block,
 * or a block not starting with "." (12 bytes) and ".." is
 * EXT2_ET_DIR_CORRUPTED (a name is never read past its record).
 */
static errcode_t collect(ext2_filsys fs, const char *blk, int version,
			 struct dx_ent **ret, size_t *ret_n)
{
	struct dx_ent *v = NULL;
	size_t n = 0, cap = 0;
	unsigned off = 0, rl;
	errcode_t err = 0;

	while (!err && off + 8 <= leaf_space(fs)) {
		struct ext2_dir_entry *d = (struct ext2_dir_entry *)(blk + off);
		int len = ext2fs_dirent_name_len(d);

		err = ext2fs_get_rec_len(fs, d, &rl);
		if (!err && (rl < 8 || (unsigned)len + 8 > rl ||
			     off + rl > fs->blocksize))
			err = EXT2_ET_DIR_CORRUPTED;
		if (!err && off < 24 &&
		    !(off == 0 ? len == 1 && d->name[0] == '.' && rl == 12 :
		      len == 2 && d->name[0] == '.' && d->name[1] == '.'))
			err = EXT2_ET_DIR_CORRUPTED;	/* the caller reads ".." */
		if (err)
			break;
		if (d->inode && !(len == 1 && d->name[0] == '.') &&
		    !(len == 2 && d->name[0] == '.' && d->name[1] == '.')) {
			err = xr_grow(&v, &cap, n, sizeof(*v));
			if (!err) {
				v[n].ino = d->inode;
				v[n].name_len = len;
				v[n].type = ext2fs_dirent_file_type(d);
				v[n].name = d->name;
				err = name_hash(fs, version, d->name, len,
						&v[n].hash);
				n++;
			}
		}
		off += rl;
	}
	if (err) {
		ext2fs_free_mem(&v);
		return err;
	}
	qsort(v, n, sizeof(*v), by_hash);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* Block 0 as the root: ".", ".." over the rest, two index entries. */
static void fill_root(ext2_filsys fs, char *blk, ext2_ino_t dir,
		      ext2_ino_t parent, int version, __u32 split)
{
	struct ext2_dir_entry *d = (struct ext2_dir_entry *)blk;
	struct ext2_dx_root_info *info;
	struct ext2_dx_countlimit *cl;
	struct ext2_dx_entry *e;
	unsigned limit;

	memset(blk, 0, fs->blocksize);
	d->inode = dir;
	ext2fs_dirent_set_name_len(d, 1);
	ext2fs_dirent_set_file_type(d, EXT2_FT_DIR);
	d->name[0] = '.';
	ext2fs_set_rec_len(fs, 12, d);
	d = (struct ext2_dir_entry *)(blk + 12);
	d->inode = parent;
	ext2fs_dirent_set_name_len(d, 2);
	ext2fs_dirent_set_file_type(d, EXT2_FT_DIR);
	d->name[0] = d->name[1] = '.';
	ext2fs_set_rec_len(fs, fs->blocksize - 12, d);
	info = (struct ext2_dx_root_info *)(blk + ROOT_INFO_OFF);
	info->hash_version = version;
	info->info_length = 8;
	limit = (fs->blocksize - ROOT_ENTRIES -
		 (csum_tails(fs) ? sizeof(struct ext2_dx_tail) : 0)) /
		sizeof(struct ext2_dx_entry);
	cl = (struct ext2_dx_countlimit *)(blk + ROOT_ENTRIES);
	cl->limit = ext2fs_cpu_to_le16(limit);
	cl->count = ext2fs_cpu_to_le16(2);
	e = (struct ext2_dx_entry *)cl;
	e[0].block = ext2fs_cpu_to_le32(1);
	e[1].hash = ext2fs_cpu_to_le32(split);
	e[1].block = ext2fs_cpu_to_le32(2);
}

static errcode_t dir_pblk(ext2_filsys fs, ext2_ino_t dir,
			  struct ext2_inode *inode, blk64_t lblk, blk64_t *pblk)
{
	errcode_t err = ext2fs_bmap2(fs, dir, inode, NULL, 0, lblk, NULL, pblk);

	return !err && !*pblk ? EXT2_ET_DIR_CORRUPTED : err;
}

/*
 * Make DIR, a linear directory of one full block, indexed: its entries
 * split by hash over two new leaves.  Returns EXT2_ET_DIR_NO_SPACE (and
 * changes nothing) when DIR is not such a directory or the filesystem
 * has no dir_index.
 */
errcode_t xr_dx_make_indexed(ext2_filsys fs, ext2_ino_t dir)
{
	struct ext2_inode inode;
	struct dx_ent *v = NULL;
	char *blk = NULL, *leaf = NULL;
	blk64_t p0, p1, p2;
	size_t n = 0, k;
	ext2_ino_t parent;
	__u32 split;
	int version = fs->super->s_def_hash_version;
	errcode_t err;

	err = ext2fs_read_inode(fs, dir, &inode);
	if (err)
		return err;
	if (!ext2fs_has_feature_dir_index(fs->super) ||
	    (inode.i_flags & (EXT2_INDEX_FL | EXT4_INLINE_DATA_FL)) ||
	    EXT2_I_SIZE(&inode) != fs->blocksize ||
	    version > EXT2_HASH_TEA)
		return EXT2_ET_DIR_NO_SPACE;
	err = ext2fs_get_mem(fs->blocksize, &blk);
	if (!err)
		err = ext2fs_get_mem(fs->blocksize, &leaf);
	if (!err)
		err = dir_pblk(fs, dir, &inode, 0, &p0);
	if (!err)
		err = ext2fs_read_dir_block4(fs, p0, blk, 0, dir);
	if (!err)
		err = collect(fs, blk, version, &v, &n);
	if (!err && n < 2)
		err = EXT2_ET_DIR_NO_SPACE;
	if (err)
		goto out;
	parent = ((struct ext2_dir_entry *)(blk + 12))->inode;
	/* split at the middle, keeping equal hashes together if it can */
	for (k = n / 2; k < n && v[k].hash == v[k - 1].hash; k++)
		;
	if (k == n)
		for (k = n / 2; k > 1 && v[k].hash == v[k - 1].hash; k--)
			;
	split = v[k].hash | (v[k].hash == v[k - 1].hash);
	/* two empty blocks at lblk 1 and 2, then their contents */
	err = ext2fs_expand_dir(fs, dir);
	if (!err)
		err = ext2fs_expand_dir(fs, dir);
	if (!err)
		err = ext2fs_read_inode(fs, dir, &inode);
	if (!err)
		err = dir_pblk(fs, dir, &inode, 1, &p1);
	if (!err)
		err = dir_pblk(fs, dir, &inode, 2, &p2);
	if (!err)
		err = fill_leaf(fs, leaf, v, k);
	if (!err)
		err = ext2fs_write_dir_block4(fs, p1, leaf, 0, dir);
	if (!err)
		err = fill_leaf(fs, leaf, v + k, n - k);
	if (!err)
		err = ext2fs_write_dir_block4(fs, p2, leaf, 0, dir);
	if (err)
		goto out;
	fill_root(fs, blk, dir, parent, version, split);
	err = ext2fs_write_dir_block4(fs, p0, blk, 0, dir);
	if (!err) {
		inode.i_flags |= EXT2_INDEX_FL;
		err = ext2fs_write_inode(fs, dir, &inode);
	}
out:
	ext2fs_free_mem(&v);
	ext2fs_free_mem(&leaf);
	ext2fs_free_mem(&blk);
	return err;
}

struct dx_walk {
	ext2_filsys		fs;
	ext2_ino_t		dir;
	struct ext2_inode	inode;
	char			*buf;
	blk64_t			nblocks;
};

static errcode_t read_lblk(struct dx_walk *w, blk64_t lblk)
{
	blk64_t pblk;
	errcode_t err;

	if (lblk >= w->nblocks)
		return EXT2_ET_DIR_CORRUPTED;
	err = dir_pblk(w->fs, w->dir, &w->inode, lblk, &pblk);
	return err ? err : ext2fs_read_dir_block4(w->fs, pblk, w->buf, 0,
						  w->dir);
}

/* The index entries of the node in w->buf at offset off; NULL if bad. */
static struct ext2_dx_entry *dx_entries(struct dx_walk *w, unsigned off,
					unsigned *count)
{
	struct ext2_dx_countlimit *cl = (void *)(w->buf + off);
	unsigned limit = ext2fs_le16_to_cpu(cl->limit);

	*count = ext2fs_le16_to_cpu(cl->count);
	if (!*count || *count > limit ||
	    off + limit * sizeof(struct ext2_dx_entry) > w->fs->blocksize)
		return NULL;
	return (struct ext2_dx_entry *)cl;
}

/* Index of the last entry whose hash is <= hash (entry 0 has none). */
static unsigned dx_search(const struct ext2_dx_entry *e, unsigned count,
			  __u32 hash)
{
	/* entries 1 .. count-1 carry hashes, in order */
	return count ? XR_PARTITION_POINT(count - 1, i,
			ext2fs_le32_to_cpu(e[i + 1].hash) <= hash) : 0;
}

/* NAME in the leaf in w->buf: 0 found, 1 absent, -1 the block is bad. */
static int leaf_find(struct dx_walk *w, const char *name, int len,
		     ext2_ino_t *ino)
{
	unsigned off = 0, rl;

	while (off + 8 <= w->fs->blocksize) {
		struct ext2_dir_entry *d = (void *)(w->buf + off);

		if (ext2fs_get_rec_len(w->fs, d, &rl) || rl < 8 ||
		    off + rl > w->fs->blocksize ||
		    ext2fs_dirent_name_len(d) + 8U > rl)
			return -1;
		if (d->inode && ext2fs_dirent_name_len(d) == len &&
		    !memcmp(d->name, name, len)) {
			*ino = d->inode;
			return 0;
		}
		off += rl;
	}
	return 1;
}

/*
 * Down DIR's index (root in w->buf) to the bottom node for hash: *e,
 * *count and *i name its entry for the leaf.  Each index block passed
 * is noted in path (if not NULL).  Returns 0, or -1 when the index
 * cannot be followed.
 */
static int dx_descend(struct dx_walk *w, unsigned levels, __u32 hash,
		      struct ext2_dx_entry **e, unsigned *count, unsigned *i,
		      blk64_t *path)
{
	unsigned level, off = ROOT_ENTRIES;
	blk64_t lblk = 0;

	for (level = 0;; level++) {
		if (path)
			path[level] = lblk;
		*e = dx_entries(w, off, count);
		if (!*e)
			return -1;
		*i = dx_search(*e, *count, hash);
		if (level == levels)
			return 0;
		lblk = ext2fs_le32_to_cpu((*e)[*i].block) & EXT4_DX_BLOCK_MASK;
		if (read_lblk(w, lblk))
			return -1;
		off = 8;	/* an empty dirent's header, then the entries */
	}
}

/* The root's levels and NAME's hash (in w->buf the root); -1 if bad. */
static int dx_root(struct dx_walk *w, const char *name, int len,
		   unsigned *levels, __u32 *hash)
{
	struct ext2_dx_root_info *info;

	if (read_lblk(w, 0))
		return -1;
	info = (void *)(w->buf + ROOT_INFO_OFF);
	*levels = info->indirect_levels;
	if (info->reserved_zero || info->info_length != 8 ||
	    *levels >= MAX_LEVELS || info->hash_version > EXT2_HASH_TEA ||
	    name_hash(w->fs, info->hash_version, name, len, hash))
		return -1;
	return 0;
}

/*
 * Look NAME up through DIR's index: 0 with *ino, EXT2_ET_FILE_NOT_FOUND,
 * or *unsure set when only a full scan can tell.
 */
static errcode_t dx_lookup(struct dx_walk *w, const char *name, int len,
			   ext2_ino_t *ino, int *unsure)
{
	struct ext2_dx_entry *e;
	unsigned count, i, levels;
	__u32 hash, next;
	int r;

	*unsure = 1;
	if (dx_root(w, name, len, &levels, &hash) ||
	    dx_descend(w, levels, hash, &e, &count, &i, NULL))
		return 0;
	for (;;) {
		/* this leaf, then the next while the hash run goes on */
		__u32 child = ext2fs_le32_to_cpu(e[i].block) &
			      EXT4_DX_BLOCK_MASK;
		int at_end = i + 1 == count;

		next = at_end ? 0 : ext2fs_le32_to_cpu(e[i + 1].hash);
		if (read_lblk(w, child))
			return 0;
		r = leaf_find(w, name, len, ino);
		if (r < 0)
			return 0;
		if (r == 0) {
			*unsure = 0;
			return 0;
		}
		if (at_end && levels)
			return 0;	/* the run may go on further */
		if (at_end || next != (hash | 1)) {
			*unsure = 0;
			return EXT2_ET_FILE_NOT_FOUND;
		}
		/* e still points into the index block, reread it */
		if (read_lblk(w, 0))
			return 0;
		if (levels)
			return 0;
		e = dx_entries(w, ROOT_ENTRIES, &count);
		if (!e)
			return 0;
		i++;
	}
}

/*
 * The blocks an insertion of NAME into DIR passes (p->lblk[0 .. n-1]:
 * the index blocks from the root, then the leaf) and DIR's size in
 * blocks.  n is 0 when DIR has no index or it cannot be followed.
 */
errcode_t xr_dx_path(ext2_filsys fs, ext2_ino_t dir, const char *name,
		     struct xr_dx_path *p)
{
	struct dx_walk w = { .fs = fs, .dir = dir };
	struct ext2_dx_entry *e;
	unsigned count, i, levels;
	__u32 hash;
	errcode_t err;

	p->n = 0;
	err = ext2fs_read_inode(fs, dir, &w.inode);
	if (err)
		return err;
	p->nblocks = w.nblocks = EXT2_I_SIZE(&w.inode) / fs->blocksize;
	if (!(w.inode.i_flags & EXT2_INDEX_FL) ||
	    (w.inode.i_flags & EXT4_INLINE_DATA_FL))
		return 0;
	err = ext2fs_get_mem(fs->blocksize, &w.buf);
	if (err)
		return err;
	if (!dx_root(&w, name, strlen(name), &levels, &hash) &&
	    !dx_descend(&w, levels, hash, &e, &count, &i, p->lblk)) {
		p->lblk[levels + 1] = ext2fs_le32_to_cpu(e[i].block) &
				      EXT4_DX_BLOCK_MASK;
		p->n = levels + 2;
	}
	ext2fs_free_mem(&w.buf);
	return 0;
}

/* NAME in DIR (through its index when it has one), as ext2fs_lookup. */
errcode_t xr_lookup(ext2_filsys fs, ext2_ino_t dir, const char *name,
		    ext2_ino_t *ino)
{
	struct dx_walk w = { .fs = fs, .dir = dir };
	int len = strlen(name), unsure = 1;
	errcode_t err;

	err = ext2fs_read_inode(fs, dir, &w.inode);
	if (err)
		return err;
	if ((w.inode.i_flags & EXT2_INDEX_FL) &&
	    !(w.inode.i_flags & EXT4_INLINE_DATA_FL) &&
	    LINUX_S_ISDIR(w.inode.i_mode)) {
		w.nblocks = EXT2_I_SIZE(&w.inode) / fs->blocksize;
		err = ext2fs_get_mem(fs->blocksize, &w.buf);
		if (err)
			return err;
		err = dx_lookup(&w, name, len, ino, &unsure);
		ext2fs_free_mem(&w.buf);
		if (!unsure)
			return err;
	}
	return ext2fs_lookup(fs, dir, name, len, NULL, ino);
}

errcode_t extref_lookup(extref_fs_t xfs, ext2_ino_t dir, const char *name,
			ext2_ino_t *ino)
{
	return xr_lookup(extref_fs_ext2(xfs), dir, name, ino);
}
