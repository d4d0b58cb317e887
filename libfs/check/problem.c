/*
 * problem.c --- the checker's problem table.
 *
 * One entry per problem code: a stable name, what is wrong, what the
 * repair does (said as "would ..." when nothing may change), and whether
 * the repair is safe to make unattended (-p).  tests check the table is
 * sorted and complete.
 */
#include <stdio.h>
#include <stdarg.h>
#include <string.h>
#include "extref_fsck_int.h"

#define P(c, n, d, f, p) { c, #n, d, f, p }

static const struct xr_problem table[] = {
	P(PR_X_FEATURE_MISSING, FEATURE_MISSING,
	  "shared_blocks feature is not set but blocks are shared or a tree exists",
	  "set the feature", 1),
	P(PR_X_TREE_MISSING, TREE_MISSING,
	  "shared_blocks is set but inode 5 holds no reference-count tree",
	  "rebuild the tree", 1),
	P(PR_X_TREE_UNREADABLE, TREE_UNREADABLE,
	  "reference-count tree header is unreadable",
	  "rebuild the tree", 1),
	P(PR_X_INO5_BAD, INO5_BAD,
	  "inode 5 is not a regular file with extents",
	  "rebuild the tree", 1),
	P(PR_X_JOURNAL_OVERLAP, JOURNAL_OVERLAP,
	  "journal inode's blocks are not its own",
	  "clear the journal; a new one is made after e2fsck", 1),
	P(PR_X_EXTENT_CORRUPT, EXTENT_CORRUPT,
	  "extent tree cannot be read; its readable mappings are kept",
	  NULL, 0),
	P(PR_X_DATA_IS_METADATA, DATA_IS_METADATA,
	  "data block is also filesystem metadata",
	  "give the file its own copy", 0),
	P(PR_X_MAPPED_BLOCK_FREE, MAPPED_BLOCK_FREE,
	  "mapped blocks are marked free in the block bitmap",
	  "mark them in use", 1),
	P(PR_X_META_BLOCK_FREE, META_BLOCK_FREE,
	  "extent-tree or extended-attribute blocks are marked free in the "
	  "block bitmap",
	  "mark them in use", 1),
	P(PR_X_TREE_NODE, TREE_NODE,
	  "reference-count tree node is damaged",
	  "rebuild the tree", 1),
	P(PR_X_TREE_FREE_LIST, TREE_FREE_LIST,
	  "reference-count tree free list is damaged",
	  "rebuild the tree", 1),
	P(PR_X_TREE_LOST_BLOCK, TREE_LOST_BLOCK,
	  "block of inode 5 is neither a tree node nor free",
	  "rebuild the tree", 1),
	P(PR_X_TREE_HEADER_COUNT, TREE_HEADER_COUNT,
	  "reference-count tree header has a wrong record count",
	  "rebuild the tree", 1),
	P(PR_X_TREE_BLOCK_METADATA, TREE_BLOCK_METADATA,
	  "block of inode 5 is also filesystem metadata",
	  "give the tree new blocks", 1),
	P(PR_X_TREE_BLOCK_SHARED, TREE_BLOCK_SHARED,
	  "block of inode 5 is also mapped elsewhere (by another inode, or twice)",
	  "give the tree new blocks", 1),
	P(PR_X_COUNT_TOO_LOW, COUNT_TOO_LOW,
	  "reference count too low: a cross-link, data may already be "
	  "overwritten",
	  "raise the count", 1),
	P(PR_X_COUNT_TOO_HIGH, COUNT_TOO_HIGH,
	  "reference count too high: space leaked",
	  "lower the count", 1),
	P(PR_X_RECORD_UNSHARED, RECORD_UNSHARED,
	  "reference-count record for blocks mapped at most once",
	  "remove the record", 1),
	P(PR_X_SHARED_NO_RECORD, SHARED_NO_RECORD,
	  "blocks mapped several times have no reference-count record",
	  "record them as shared", 0),
	P(PR_X_FOREIGN_WRITE, FOREIGN_WRITE,
	  "shared blocks may have been changed by another tool",
	  "accept the file's data as it is now", 0),
};

const struct xr_problem *xr_problem_find(int code)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].code == code)
			return &table[i];
	return NULL;
}

const struct extref_problem_info *extref_problem_table(size_t *n)
{
	static struct extref_problem_info info[sizeof(table) / sizeof(table[0])];
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		info[i].code = table[i].code;
		info[i].name = table[i].name;
		info[i].description = table[i].description;
		info[i].preen_ok = table[i].preen_ok;
	}
	*n = sizeof(table) / sizeof(table[0]);
	return info;
}

/* printf into a string of its own size (NULL when out of memory). */
static char *vformat(const char *fmt, va_list ap)
{
	va_list aq;
	char *s = NULL;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || ext2fs_get_mem(n + 1, &s))
		return NULL;
	vsnprintf(s, n + 1, fmt, ap);
	return s;
}

static char *format(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = vformat(fmt, ap);
	va_end(ap);
	return s;
}

/*
 * "0xCODE description: detail", without the colon when there is no
 * detail, then tail (the fix said); NULL when out of memory.
 */
static char *say(int code, const char *description, const char *detail,
		 const char *tail)
{
	return format("0x%04x %s%s%s%s", code, description,
		      *detail ? ": " : "", detail, tail);
}

/* What the fix of a problem does, as said after it. */
static const char *fix_text(const struct xr_fsck *c, const struct xr_problem *p)
{
	if (p->code == PR_X_SHARED_NO_RECORD && c->opts->unshare)
		return "give each extra mapping its own copy";
	if (p->code == PR_X_COUNT_TOO_LOW && c->opts->unshare)
		return "give the newest owners their own copies";
	return p->fix;
}

static void count(struct xr_fsck *c, const struct xr_problem *p, int fix)
{
	c->res->problems++;
	if (fix)
		c->res->fixed++;
	else
		c->res->unfixed++;
	if (!fix && p->fix && c->opts->mode == EXTREF_FSCK_PREEN)
		c->preen_stop = 1;
}

/* EXTREF_FSCK_ASK: the front end asks, the problem said without its fix. */
static int ask(struct xr_fsck *c, const struct xr_problem *p,
	       const char *line)
{
	struct extref_problem_report r = { 0 };

	if (!c->opts->ask)
		return 0;
	r.code = p->code;
	r.message = line;
	r.preen_ok = p->preen_ok;
	r.fix_text = fix_text(c, p);
	return c->opts->ask(&r, c->opts->priv) != 0;
}

/* The mode's answer, before the front end is asked (ASK). */
static int decide(const struct xr_fsck *c, const struct xr_problem *p)
{
	if (c->no_fix || !p->fix)
		return 0;
	return c->opts->mode == EXTREF_FSCK_YES ||
	       (c->opts->mode == EXTREF_FSCK_PREEN && p->preen_ok);
}

/* Report one problem, its detail made; returns 1 when to fix it. */
static int problem(struct xr_fsck *c, const struct xr_problem *p,
		   const char *detail)
{
	struct extref_problem_report r = { 0 };
	const char *fixtext = fix_text(c, p);
	char *line, tail[160] = "";
	int fix = decide(c, p);

	if (p->fix && c->opts->mode == EXTREF_FSCK_ASK && !c->no_fix) {
		line = say(p->code, p->description, detail, "");
		fix = line ? ask(c, p, line) : 0;
		count(c, p, fix);
		ext2fs_free_mem(&line);
		return fix;
	}
	if (p->fix && c->opts->mode == EXTREF_FSCK_NO)
		snprintf(tail, sizeof(tail), " (would %s)", fixtext);
	else if (p->fix)
		snprintf(tail, sizeof(tail), " (%s%s)", fix ? "" : "not done: ",
			 fixtext);
	line = say(p->code, p->description, detail, tail);
	count(c, p, fix);
	r.code = p->code;
	r.message = line ? line : p->description;
	r.fixed = fix;
	r.preen_ok = p->preen_ok;
	r.fix_text = p->fix ? fixtext : NULL;
	if (c->opts->report)
		c->opts->report(&r, c->opts->priv);
	ext2fs_free_mem(&line);
	return fix;
}

/*
 * Decide whether a problem gets fixed in this mode, and report it:
 * "PROBLEM 0xCODE: description: detail.  Fix? yes|no" shaped as one line,
 * with "would ..." under -n; under ASK the front end asks instead.
 * Returns 1 when the caller should fix it.
 */
int xr_problem(struct xr_fsck *c, int code, const char *fmt, ...)
{
	const struct xr_problem *p = xr_problem_find(code);
	char *detail;
	va_list ap;
	int fix;

	if (c->probe) {		/* the full run reports it */
		c->probe_dirty = 1;
		return 0;
	}
	va_start(ap, fmt);
	detail = vformat(fmt, ap);
	va_end(ap);
	fix = problem(c, p, detail ? detail : "");
	ext2fs_free_mem(&detail);
	return fix;
}

/*
 * ASK, for problems that one rebuild mends together: each is reported as
 * found, then one question covers them all.
 */
static int ask_group(struct xr_fsck *c)
{
	struct extref_problem_report r = { 0 };
	const struct xr_problem *p;
	char *line, group[96];
	size_t i;
	int fix;

	for (i = 0; i < c->npend; i++) {
		p = xr_problem_find(c->pend[i].code);
		line = say(p->code, p->description, c->pend[i].detail, "");
		r.code = p->code;
		r.message = line ? line : p->description;
		r.preen_ok = p->preen_ok;
		r.fix_text = fix_text(c, p);
		if (c->opts->report)
			c->opts->report(&r, c->opts->priv);
		ext2fs_free_mem(&line);
	}
	snprintf(group, sizeof(group), "%zu problem%s of the reference-count "
		 "tree above", c->npend, c->npend == 1 ? "" : "s");
	p = xr_problem_find(c->pend[0].code);
	fix = ask(c, p, group);
	for (i = 0; i < c->npend; i++)
		count(c, xr_problem_find(c->pend[i].code), fix);
	return fix;
}

/*
 * Tree problems wait until every pass has looked: one rebuild repairs
 * them all, and under -p it is made only if every one is preen-safe.
 */
errcode_t xr_problem_defer(struct xr_fsck *c, int code, const char *fmt, ...)
{
	struct xr_pending_problem *p;
	char *detail;
	va_list ap;
	errcode_t err;

	if (c->probe) {		/* the full run reports it */
		c->probe_dirty = 1;
		return 0;
	}
	err = xr_grow(&c->pend, &c->cappend, c->npend, sizeof(*c->pend));
	if (err)
		return err;
	va_start(ap, fmt);
	detail = vformat(fmt, ap);
	va_end(ap);
	if (!detail)
		return EXT2_ET_NO_MEMORY;
	p = &c->pend[c->npend];
	p->detail = detail;
	p->code = code;
	c->npend++;
	return 0;
}

/* Report the deferred problems; returns 1 when the tree is to be rebuilt. */
int xr_problems_flush(struct xr_fsck *c)
{
	enum extref_fsck_mode mode = c->opts->mode;
	int all_preen = 1, rebuild = 0;
	size_t i;

	for (i = 0; i < c->npend; i++)
		if (!xr_problem_find(c->pend[i].code)->preen_ok)
			all_preen = 0;
	/* Under -p, one unsafe problem keeps the whole tree as it is. */
	if (mode == EXTREF_FSCK_ASK && c->npend && !c->no_fix) {
		rebuild = ask_group(c);
	} else if (mode == EXTREF_FSCK_PREEN && !all_preen) {
		c->no_fix = 1;
		for (i = 0; i < c->npend; i++)
			xr_problem(c, c->pend[i].code, "%s", c->pend[i].detail);
		c->no_fix = 0;
		c->preen_stop = 1;
	} else {
		for (i = 0; i < c->npend; i++)
			rebuild |= xr_problem(c, c->pend[i].code, "%s",
					      c->pend[i].detail);
	}
	for (i = 0; i < c->npend; i++)
		ext2fs_free_mem(&c->pend[i].detail);
	c->npend = 0;
	return rebuild;
}
