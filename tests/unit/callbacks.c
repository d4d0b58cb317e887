/*
 * callbacks.c --- the public callbacks' contract: 0 goes on,
 * EXTREF_ITER_STOP stops and the call returns 0, any other code stops and
 * the call returns that code (never taken for "stop").
 *
 * usage: callbacks IMAGE INO      (the tree holds a record; INO maps it)
 *        callbacks -p IMAGE       (the tree has a structural problem)
 *
 * Prints one line per check; exit 0 when all hold, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "extref_ops.h"

struct probe {
	errcode_t	answer;		/* what the callback returns */
	int		calls;
};

static errcode_t on_rec(const struct extref_rec *r, void *priv)
{
	struct probe *p = priv;

	(void)r;
	p->calls++;
	return p->answer;
}

static errcode_t on_map(const struct extref_mapping *m, void *priv)
{
	struct probe *p = priv;

	(void)m;
	p->calls++;
	return p->answer;
}

static errcode_t on_ext(const struct extref_extent *e, void *priv)
{
	struct probe *p = priv;

	(void)e;
	p->calls++;
	return p->answer;
}

static errcode_t on_problem(errcode_t code, __u32 lblk, const char *detail,
			    void *priv)
{
	struct probe *p = priv;

	(void)code; (void)lblk; (void)detail;
	p->calls++;
	return p->answer;
}

static int expect(const char *what, errcode_t got, errcode_t want, int calls)
{
	int ok = got == want && calls == 1;

	printf("%s: %s (returned %ld, %d calls)\n", what, ok ? "ok" : "WRONG",
	       (long)got, calls);
	return ok ? 0 : 1;
}

static int extents(extref_fs_t xfs, ext2_ino_t ino)
{
	struct ext2_inode inode;
	struct probe p;
	errcode_t err;
	int bad = 0;

	err = ext2fs_read_inode(extref_fs_ext2(xfs), ino, &inode);
	if (err)
		return expect("read_inode", err, 0, 1);
	p = (struct probe){ EXTREF_ITER_STOP, 0 };
	err = extref_iterate_extents(xfs, ino, &inode, 0, on_ext, &p);
	bad |= expect("iterate_extents stop", err, 0, p.calls);
	p = (struct probe){ EXT2_ET_NO_MEMORY, 0 };
	err = extref_iterate_extents(xfs, ino, &inode, 0, on_ext, &p);
	bad |= expect("iterate_extents error", err, EXT2_ET_NO_MEMORY,
		      p.calls);
	return bad;
}

static int records(extref_fs_t xfs, ext2_ino_t ino)
{
	extref_tree_t t = extref_fs_tree(xfs);
	struct probe p;
	errcode_t err;
	int bad = 0;

	p = (struct probe){ EXTREF_ITER_STOP, 0 };
	err = extref_tree_iterate(t, 0, 0, 0, on_rec, &p);
	bad |= expect("tree_iterate stop", err, 0, p.calls);
	p = (struct probe){ EXT2_ET_NO_MEMORY, 0 };
	err = extref_tree_iterate(t, 0, 0, 0, on_rec, &p);
	bad |= expect("tree_iterate error", err, EXT2_ET_NO_MEMORY, p.calls);
	p = (struct probe){ EXTREF_ITER_STOP, 0 };
	err = extref_iterate_mappings(xfs, ino, on_map, &p);
	bad |= expect("iterate_mappings stop", err, 0, p.calls);
	p = (struct probe){ EXT2_ET_NO_MEMORY, 0 };
	err = extref_iterate_mappings(xfs, ino, on_map, &p);
	bad |= expect("iterate_mappings error", err, EXT2_ET_NO_MEMORY,
		      p.calls);
	return bad | extents(xfs, ino);
}

static int problems(extref_fs_t xfs)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct probe p = { EXT2_ET_NO_MEMORY, 0 };
	errcode_t err;
	int bad;

	err = extref_check_fs(fs, on_problem, &p);
	bad = expect("check_fs error", err, EXT2_ET_NO_MEMORY, p.calls);
	p = (struct probe){ EXTREF_ITER_STOP, 0 };
	err = extref_check_fs(fs, on_problem, &p);
	/* stopped: the first problem's code, as without a callback */
	printf("check_fs stop: %s (%s, %d calls)\n",
	       err && err != EXTREF_ITER_STOP && p.calls == 1 ? "ok" : "WRONG",
	       error_message(err), p.calls);
	return bad || !err || err == EXTREF_ITER_STOP || p.calls != 1;
}

int main(int argc, char **argv)
{
	int damaged = argc == 3 && !strcmp(argv[1], "-p");
	extref_fs_t xfs;
	errcode_t err, tree_err = 0;
	int bad;

	if (!damaged && argc != 3) {
		fprintf(stderr, "usage: callbacks IMAGE INO | -p IMAGE\n");
		return 2;
	}
	err = extref_fs_open(argv[damaged ? 2 : 1],
			     damaged ? EXTREF_OPEN_FORCE : 0, &xfs, &tree_err);
	if (err) {
		fprintf(stderr, "callbacks: %s\n", error_message(err));
		return 2;
	}
	bad = damaged ? problems(xfs)
		      : records(xfs, (ext2_ino_t)strtoul(argv[2], NULL, 0));
	extref_fs_abort(xfs);
	return bad;
}
