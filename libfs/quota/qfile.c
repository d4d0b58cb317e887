/*
 * qfile.c --- read and change the v2 quota files (quota_format.h).
 *
 * Everything read is checked before use: a hostile image may carry any
 * magic, any block number, any entry count.  A file that does not hold
 * together is EXTREF_ERR_QUOTA_FILE; nothing is written from it.  The
 * tree has a fixed depth, so a walk cannot loop; the free lists are
 * checked whole (xr_qfile_verify) and then only ever taken at their
 * head.
 */
#include <string.h>
#include "quota/xr_quota.h"
#include "quota/quota_format.h"

struct xr_qfile {
	ext2_filsys	fs;
	int		type;
	ext2_ino_t	ino;
	ext2_file_t	file;
	struct xr_qt_disk_header hdr;	/* CPU order */
	unsigned char	buf[XR_QT_BLKSIZE];
};

static const __u32 magics[XR_QTYPES] = {
	XR_QT_USR_MAGIC, XR_QT_GRP_MAGIC, XR_QT_PRJ_MAGIC
};

ext2_ino_t xr_quota_inum(ext2_filsys fs, int type)
{
	struct ext2_super_block *sb = fs->super;

	if (!ext2fs_has_feature_quota(sb))
		return 0;
	switch (type) {
	case EXTREF_QUOTA_USER:
		return sb->s_usr_quota_inum;
	case EXTREF_QUOTA_GROUP:
		return sb->s_grp_quota_inum;
	case EXTREF_QUOTA_PROJECT:
		return ext2fs_has_feature_project(sb) ? sb->s_prj_quota_inum
						      : 0;
	}
	return 0;
}

static errcode_t read_blk(struct xr_qfile *qf, __u32 blk, void *buf)
{
	unsigned int got;
	errcode_t err;

	if (blk >= qf->hdr.dqi_blocks)
		return EXTREF_ERR_QUOTA_FILE;
	err = ext2fs_file_llseek(qf->file, (__u64)blk * XR_QT_BLKSIZE,
				 EXT2_SEEK_SET, NULL);
	if (!err)
		err = ext2fs_file_read(qf->file, buf, XR_QT_BLKSIZE, &got);
	if (!err && got != XR_QT_BLKSIZE)
		err = EXTREF_ERR_QUOTA_FILE;
	return err;
}

static errcode_t write_blk(struct xr_qfile *qf, __u32 blk, const void *buf)
{
	unsigned int put;
	errcode_t err;

	err = ext2fs_file_llseek(qf->file, (__u64)blk * XR_QT_BLKSIZE,
				 EXT2_SEEK_SET, NULL);
	if (!err)
		err = ext2fs_file_write(qf->file, buf, XR_QT_BLKSIZE, &put);
	if (!err && put != XR_QT_BLKSIZE)
		err = EXT2_ET_SHORT_WRITE;
	return err;
}

static void hdr_from_disk(const struct xr_qt_disk_header *d,
			  struct xr_qt_disk_header *c)
{
	const __u32 *s = (const __u32 *)d;
	__u32 *t = (__u32 *)c;

	for (size_t i = 0; i < sizeof(*d) / 4; i++)
		t[i] = ext2fs_le32_to_cpu(s[i]);
}

static errcode_t write_hdr(struct xr_qfile *qf)
{
	unsigned char b[XR_QT_BLKSIZE];
	struct xr_qt_disk_header d;
	errcode_t err = read_blk(qf, 0, b);

	if (err)
		return err;
	hdr_from_disk(&qf->hdr, &d);	/* the same swap both ways */
	memcpy(b, &d, sizeof(d));
	return write_blk(qf, 0, b);
}

/* The header and info: this type's magic, version 1, sane numbers. */
static errcode_t check_hdr(struct xr_qfile *qf)
{
	struct xr_qt_disk_header *h = &qf->hdr;
	__u64 size = EXT2_I_SIZE(ext2fs_file_get_inode(qf->file));

	if (h->dqh_magic != magics[qf->type] ||
	    h->dqh_version != XR_QT_VERSION)
		return EXTREF_ERR_QUOTA_FILE;
	if (h->dqi_blocks <= XR_QT_TREEOFF ||
	    (__u64)h->dqi_blocks * XR_QT_BLKSIZE > size ||
	    h->dqi_free_blk >= h->dqi_blocks ||
	    h->dqi_free_entry >= h->dqi_blocks ||
	    (h->dqi_free_blk && h->dqi_free_blk <= XR_QT_TREEOFF) ||
	    (h->dqi_free_entry && h->dqi_free_entry <= XR_QT_TREEOFF))
		return EXTREF_ERR_QUOTA_FILE;
	return 0;
}

/*
 * The inode a superblock names for a quota file: inodes 3 and 4 for user
 * and group quota (where mke2fs, tune2fs and the kernel put them), a
 * regular file in use that is neither reserved nor the root for project
 * quota.
 */
errcode_t xr_quota_inum_check(ext2_filsys fs, int type, ext2_ino_t ino)
{
	struct ext2_inode inode;
	errcode_t err;

	if (!ino || ino > fs->super->s_inodes_count)
		return EXTREF_ERR_QUOTA_FILE;
	if ((type == EXTREF_QUOTA_USER && ino != EXT4_USR_QUOTA_INO) ||
	    (type == EXTREF_QUOTA_GROUP && ino != EXT4_GRP_QUOTA_INO) ||
	    (type == EXTREF_QUOTA_PROJECT && ino < EXT2_FIRST_INO(fs->super)))
		return EXTREF_ERR_QUOTA_FILE;
	err = ext2fs_read_inode(fs, ino, &inode);
	if (err)
		return err;
	if (!LINUX_S_ISREG(inode.i_mode) || !inode.i_links_count ||
	    (inode.i_flags & EXT4_INLINE_DATA_FL))
		return EXTREF_ERR_QUOTA_FILE;
	return 0;
}

errcode_t xr_qfile_open(ext2_filsys fs, int type, struct xr_qfile **ret)
{
	struct xr_qfile *qf;
	ext2_ino_t ino;
	errcode_t err;

	if (type < 0 || type >= XR_QTYPES)
		return EXT2_ET_INVALID_ARGUMENT;
	ino = xr_quota_inum(fs, type);
	err = xr_quota_inum_check(fs, type, ino);
	if (err)
		return err;
	err = ext2fs_get_memzero(sizeof(*qf), &qf);
	if (err)
		return err;
	qf->fs = fs;
	qf->type = type;
	qf->ino = ino;
	err = ext2fs_file_open(fs, ino, (fs->flags & EXT2_FLAG_RW) ?
			       EXT2_FILE_WRITE : 0, &qf->file);
	if (err) {
		ext2fs_free_mem(&qf);
		return err;
	}
	qf->hdr.dqi_blocks = 1;		/* block 0 may be read */
	if (EXT2_I_SIZE(ext2fs_file_get_inode(qf->file)) < XR_QT_BLKSIZE)
		err = EXTREF_ERR_QUOTA_FILE;
	if (!err)
		err = read_blk(qf, 0, qf->buf);
	if (!err) {
		hdr_from_disk((struct xr_qt_disk_header *)qf->buf, &qf->hdr);
		err = check_hdr(qf);
	}
	if (err) {
		ext2fs_file_close(qf->file);
		ext2fs_free_mem(&qf);
		return err;
	}
	*ret = qf;
	return 0;
}

errcode_t xr_qfile_close(struct xr_qfile *qf)
{
	errcode_t err;

	if (!qf)
		return 0;
	err = ext2fs_file_close(qf->file);
	ext2fs_free_mem(&qf);
	return err;
}

__u32 xr_qfile_grace(const struct xr_qfile *qf, int inodes)
{
	return inodes ? qf->hdr.dqi_igrace : qf->hdr.dqi_bgrace;
}

static int entry_unused(const unsigned char *e)
{
	for (size_t i = 0; i < sizeof(struct xr_qt_disk_dqblk); i++)
		if (e[i])
			return 0;
	return 1;
}

static unsigned char *entry_at(unsigned char *buf, unsigned slot)
{
	return buf + sizeof(struct xr_qt_disk_dbheader) +
		slot * sizeof(struct xr_qt_disk_dqblk);
}

/* A block limit in bytes; one past 2^64-1 is 2^64-1 (none wraps to small). */
static __u64 limit_bytes(__u64 units)
{
	return units > ~(__u64)0 / XR_QT_LIMIT_UNIT ? ~(__u64)0
						    : units * XR_QT_LIMIT_UNIT;
}

static void dq_from_disk(const unsigned char *e, struct xr_dquot *dq)
{
	struct xr_qt_disk_dqblk d, marker;

	memset(&marker, 0, sizeof(marker));
	marker.dqb_itime = ext2fs_cpu_to_le64(1);
	memcpy(&d, e, sizeof(d));
	dq->id = ext2fs_le32_to_cpu(d.dqb_id);
	dq->ihard = ext2fs_le64_to_cpu(d.dqb_ihardlimit);
	dq->isoft = ext2fs_le64_to_cpu(d.dqb_isoftlimit);
	dq->curinodes = ext2fs_le64_to_cpu(d.dqb_curinodes);
	dq->bhard = limit_bytes(ext2fs_le64_to_cpu(d.dqb_bhardlimit));
	dq->bsoft = limit_bytes(ext2fs_le64_to_cpu(d.dqb_bsoftlimit));
	dq->curspace = ext2fs_le64_to_cpu(d.dqb_curspace);
	dq->btime = ext2fs_le64_to_cpu(d.dqb_btime);
	dq->itime = ext2fs_le64_to_cpu(d.dqb_itime);
	if (!memcmp(&d, &marker, sizeof(d)))
		dq->itime = 0;	/* the all-zero entry's marker */
}

static void dq_to_disk(const struct xr_dquot *dq, unsigned char *e)
{
	struct xr_qt_disk_dqblk d;

	memset(&d, 0, sizeof(d));
	d.dqb_id = ext2fs_cpu_to_le32(dq->id);
	d.dqb_ihardlimit = ext2fs_cpu_to_le64(dq->ihard);
	d.dqb_isoftlimit = ext2fs_cpu_to_le64(dq->isoft);
	d.dqb_curinodes = ext2fs_cpu_to_le64(dq->curinodes);
	d.dqb_bhardlimit = ext2fs_cpu_to_le64(dq->bhard / XR_QT_LIMIT_UNIT);
	d.dqb_bsoftlimit = ext2fs_cpu_to_le64(dq->bsoft / XR_QT_LIMIT_UNIT);
	d.dqb_curspace = ext2fs_cpu_to_le64(dq->curspace);
	d.dqb_btime = ext2fs_cpu_to_le64(dq->btime);
	d.dqb_itime = ext2fs_cpu_to_le64(dq->itime);
	memcpy(e, &d, sizeof(d));
	if (entry_unused(e))
		((struct xr_qt_disk_dqblk *)e)->dqb_itime =
			ext2fs_cpu_to_le64(1);
}

static __u32 tree_ref(const unsigned char *buf, unsigned idx)
{
	__u32 r;

	memcpy(&r, buf + 4 * idx, 4);
	return ext2fs_le32_to_cpu(r);
}

static void set_tree_ref(unsigned char *buf, unsigned idx, __u32 v)
{
	__u32 r = ext2fs_cpu_to_le32(v);

	memcpy(buf + 4 * idx, &r, 4);
}

static unsigned tree_idx(__u32 id, int depth)
{
	return (id >> ((XR_QT_DEPTH - depth - 1) * 8)) & 0xff;
}

static errcode_t read_dblk(struct xr_qfile *qf, __u32 blk, unsigned char *buf,
			   struct xr_qt_disk_dbheader *h)
{
	errcode_t err;

	if (blk <= XR_QT_TREEOFF)
		return EXTREF_ERR_QUOTA_FILE;
	err = read_blk(qf, blk, buf);
	if (err)
		return err;
	memcpy(h, buf, sizeof(*h));
	h->dqdh_next_free = ext2fs_le32_to_cpu(h->dqdh_next_free);
	h->dqdh_prev_free = ext2fs_le32_to_cpu(h->dqdh_prev_free);
	h->dqdh_entries = ext2fs_le16_to_cpu(h->dqdh_entries);
	if (h->dqdh_entries > XR_QT_PER_BLOCK ||
	    h->dqdh_next_free >= qf->hdr.dqi_blocks ||
	    h->dqdh_prev_free >= qf->hdr.dqi_blocks)
		return EXTREF_ERR_QUOTA_FILE;
	return 0;
}

static void put_dbhdr(unsigned char *buf, const struct xr_qt_disk_dbheader *h)
{
	struct xr_qt_disk_dbheader d = { 0 };

	d.dqdh_next_free = ext2fs_cpu_to_le32(h->dqdh_next_free);
	d.dqdh_prev_free = ext2fs_cpu_to_le32(h->dqdh_prev_free);
	d.dqdh_entries = ext2fs_cpu_to_le16(h->dqdh_entries);
	memcpy(buf, &d, sizeof(d));
}

/* Where id's entry is: *blk 0 when the tree has none. */
static errcode_t find_entry(struct xr_qfile *qf, __u32 id, __u32 *blk,
			    unsigned *slot)
{
	struct xr_qt_disk_dbheader h;
	__u32 b = XR_QT_TREEOFF;
	errcode_t err;
	int depth;

	*blk = 0;
	for (depth = 0; depth < XR_QT_DEPTH; depth++) {
		err = read_blk(qf, b, qf->buf);
		if (err)
			return err;
		b = tree_ref(qf->buf, tree_idx(id, depth));
		if (!b)
			return 0;
		if (b <= XR_QT_TREEOFF || b >= qf->hdr.dqi_blocks)
			return EXTREF_ERR_QUOTA_FILE;
	}
	err = read_dblk(qf, b, qf->buf, &h);
	if (err)
		return err;
	for (unsigned i = 0; i < XR_QT_PER_BLOCK; i++) {
		const unsigned char *e = entry_at(qf->buf, i);
		__u32 eid;

		memcpy(&eid, e, 4);
		if (!entry_unused(e) && ext2fs_le32_to_cpu(eid) == id) {
			*blk = b;
			*slot = i;
			return 0;
		}
	}
	return EXTREF_ERR_QUOTA_FILE;	/* the tree names a block without it */
}

errcode_t xr_qfile_get(struct xr_qfile *qf, __u32 id, struct xr_dquot *dq)
{
	errcode_t err;
	__u32 blk;
	unsigned slot = 0;

	memset(dq, 0, sizeof(*dq));
	dq->id = id;
	err = find_entry(qf, id, &blk, &slot);
	if (err || !blk)
		return err;
	dq_from_disk(entry_at(qf->buf, slot), dq);
	dq->blk = blk;
	dq->slot = slot;
	return 0;
}

/* A zeroed block: the head of the free-block list, or a new one. */
static errcode_t new_blk(struct xr_qfile *qf, __u32 *ret)
{
	struct xr_qt_disk_dbheader h;
	unsigned char z[XR_QT_BLKSIZE];
	__u32 blk = qf->hdr.dqi_free_blk;
	errcode_t err;

	if (blk) {
		err = read_dblk(qf, blk, z, &h);
		if (err)
			return err;
		if (h.dqdh_next_free == blk)
			return EXTREF_ERR_QUOTA_FILE;
		qf->hdr.dqi_free_blk = h.dqdh_next_free;
	} else {
		if (qf->hdr.dqi_blocks == 0xffffffffU)
			return EXT2_ET_FILE_TOO_BIG;
		blk = qf->hdr.dqi_blocks++;
	}
	memset(z, 0, sizeof(z));
	err = write_blk(qf, blk, z);
	if (!err)
		err = write_hdr(qf);
	if (!err)
		*ret = blk;
	return err;
}

/* A free slot for a new entry, in the first block with room. */
static errcode_t new_entry(struct xr_qfile *qf, __u32 *blk, unsigned *slot)
{
	struct xr_qt_disk_dbheader h = { 0 }, nh;
	unsigned char nb[XR_QT_BLKSIZE];
	__u32 b = qf->hdr.dqi_free_entry;
	errcode_t err;
	unsigned i;

	if (b) {
		err = read_dblk(qf, b, qf->buf, &h);
		if (!err && h.dqdh_entries >= XR_QT_PER_BLOCK)
			err = EXTREF_ERR_QUOTA_FILE;
	} else {
		err = new_blk(qf, &b);
		memset(qf->buf, 0, XR_QT_BLKSIZE);
		qf->hdr.dqi_free_entry = b;	/* an empty list's new head */
	}
	if (err)
		return err;
	for (i = 0; i < XR_QT_PER_BLOCK; i++)
		if (entry_unused(entry_at(qf->buf, i)))
			break;
	if (i == XR_QT_PER_BLOCK)
		return EXTREF_ERR_QUOTA_FILE;
	h.dqdh_entries++;
	if (h.dqdh_entries == XR_QT_PER_BLOCK) {
		/* full: off the list of blocks with room (it is the head) */
		qf->hdr.dqi_free_entry = h.dqdh_next_free;
		if (h.dqdh_next_free) {
			err = read_dblk(qf, h.dqdh_next_free, nb, &nh);
			nh.dqdh_prev_free = 0;
			put_dbhdr(nb, &nh);
			if (!err)
				err = write_blk(qf, h.dqdh_next_free, nb);
		}
		h.dqdh_next_free = h.dqdh_prev_free = 0;
	}
	put_dbhdr(qf->buf, &h);
	if (!err)
		err = write_hdr(qf);
	*blk = b;
	*slot = i;
	return err;
}

/* Link data block dblk into the tree under id, adding tree blocks. */
static errcode_t tree_insert(struct xr_qfile *qf, __u32 id, __u32 dblk)
{
	unsigned char b[XR_QT_BLKSIZE];
	__u32 cur = XR_QT_TREEOFF, next;
	errcode_t err;
	int depth;

	for (depth = 0; depth < XR_QT_DEPTH; depth++) {
		unsigned idx = tree_idx(id, depth);

		err = read_blk(qf, cur, b);
		if (err)
			return err;
		next = tree_ref(b, idx);
		if (depth == XR_QT_DEPTH - 1) {
			if (next)
				return EXTREF_ERR_QUOTA_FILE;
			set_tree_ref(b, idx, dblk);
			return write_blk(qf, cur, b);
		}
		if (next && (next <= XR_QT_TREEOFF ||
			     next >= qf->hdr.dqi_blocks))
			return EXTREF_ERR_QUOTA_FILE;
		if (!next) {
			err = new_blk(qf, &next);
			if (!err) {
				set_tree_ref(b, idx, next);
				err = write_blk(qf, cur, b);
			}
			if (err)
				return err;
		}
		cur = next;
	}
	return 0;
}

errcode_t xr_qfile_put(struct xr_qfile *qf, struct xr_dquot *dq)
{
	errcode_t err = 0;
	int added = 0;

	if (!(qf->fs->flags & EXT2_FLAG_RW))
		return EXT2_ET_RO_FILSYS;
	if (!dq->blk) {
		err = new_entry(qf, &dq->blk, &dq->slot);
		added = 1;
	} else {
		struct xr_qt_disk_dbheader h;

		err = read_dblk(qf, dq->blk, qf->buf, &h);
	}
	if (err)
		return err;
	dq_to_disk(dq, entry_at(qf->buf, dq->slot));
	err = write_blk(qf, dq->blk, qf->buf);
	if (!err && added)
		err = tree_insert(qf, dq->id, dq->blk);
	return err;
}

/*
 * Every entry reachable from the tree, in id order.  A data block holds
 * up to 14 ids and is reached once for each: an entry is reported only
 * on its own id's path.  A tree block reached twice (each has one
 * parent), or a block that is both a tree and a data block, is a corrupt
 * file.  Blocks reached are kept in bitmaps over the file's blocks
 * (rbtree: a sparse file of 2^32 blocks costs what it holds), so the
 * walk reads each tree block once and each data block at most 14 times
 * plus once; a hole reads as a block without references.  The cost is
 * linear in the file's size.
 */
struct walk {
	struct xr_qfile		*qf;
	xr_dquot_func		func;
	void			*priv;
	ext2fs_block_bitmap	tree, data;	/* blocks reached */
};

static errcode_t walk_data(struct walk *w, __u32 blk, __u32 id)
{
	unsigned char b[XR_QT_BLKSIZE];
	struct xr_qt_disk_dbheader h;
	struct xr_dquot dq;
	errcode_t err;

	if (ext2fs_test_block_bitmap2(w->tree, blk))
		return EXTREF_ERR_QUOTA_FILE;
	ext2fs_mark_block_bitmap2(w->data, blk);
	err = read_dblk(w->qf, blk, b, &h);
	for (unsigned i = 0; !err && i < XR_QT_PER_BLOCK; i++) {
		if (entry_unused(entry_at(b, i)))
			continue;
		memset(&dq, 0, sizeof(dq));
		dq_from_disk(entry_at(b, i), &dq);
		if (dq.id != id)
			continue;
		dq.blk = blk;
		dq.slot = i;
		return w->func(&dq, w->priv);
	}
	return err ? err : EXTREF_ERR_QUOTA_FILE;
}

static errcode_t walk(struct walk *w, __u32 blk, int depth, __u32 id)
{
	unsigned char b[XR_QT_BLKSIZE];
	errcode_t err;

	if (depth == XR_QT_DEPTH)
		return walk_data(w, blk, id);
	if (ext2fs_test_block_bitmap2(w->tree, blk) ||
	    ext2fs_test_block_bitmap2(w->data, blk))
		return EXTREF_ERR_QUOTA_FILE;
	ext2fs_mark_block_bitmap2(w->tree, blk);
	err = read_blk(w->qf, blk, b);
	for (unsigned i = 0; !err && i < XR_QT_REFS; i++) {
		__u32 r = tree_ref(b, i);

		if (!r)
			continue;
		if (r <= XR_QT_TREEOFF || r >= w->qf->hdr.dqi_blocks)
			return EXTREF_ERR_QUOTA_FILE;
		err = walk(w, r, depth + 1, (id << 8) | i);
	}
	return err;
}

static errcode_t new_map(struct xr_qfile *qf, const char *descr,
			 ext2fs_block_bitmap *ret)
{
	__u64 last = qf->hdr.dqi_blocks - 1;

	return ext2fs_alloc_generic_bmap(qf->fs, EXT2_ET_MAGIC_BLOCK_BITMAP64,
					 EXT2FS_BMAP64_RBTREE, 0, last, last,
					 descr, ret);
}

static void walk_done(struct walk *w)
{
	if (w->tree)
		ext2fs_free_block_bitmap(w->tree);
	if (w->data)
		ext2fs_free_block_bitmap(w->data);
}

/* The walk, its bitmaps left for the caller (walk_done). */
static errcode_t walk_tree(struct walk *w)
{
	errcode_t err = new_map(w->qf, "quota tree blocks", &w->tree);

	if (!err)
		err = new_map(w->qf, "quota data blocks", &w->data);
	if (!err)
		err = walk(w, XR_QT_TREEOFF, 0, 0);
	return err;
}

errcode_t xr_qfile_iterate(struct xr_qfile *qf, xr_dquot_func func,
			   void *priv)
{
	struct walk w = { qf, func, priv, NULL, NULL };
	errcode_t err = walk_tree(&w);

	walk_done(&w);
	return err;
}

static errcode_t no_op(const struct xr_dquot *dq, void *priv)
{
	(void) dq;
	(void) priv;
	return 0;
}

/*
 * The list of free blocks: each outside the tree, none twice (a loop
 * would hand out a block in use).  Marked in the tree map as they are
 * passed, so the list is at most as long as the file.
 */
static errcode_t check_free_blks(struct walk *w)
{
	struct xr_qt_disk_dbheader h;
	unsigned char b[XR_QT_BLKSIZE];
	__u32 blk = w->qf->hdr.dqi_free_blk;
	errcode_t err = 0;

	while (!err && blk) {
		if (ext2fs_test_block_bitmap2(w->tree, blk) ||
		    ext2fs_test_block_bitmap2(w->data, blk))
			return EXTREF_ERR_QUOTA_FILE;
		ext2fs_mark_block_bitmap2(w->tree, blk);
		err = read_dblk(w->qf, blk, b, &h);
		blk = err ? 0 : h.dqdh_next_free;
	}
	return err;
}

/*
 * The list of data blocks with a free entry: each a data block of the
 * tree with room, none twice (unmarked in the data map as passed).
 */
static errcode_t check_free_entries(struct walk *w)
{
	struct xr_qt_disk_dbheader h;
	unsigned char b[XR_QT_BLKSIZE];
	__u32 blk = w->qf->hdr.dqi_free_entry;
	errcode_t err = 0;

	while (!err && blk) {
		if (!ext2fs_test_block_bitmap2(w->data, blk))
			return EXTREF_ERR_QUOTA_FILE;
		ext2fs_unmark_block_bitmap2(w->data, blk);
		err = read_dblk(w->qf, blk, b, &h);
		if (!err && h.dqdh_entries >= XR_QT_PER_BLOCK)
			err = EXTREF_ERR_QUOTA_FILE;
		blk = err ? 0 : h.dqdh_next_free;
	}
	return err;
}

/*
 * The whole file checked: every tree and data block reachable, and both
 * lists whole, so that a flush later finds nothing it must refuse
 * half-way and takes no block that is in use.
 */
errcode_t xr_qfile_verify(struct xr_qfile *qf)
{
	struct walk w = { qf, no_op, NULL, NULL, NULL };
	errcode_t err = walk_tree(&w);

	if (!err)
		err = check_free_blks(&w);
	if (!err)
		err = check_free_entries(&w);
	walk_done(&w);
	return err;
}
