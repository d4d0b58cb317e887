/*
 * fsck_compare.c --- pass 2 (the tree's structure) and pass 3 (its
 * records against the expected counts).
 */
#include <stdio.h>
#include <string.h>
#include "extref_fsck_int.h"

/* Which problem code a structural error of the tree belongs to. */
static int structure_code(errcode_t err)
{
	if (err == EXTREF_ERR_NO_TREE)
		return PR_X_TREE_MISSING;
	if (err == EXTREF_ERR_INO5_MODE || err == EXTREF_ERR_INO5_MAP)
		return PR_X_INO5_BAD;
	if (err == EXTREF_ERR_FREE_LIST)
		return PR_X_TREE_FREE_LIST;
	if (err == EXTREF_ERR_LOST_BLOCK || err == EXTREF_ERR_INO5_SIZE)
		return PR_X_TREE_LOST_BLOCK;
	if (err == EXTREF_ERR_HDR_NRECORDS)
		return PR_X_TREE_HEADER_COUNT;
	if ((err >= EXTREF_ERR_HDR_MAGIC && err <= EXTREF_ERR_HDR_GEOMETRY) ||
	    err == EXTREF_ERR_HDR_NBLOCKS)
		return PR_X_TREE_UNREADABLE;
	return PR_X_TREE_NODE;
}

/*
 * Which check a damaged node or header failed, said short: the problem's
 * description already names the node or the header.
 */
static const struct { errcode_t code; const char *why; } checks[] = {
	{ EXTREF_ERR_HDR_MAGIC,		"bad magic number" },
	{ EXTREF_ERR_HDR_CSUM,		"checksum does not match" },
	{ EXTREF_ERR_HDR_VERSION,	"unknown format version" },
	{ EXTREF_ERR_HDR_INCOMPAT,	"unknown incompatible features" },
	{ EXTREF_ERR_HDR_RO_COMPAT,	"unknown read-only features" },
	{ EXTREF_ERR_HDR_UUID,		"another filesystem's UUID" },
	{ EXTREF_ERR_HDR_BLOCKSIZE,	"block size differs from the "
					"filesystem's" },
	{ EXTREF_ERR_HDR_GEOMETRY,	"impossible root, depth or size" },
	{ EXTREF_ERR_HDR_NBLOCKS,	"counts more blocks than inode 5 or "
					"the filesystem holds" },
	{ EXTREF_ERR_NODE_MAGIC,	"bad magic number" },
	{ EXTREF_ERR_NODE_CSUM,		"checksum does not match" },
	{ EXTREF_ERR_NODE_BLKNO,	"records another block number" },
	{ EXTREF_ERR_NODE_LEVEL,	"wrong level" },
	{ EXTREF_ERR_NODE_NR,		"impossible entry count" },
	{ EXTREF_ERR_NODE_ORDER,	"entries out of order or overlapping" },
	{ EXTREF_ERR_NODE_BOUNDS,	"entry outside its parent's key "
					"range" },
	{ EXTREF_ERR_NODE_CHILD,	"points to a block outside the tree" },
	{ EXTREF_ERR_NODE_TWICE,	"reachable twice" },
	{ EXTREF_ERR_REC_LEN,		"record of zero length or past the "
					"filesystem" },
	{ EXTREF_ERR_REC_COUNT,		"record with a count below 2" },
	{ EXTREF_ERR_REC_UNMERGED,	"equal neighbouring records not "
					"merged" },
};

static const char *check_failed(errcode_t code)
{
	size_t i;

	for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (checks[i].code == code)
			return checks[i].why;
	return error_message(code);
}

/*
 * A structural error said once: where, and for a damaged node or header
 * which check failed; the checker's detail only when it adds to that.
 */
static void say_structure(int pr, errcode_t code, __u32 lblk,
			  const char *detail, char *buf, size_t len)
{
	int more = *detail && strcmp(detail, "tree header") != 0;

	if (pr == PR_X_TREE_NODE || pr == PR_X_TREE_UNREADABLE) {
		if (lblk)
			snprintf(buf, len, "tree block %u: %s%s%s%s", lblk,
				 check_failed(code), more ? " (" : "",
				 more ? detail : "", more ? ")" : "");
		else
			snprintf(buf, len, "%s", check_failed(code));
	} else if (code == EXTREF_ERR_LOST_BLOCK) {
		snprintf(buf, len, "tree block %u", lblk);
	} else {
		snprintf(buf, len, "%s", more ? detail : "");
	}
}

static errcode_t on_structure(errcode_t code, __u32 lblk, const char *detail,
			      void *priv)
{
	struct xr_fsck *c = priv;
	int pr = structure_code(code);
	char text[512];
	errcode_t err;

	c->tree_bad = 1;
	if (pr == PR_X_TREE_MISSING)
		c->tree_present = 0;
	say_structure(pr, code, lblk, detail, text, sizeof(text));
	err = xr_problem_defer(c, pr, "%s", text);
	if (err && !c->err)
		c->err = err;
	return err;		/* a problem lost stops the walk */
}

/* Pass 2: every node, the free list, the blocks of inode 5. */
errcode_t xr_fsck_structure(struct xr_fsck *c)
{
	errcode_t err = extref_check_fs(c->fs, on_structure, c);

	/* Problems went to on_structure; only I/O and memory matter here. */
	if (err && (err == EXT2_ET_NO_MEMORY || err == EXT2_ET_SHORT_READ ||
		    err == EXT2_ET_LLSEEK_FAILED))
		return err;
	return c->err;
}

struct cmp {
	struct xr_fsck		*c;
	struct extref_rec	*t;	/* the tree's records */
	size_t			nt, ti, capt;
	blk64_t			tpos;	/* tree consumed up to here */
	/* problem being coalesced */
	int			code;
	blk64_t			ps, pe;
	__u32			ptc, pec;
	int			compare;	/* the tree is sound */
};

/*
 * Under -E unshare, blocks mapped more often than recorded keep as many
 * mappings as there are (the oldest owners'), the rest get copies: for a
 * block with no record one, for a count too low the count.
 */
static errcode_t note_unshare(struct cmp *m)
{
	if (!m->c->opts->unshare)
		return 0;
	if (m->code == PR_X_SHARED_NO_RECORD)
		return xr_fsck_note_unshare(m->c, m->ps, m->pe, 1);
	if (m->code == PR_X_COUNT_TOO_LOW)
		return xr_fsck_note_unshare(m->c, m->ps, m->pe, m->ptc);
	return 0;
}

/*
 * The owners named: all of them for a count too low (a cross-link: the
 * intruder is one of them) or with -v, else the first four.
 */
static size_t owners_shown(const struct cmp *m)
{
	return m->code == PR_X_COUNT_TOO_LOW || m->c->opts->verbose ? 0 : 4;
}

/* A count too low: the other repair, when it was not asked for. */
static const char *way_out(const struct cmp *m)
{
	if (m->code != PR_X_COUNT_TOO_LOW || m->c->opts->unshare)
		return "";
	return "; -E unshare gives the newest owners their own copies";
}

/*
 * Defer the problem being coalesced.  A failure (memory) is kept in
 * c->err, the first one only, and ends the pass: a problem dropped would
 * let a damaged tree pass as sound.
 */
static void report(struct cmp *m)
{
	char what[48], times[24], *who = NULL;
	__u32 mapped;
	errcode_t err;

	if (!m->code)
		return;
	/* a directory's or reserved inode's block: 0x0102, not a share */
	if (m->code == PR_X_SHARED_NO_RECORD &&
	    xr_fsck_range_special(m->c, m->ps, m->pe)) {
		m->code = 0;
		return;
	}
	err = note_unshare(m);
	if (!err)
		err = xr_fsck_owners(m->c, m->ps, m->pe, owners_shown(m), &who);
	mapped = m->pec ? m->pec : (m->ptc ? 1 : 0);
	if (mapped == 1)
		snprintf(times, sizeof(times), "once");
	else
		snprintf(times, sizeof(times), "%u times", mapped);
	if (!err)
		err = xr_problem_defer(m->c, m->code,
				       "%s: recorded %u, mapped %s, by %s %s%s",
				       xr_fsck_range(m->ps, m->pe, what,
						     sizeof(what)),
				       m->ptc, times,
				       mapped == 1 ? "inode" : "inodes", who,
				       way_out(m));
	ext2fs_free_mem(&who);
	if (err && !m->c->err)
		m->c->err = err;
	m->code = 0;
}

/* A segment where the tree says tc (0: none), expected ec (0: <= 1). */
static void seg(struct cmp *m, blk64_t s, blk64_t e, __u32 tc, __u32 ec)
{
	int code;

	if (!m->compare || s >= e || tc == ec)
		return;
	code = !tc ? PR_X_SHARED_NO_RECORD : !ec ? PR_X_RECORD_UNSHARED :
		tc < ec ? PR_X_COUNT_TOO_LOW : PR_X_COUNT_TOO_HIGH;
	if (m->code == code && m->pe == s && m->ptc == tc && m->pec == ec) {
		m->pe = e;
		return;
	}
	report(m);
	m->code = code;
	m->ps = s;
	m->pe = e;
	m->ptc = tc;
	m->pec = ec;
}

/* Tree records (or their rest) below limit, with nothing expected. */
static void tree_until(struct cmp *m, blk64_t limit)
{
	while (m->ti < m->nt) {
		const struct extref_rec *r = &m->t[m->ti];
		blk64_t s = r->start > m->tpos ? r->start : m->tpos;
		blk64_t e = r->start + r->len, ee;

		if (s >= limit)
			break;
		ee = e < limit ? e : limit;
		seg(m, s, ee, r->count, 0);
		m->tpos = ee;
		if (ee < e)
			break;
		m->ti++;
	}
}

static errcode_t on_expected(const struct extref_rec *r, void *priv)
{
	struct cmp *m = priv;
	blk64_t pos = r->start, end = r->start + r->len, e;

	m->c->res->records++;
	m->c->res->shared_blocks += r->len;
	tree_until(m, pos);
	while (pos < end) {
		const struct extref_rec *t = m->ti < m->nt ? &m->t[m->ti] : NULL;

		if (t && t->start + t->len <= pos) {
			m->ti++;
			continue;
		}
		if (t && t->start <= pos) {
			e = t->start + t->len < end ? t->start + t->len : end;
			seg(m, pos, e, t->count, r->count);
		} else {
			e = t && t->start < end ? t->start : end;
			seg(m, pos, e, 0, r->count);
		}
		pos = e;
	}
	if (m->tpos < end)
		m->tpos = end;
	return m->c->err;
}

static errcode_t load_rec(const struct extref_rec *r, void *priv)
{
	struct cmp *m = priv;
	/* returned as the iteration's error, never taken for its end */
	errcode_t err = xr_big_grow(&m->t, &m->capt, m->nt, sizeof(*m->t));

	if (!err)
		m->t[m->nt++] = *r;
	return err;
}

/*
 * Pass 3.  With a sound tree, its records are compared with the expected
 * ones; with a damaged or missing tree there is nothing to compare (the
 * rebuild writes the expected records), but they are still counted.
 */
errcode_t xr_fsck_compare(struct xr_fsck *c)
{
	struct cmp m = { .c = c };
	extref_tree_t t = NULL;
	errcode_t err = 0;

	m.compare = c->tree_present && !c->tree_bad;
	if (m.compare) {
		err = extref_tree_open(c->fs, 0, &t);
		if (!err)
			err = extref_tree_iterate(t, 0, 0, 0, load_rec, &m);
		extref_tree_free(t);
		if (err) {
			xr_big_free(&m.t, &m.capt, sizeof(*m.t));
			return err;
		}
	}
	err = xr_fsck_sweep(c, on_expected, &m);
	if (!err && m.compare) {
		tree_until(&m, ~0ULL);
		report(&m);
	}
	xr_big_free(&m.t, &m.capt, sizeof(*m.t));
	return err ? err : c->err;
}
