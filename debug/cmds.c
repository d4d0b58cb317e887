/*
 * cmds.c --- the command table of debugfs.extref and its central checks.
 *
 * mk_cmds (debug_cmds.ct) dispatches each request to a thin do_NAME()
 * handler generated below by CMD(); every handler calls run_cmd(), which
 * looks the command up in cmd_table, parses its options, checks the
 * argument count and what the command needs (an image, -w, the tree) in
 * one place, runs the implementation and records a failure for the exit
 * status.  Implementations never repeat those checks.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <ss/ss.h>
#include "debugfs.h"

/* In libss, not in its header. */
void ss_list_requests(int argc, const char * const *argv, int sci_idx,
		      void *infop);
extern ss_request_table extref_cmds;


#define RO	CMD_IMAGE
#define RT	(CMD_IMAGE | CMD_TREE)
#define WR	(CMD_IMAGE | CMD_WRITE | CMD_TREE)
#define XW	(CMD_IMAGE | CMD_WRITE | CMD_EXPERT)	/* the tree may be bad */

static const struct cmd_spec cmd_table[] = {
/*	  name		  impl			min max opts  long  ch  needs usage */
	{ "help",	  impl_help,		0, 1, NULL, NULL, 0,  0,  "[COMMAND]" },
	{ "open",	  impl_open,		1, 1, "wn", NULL, 0,  0,  "[-w] [-n] IMAGE" },
	{ "as",		  impl_as,		0, 2, NULL, NULL, 0,  0,  "[UID[:GID[,GID...]] [CAP,...] | root]" },
	{ "close",	  impl_close,		0, 0, NULL, NULL, 0,  RO, "" },
	{ "stats",	  impl_stats,		0, 0, NULL, NULL, 0,  RO, "" },
	{ "ls",		  impl_ls,		0, 1, "lp", NULL, 0,  RO, "[-l] [-p] [PATH]" },
	{ "cd",		  impl_cd,		1, 1, NULL, NULL, 0,  RO, "PATH" },
	{ "pwd",	  impl_pwd,		0, 0, NULL, NULL, 0,  RO, "" },
	{ "stat",	  impl_stat,		1, 1, NULL, NULL, 0,  RO, "PATH" },
	{ "fiemap",	  impl_fiemap,		1, 1, "v",  NULL, 0,  RO, "[-v] PATH" },
	{ "cat",	  impl_cat,		1, 1, NULL, NULL, 0,  RO, "PATH" },
	{ "dump",	  impl_dump,		2, 2, "p",  NULL, 0,  RO, "[-p] PATH HOSTFILE" },
	{ "rdump",	  impl_rdump,		2, -1, NULL, NULL, 0, RO, "PATH... HOSTDIR" },
	{ "refcount",	  impl_refcount,	0, 2, NULL, NULL, 0,  RT, "[START [LEN]]" },
	{ "refcount_tree", impl_refcount_tree,	0, 0, "v",  NULL, 0,  RO, "[-v]" },
	{ "owners",	  impl_owners,		1, 1, NULL, NULL, 0,  RO, "BLOCK" },
	{ "du",		  impl_du,		1, -1, "s", "raw", 'R', RT, "[-s] [--raw] PATH..." },
	{ "check",	  impl_check,		0, 0, NULL, NULL, 0,  RO, "" },
	{ "write",	  impl_write,		2, 2, NULL, NULL, 0,  WR, "HOSTFILE PATH" },
	{ "mkdir",	  impl_mkdir,		1, 1, NULL, NULL, 0,  WR, "PATH" },
	{ "rm",		  impl_rm,		1, 1, NULL, NULL, 0,  WR, "PATH" },
	{ "rmdir",	  impl_rmdir,		1, 1, NULL, NULL, 0,  WR, "PATH" },
	{ "symlink",	  impl_symlink,		2, 2, NULL, NULL, 0,  WR, "PATH TARGET" },
	{ "reflink",	  impl_reflink,		2, 2, "prZ:", NULL, 0, WR, "[-p] [-r] [-Z CONTEXT] SRC DST" },
	{ "clone_range",  impl_clone_range,	5, 5, NULL, NULL, 0,  WR, "SRC SOFF DST DOFF LEN" },
	{ "dedupe",	  impl_dedupe,		5, 5, NULL, NULL, 0,  WR, "SRC SOFF DST DOFF LEN" },
	{ "pwrite",	  impl_pwrite,		3, 3, "S:i:", NULL, 0, WR, "[-S BYTE] [-i HOSTFILE] PATH OFF LEN" },
	{ "truncate",	  impl_truncate,	2, 2, NULL, NULL, 0,  WR, "PATH SIZE" },
	{ "punch",	  impl_punch,		3, 3, NULL, NULL, 0,  WR, "PATH OFF LEN" },
	{ "unshare",	  impl_unshare,		1, 3, NULL, NULL, 0,  WR, "PATH [OFF LEN]" },
	{ "chmod",	  impl_chmod,		2, 2, NULL, NULL, 0,  WR, "MODE PATH" },
	{ "chown",	  impl_chown,		2, 2, NULL, NULL, 0,  WR, "UID[:GID] PATH" },
	{ "set_quota",	  impl_set_quota,	2, 6, NULL, NULL, 0,  RO, "TYPE ID [BSOFT BHARD ISOFT IHARD]" },
	{ "list_quota",	  impl_list_quota,	1, 1, NULL, NULL, 0,  RO, "TYPE" },
	{ "setxattr",	  impl_setxattr,	2, 3, "f:", NULL, 0,  WR, "[-f HOSTFILE] PATH NAME [VALUE]" },
	{ "rmxattr",	  impl_rmxattr,		2, 2, NULL, NULL, 0,  WR, "PATH NAME" },
	{ "getxattr",	  impl_getxattr,	2, 2, NULL, NULL, 0,  RO, "PATH NAME" },
	{ "listxattr",	  impl_listxattr,	1, 1, NULL, NULL, 0,  RO, "PATH" },
	{ "ncheck",	  impl_ncheck,		1, -1, "c", NULL, 0,  RO, "[-c] INODE..." },
	{ "icheck",	  impl_icheck,		1, -1, NULL, NULL, 0, RO, "BLOCK..." },
	{ "blocks",	  impl_blocks,		1, 1, NULL, NULL, 0,  RO, "PATH" },
	{ "bmap",	  impl_bmap,		2, 2, NULL, NULL, 0,  RO, "PATH LBLK" },
	{ "dirsearch",	  impl_dirsearch,	2, 2, NULL, NULL, 0,  RO, "DIR NAME" },
	{ "ffb",	  impl_ffb,		0, 2, NULL, NULL, 0,  RO, "[COUNT [GOAL]]" },
	{ "ffi",	  impl_ffi,		0, 2, NULL, NULL, 0,  RO, "[DIR [MODE]]" },
	{ "htree",	  impl_htree,		0, 1, "l",  NULL, 0,  RO, "[-l] [DIR]" },
	{ "set_tree_header", impl_set_tree_header, 2, 2, "n", NULL, 0, XW, "[-n] FIELD VALUE" },
	{ "set_tree_node", impl_set_tree_node,	3, 3, "n",  NULL, 0,  XW, "[-n] LBLK FIELD VALUE" },
	{ "set_tree_entry", impl_set_tree_entry, 4, 4, "n", NULL, 0,  XW, "[-n] LBLK INDEX FIELD VALUE" },
	{ "map_raw",	  impl_map_raw,		4, 4, NULL, NULL, 0,  XW, "PATH LBLK PBLK LEN" },
	{ "set_block_bitmap", impl_set_block_bitmap, 2, 2, "c", NULL, 0, XW, "[-c] BLOCK 0|1" },
	{ "set_inode_field", impl_set_inode_field, 3, 3, NULL, NULL, 0, XW, "INODE FIELD VALUE" },
	{ "set_super_value", impl_set_super_value, 2, 2, NULL, NULL, 0, XW, "FIELD VALUE" },
	{ "drop_tree",	  impl_drop_tree,	0, 0, "k",  NULL, 0,  XW, "[-k]" },
};

/* mk_cmds handlers: one thin wrapper per request. */
#define CMD(n) \
	void do_##n(int argc, const char * const *argv, int sci_idx, \
		    void *infop); \
	void do_##n(int argc, const char * const *argv, int sci_idx, \
		    void *infop) \
	{ (void)sci_idx; (void)infop; run_cmd(#n, argc, (char **)argv); }

CMD(help) CMD(open) CMD(as) CMD(close) CMD(stats) CMD(ls) CMD(cd) CMD(pwd) CMD(stat)
CMD(fiemap) CMD(cat) CMD(dump) CMD(refcount) CMD(refcount_tree)
CMD(owners) CMD(du) CMD(check) CMD(write) CMD(mkdir) CMD(rm) CMD(rmdir)
CMD(symlink) CMD(reflink) CMD(clone_range) CMD(dedupe) CMD(pwrite)
CMD(truncate) CMD(punch) CMD(unshare) CMD(chmod) CMD(chown)
CMD(set_quota) CMD(list_quota)
CMD(setxattr) CMD(rmxattr) CMD(getxattr) CMD(listxattr)
CMD(set_tree_header) CMD(set_tree_node) CMD(set_tree_entry) CMD(map_raw)
CMD(set_block_bitmap) CMD(drop_tree)
CMD(rdump) CMD(htree) CMD(set_inode_field) CMD(set_super_value) CMD(ncheck) CMD(icheck) CMD(blocks) CMD(bmap) CMD(dirsearch) CMD(ffb) CMD(ffi)

static const struct cmd_spec *cur_spec;

/* The formatted message, malloc'd; NULL when out of memory. */
static char *vformat(const char *fmt, va_list ap)
{
	va_list ap2;
	char *buf;
	int n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return NULL;
	buf = malloc((size_t)n + 1);
	if (buf)
		vsnprintf(buf, (size_t)n + 1, fmt, ap);
	return buf;
}

/*
 * "NAME: message" on stderr, the message escaped as names are (paths in
 * it come from the image or the user and may hold control bytes).
 */
static void vmsg(const char *name, const char *fmt, va_list ap)
{
	char *msg = vformat(fmt, ap);

	fflush(stdout);
	print_name(stderr, name, strlen(name));
	fputs(": ", stderr);
	if (msg) {
		print_name(stderr, msg, strlen(msg));
		free(msg);
	} else {
		fputs(fmt, stderr);
	}
	fputc('\n', stderr);
}

int cmd_fail(const struct cmd_args *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(a->name, fmt, ap);
	va_end(ap);
	return 1;
}

int cmd_err(const struct cmd_args *a, errcode_t err, const char *fmt, ...)
{
	va_list ap;
	char *what = NULL;

	if (fmt) {
		va_start(ap, fmt);
		what = vformat(fmt, ap);
		va_end(ap);
	}
	cmd_fail(a, "%s%s%s%s", what ? what : "", what ? ": " : "",
		 error_message(err),
		 csum_error(err) ? " (fsck.extref checks and repairs it)" : "");
	free(what);
	return 1;
}

int cmd_usage(const struct cmd_args *a)
{
	const char *u = cur_spec ? cur_spec->usage : "";

	return cmd_fail(a, "usage: %s%s%s", a->name, *u ? " " : "", u);
}

/* "CMD: problem; usage: CMD ARGS" on one line. */
__attribute__((format(printf, 2, 3)))
static int opt_fail(const struct cmd_args *a, const char *fmt, ...);

static int opt_fail(const struct cmd_args *a, const char *fmt, ...)
{
	va_list ap;
	const char *u = cur_spec ? cur_spec->usage : "";
	char *what = NULL;

	va_start(ap, fmt);
	what = vformat(fmt, ap);
	va_end(ap);
	cmd_fail(a, "%s; usage: %s%s%s", what ? what : fmt, a->name,
		 *u ? " " : "", u);
	free(what);
	return 1;
}

static const struct cmd_spec *find_spec(const char *canon)
{
	size_t i;

	for (i = 0; i < sizeof(cmd_table) / sizeof(cmd_table[0]); i++)
		if (!strcmp(cmd_table[i].name, canon))
			return &cmd_table[i];
	return NULL;
}

/*
 * Options come before the positional arguments ("--" ends them); a
 * lone "-" or anything not starting with '-' is the first positional.
 */
static int parse_args(const struct cmd_spec *spec, int argc, char **argv,
		      struct cmd_args *a)
{
	int i = 1;

	if (spec->optstring) {
		for (; i < argc; i++) {
			const char *s = argv[i];

			if (s[0] != '-' || s[1] == 0)
				break;
			if (!strcmp(s, "--")) {
				i++;
				break;
			}
			if (s[1] == '-') {
				if (spec->longopt && !strcmp(s + 2, spec->longopt)) {
					a->opts[(int)spec->longchar] = 1;
					continue;
				}
				return opt_fail(a, "unknown option %s", s);
			}
			for (s++; *s; s++) {
				const char *o = strchr(spec->optstring, *s);

				if (!o || *s == ':' || (unsigned char)*s >= 128)
					return opt_fail(a, "unknown option -%c", *s);
				a->opts[(int)*s] = 1;
				if (o[1] == ':') {
					if (s[1]) {
						a->optarg[(int)*s] = s + 1;
					} else if (i + 1 < argc) {
						a->optarg[(int)*s] = argv[++i];
					} else {
						return opt_fail(a, "option -%c needs a value", *s);
					}
					break;
				}
			}
		}
	}
	a->argc = argc - i;
	a->argv = argv + i;
	return 0;
}

/* The request naming name (any alias) in table, or NULL. */
static const ss_request_entry *find_request(ss_request_table *table,
					    const char *name)
{
	const ss_request_entry *r;
	int i;

	for (r = table->requests; r->command_names; r++)
		for (i = 0; r->command_names[i]; i++)
			if (!strcmp(r->command_names[i], name))
				return r;
	return NULL;
}

static void print_names(const ss_request_entry *r)
{
	int i;

	for (i = 0; r->command_names[i]; i++)
		printf("%s%s", i ? ", " : "", r->command_names[i]);
}

/* help: the list of requests; help CMD: what CMD does and its usage. */
int impl_help(struct cmd_args *a)
{
	const ss_request_entry *r;
	const struct cmd_spec *spec = NULL;
	const char *lr[] = { "list_requests", NULL };
	int i;

	if (!a->argc) {
		ss_list_requests(1, lr, sh.sci_idx, NULL);
		return 0;
	}
	r = find_request(&extref_cmds, a->argv[0]);
	if (!r)
		r = find_request(&ss_std_requests, a->argv[0]);
	if (!r)
		return cmd_fail(a, "%s: no such command (\"help\" lists them)",
				a->argv[0]);
	for (i = 0; !spec && r->command_names[i]; i++)
		spec = find_spec(r->command_names[i]);
	print_names(r);
	printf(": %s\n", r->info_string);
	if (spec)
		printf("usage: %s%s%s\n", spec->name, *spec->usage ? " " : "",
		       spec->usage);
	return 0;
}

void run_cmd(const char *canon, int argc, char **argv)
{
	struct cmd_args a;
	const struct cmd_spec *spec = find_spec(canon);
	int ret;

	memset(&a, 0, sizeof(a));
	a.name = argc > 0 ? argv[0] : canon;
	cur_spec = spec;
	if (!spec) {
		ret = cmd_fail(&a, "internal error: no table entry");
		goto out;
	}
	ret = parse_args(spec, argc, argv, &a);
	if (ret)
		goto out;
	if (a.argc < spec->min_args ||
	    (spec->max_args >= 0 && a.argc > spec->max_args)) {
		ret = cmd_usage(&a);
		goto out;
	}
	if ((spec->needs & (CMD_IMAGE | CMD_WRITE | CMD_TREE)) && !sh.xfs) {
		ret = cmd_fail(&a, "no image is open");
		goto out;
	}
	if ((spec->needs & CMD_WRITE) && !sh.rw) {
		ret = cmd_fail(&a, "needs an image opened with -w");
		goto out;
	}
	if ((spec->needs & CMD_WRITE) && sh.nocsum &&
	    !(spec->needs & CMD_EXPERT)) {
		ret = cmd_fail(&a, "the image's checksums are not verified "
			       "(opened with -n): only the expert commands "
			       "may write");
		goto out;
	}
	if ((spec->needs & CMD_TREE) && !sh_tree()) {
		ret = cmd_fail(&a, "needs the reference-count tree, which did not load: %s",
			       error_message(sh.tree_err ? sh.tree_err
						     : EXTREF_ERR_NO_TREE));
		goto out;
	}
	ret = spec->impl(&a);
out:
	fflush(stdout);
	if (ret)
		sh.failed = 1;
	cur_spec = NULL;
}
