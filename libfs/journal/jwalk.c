/*
 * jwalk.c --- walk the log record by record from s_start, following its
 * structure: block headers and sequence numbers, descriptor tags and the
 * copies after them, revoke records, commit blocks.  Checksums are
 * computed and reported in each record, and so is a revoke block whose
 * r_count cannot be; the callers (the scan, logdump) decide what they
 * mean.
 */
#include <string.h>
#include <stddef.h>
#include "journal_int.h"

struct walk {
	struct xr_journal *j;
	extref_jwalk_fn	fn;
	void		*priv;
	unsigned char	*blk;		/* the record being walked */
	unsigned char	*copy;		/* a copy a tag names */
	__u32		pos;		/* journal block of blk */
	__u32		tid;		/* tid expected */
	__u32		walked;		/* log blocks walked */
};

/* A decoded descriptor tag. */
struct jtag {
	blk64_t		blk;
	unsigned	flags;
	__u32		csum;
};

static void decode_tag(__u32 incompat, const __u8 *p, struct jtag *t)
{
	t->blk = xr_be32(p);
	if (incompat & JBD2_FEATURE_INCOMPAT_CSUM_V3) {
		t->flags = xr_be32(p + 4) & 0xffff;
		t->csum = xr_be32(p + 12);
		t->blk |= (blk64_t)xr_be32(p + 8) << 32;
		return;
	}
	t->csum = xr_be16(p + 4);
	t->flags = xr_be16(p + 6);
	if (incompat & JBD2_FEATURE_INCOMPAT_64BIT)
		t->blk |= (blk64_t)xr_be32(p + 8) << 32;
}

static int tag_csum_ok(struct walk *w, const struct jtag *t)
{
	__u32 incompat = w->j->sb.incompat;
	__u32 c;

	if (!(incompat & XR_JNL_CSUM))
		return 1;
	c = xr_jtag_csum(w->j->seed, w->tid, w->copy, w->j->bs);
	if (incompat & JBD2_FEATURE_INCOMPAT_CSUM_V3)
		return t->csum == c;
	return t->csum == (c & 0xffff);
}

/* Move to the next log block; 0 when the whole log has been walked. */
static int advance(struct walk *w)
{
	w->pos = xr_jnext(w->j, w->pos);
	return ++w->walked < xr_jlog_len(w->j);
}

static errcode_t end(struct walk *w, enum extref_jend why, __u32 found)
{
	struct extref_jrec r;
	errcode_t rc;

	memset(&r, 0, sizeof(r));
	r.type = EXTREF_JREC_END;
	r.jblk = w->pos;
	r.tid = w->tid;
	r.end = why;
	r.found = found;
	if (why == EXTREF_JEND_TYPE)
		r.blocktype = xr_be32(w->blk + 4);
	rc = w->fn(&r, w->priv);
	return rc == EXTREF_JWALK_STOP ? 0 : rc;
}

static void header_rec(struct walk *w, struct extref_jrec *r,
		       enum extref_jrec_type type)
{
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->jblk = w->pos;
	r->tid = w->tid;
	r->blocktype = xr_be32(w->blk + 4);
}

/* One tag: read its copy, check it, unescape it, report it. */
static errcode_t walk_tag(struct walk *w, const struct jtag *t)
{
	struct extref_jrec r;
	errcode_t err;

	memset(&r, 0, sizeof(r));
	r.type = EXTREF_JREC_BLOCK;
	r.jblk = w->pos;
	r.tid = w->tid;
	r.fsblk = t->blk;
	r.flags = t->flags;
	err = xr_jread(w->j, w->pos, w->copy);
	if (err)
		return err;
	r.csum_ok = tag_csum_ok(w, t);
	if (t->flags & JBD2_FLAG_ESCAPE)
		xr_put_be32(w->copy, JBD2_MAGIC);
	r.data = w->copy;
	return w->fn(&r, w->priv);
}

/* A descriptor and the copies after it; w->pos ends after the last. */
static errcode_t walk_desc(struct walk *w, int *looped)
{
	__u32 incompat = w->j->sb.incompat;
	unsigned tb = xr_jtag_bytes(incompat);
	unsigned limit = w->j->bs - xr_jtail_bytes(incompat);
	unsigned off = sizeof(struct jbd2_disk_header);
	struct extref_jrec r;
	struct jtag t;
	errcode_t rc;

	header_rec(w, &r, EXTREF_JREC_DESC);
	r.csum_ok = xr_jtail_ok(w->j, w->blk);
	rc = w->fn(&r, w->priv);
	t.flags = 0;
	while (!rc && off + tb <= limit && !(t.flags & JBD2_FLAG_LAST_TAG)) {
		decode_tag(incompat, w->blk + off, &t);
		off += tb;
		if (!(t.flags & JBD2_FLAG_SAME_UUID))
			off += JBD2_UUID_BYTES;
		if (!advance(w)) {
			*looped = 1;
			return 0;
		}
		rc = walk_tag(w, &t);
	}
	if (!rc && !advance(w))
		*looped = 1;
	return rc;
}

/* A revoke block and its records; w->pos ends after it.  One whose
 * r_count cannot be is reported malformed, without records: whether
 * that ends the log or is an error is the caller's (the scan's) call. */
static errcode_t walk_revoke(struct walk *w, int *looped)
{
	__u32 incompat = w->j->sb.incompat;
	unsigned rs = xr_jrevoke_rec_bytes(incompat);
	unsigned hdr = sizeof(struct jbd2_disk_revoke);
	__u32 count = xr_be32(w->blk + offsetof(struct jbd2_disk_revoke,
						r_count));
	struct extref_jrec r;
	unsigned off;
	errcode_t rc;

	header_rec(w, &r, EXTREF_JREC_REVOKE_HDR);
	r.csum_ok = xr_jtail_ok(w->j, w->blk);
	r.malformed = count < hdr ||
		      count > w->j->bs - xr_jtail_bytes(incompat) ||
		      (count - hdr) % rs;
	rc = w->fn(&r, w->priv);
	for (off = hdr; !rc && !r.malformed && off < count; off += rs) {
		r.type = EXTREF_JREC_REVOKE;
		r.fsblk = rs == 8 ? (blk64_t)xr_be32(w->blk + off) << 32 |
				    xr_be32(w->blk + off + 4)
				  : xr_be32(w->blk + off);
		rc = w->fn(&r, w->priv);
	}
	if (!rc && !advance(w))
		*looped = 1;
	return rc;
}

static errcode_t walk_commit(struct walk *w, int *looped)
{
	struct extref_jrec r;
	errcode_t rc;

	header_rec(w, &r, EXTREF_JREC_COMMIT);
	r.csum_ok = xr_jcommit_ok(w->j, w->blk);
	rc = w->fn(&r, w->priv);
	w->tid++;
	if (!rc && !advance(w))
		*looped = 1;
	return rc;
}

/* One record at w->pos; *why set when the walk ends there. */
static errcode_t walk_one(struct walk *w, int *stop, enum extref_jend *why)
{
	int looped = 0;
	errcode_t rc;

	switch (xr_be32(w->blk + 4)) {
	case JBD2_DESCRIPTOR_BLOCK:
		rc = walk_desc(w, &looped);
		break;
	case JBD2_REVOKE_BLOCK:
		rc = walk_revoke(w, &looped);
		break;
	case JBD2_COMMIT_BLOCK:
		rc = walk_commit(w, &looped);
		break;
	default:
		*stop = 1;
		*why = EXTREF_JEND_TYPE;
		return 0;
	}
	if (looped) {
		*stop = 1;
		*why = EXTREF_JEND_LOOPED;
	}
	return rc;
}

static errcode_t walk_log(struct walk *w)
{
	enum extref_jend why;
	errcode_t err;
	int stop = 0;
	errcode_t rc;
	__u32 seq;

	for (;;) {
		err = xr_jread(w->j, w->pos, w->blk);
		if (err)
			return err;
		if (xr_be32(w->blk) != JBD2_MAGIC)
			return end(w, EXTREF_JEND_NO_MAGIC, 0);
		seq = xr_be32(w->blk + 8);
		if (seq != w->tid)
			return end(w, EXTREF_JEND_SEQ, seq);
		rc = walk_one(w, &stop, &why);
		if (rc == EXTREF_JWALK_STOP)
			return 0;
		if (rc)
			return rc;
		if (stop)
			return end(w, why, 0);
	}
}

errcode_t xr_journal_walk(struct xr_journal *j, extref_jwalk_fn fn, void *priv)
{
	struct walk w;
	errcode_t err;

	memset(&w, 0, sizeof(w));
	w.j = j;
	w.fn = fn;
	w.priv = priv;
	w.pos = j->sb.start;
	w.tid = j->sb.sequence;
	if (!j->sb.start)
		return end(&w, EXTREF_JEND_EMPTY, 0);
	err = ext2fs_get_mem(j->bs, &w.blk);
	if (!err)
		err = ext2fs_get_mem(j->bs, &w.copy);
	if (!err)
		err = walk_log(&w);
	ext2fs_free_mem(&w.blk);
	ext2fs_free_mem(&w.copy);
	return err;
}
