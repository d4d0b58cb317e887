/*
 * cmds.c --- the central checks of debugfs.extref's commands.
 *
 * The commands are listed once, in commands.def; the build makes from it
 * the libss table (debug_cmds.ct), cmd_table and the thin do_NAME()
 * handlers (cmds_gen.c).  mk_cmds's table dispatches each request to its
 * do_NAME(), which calls run_cmd(): it looks the command up in cmd_table,
 * parses its options, checks the argument count and what the command
 * needs (an image, -w, the tree) in one place, runs the implementation
 * and records a failure for the exit status.  Implementations never
 * repeat those checks.
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

	for (i = 0; i < cmd_table_len; i++)
		if (!strcmp(cmd_table[i].name, canon))
			return &cmd_table[i];
	return NULL;
}

/* The letter --long stands for in longopts ("raw=R,xattrs=X"), or 0. */
static int long_letter(const char *longopts, const char *lng)
{
	size_t n = strlen(lng);
	const char *p = longopts;

	while (p && *p) {
		if (!strncmp(p, lng, n) && p[n] == '=')
			return (unsigned char)p[n + 1];
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
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
				int c = long_letter(spec->longopts, s + 2);

				if (!c)
					return opt_fail(a, "unknown option %s", s);
				a->opts[c] = 1;
				continue;
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

/*
 * The length of r's help without a closing ": NAME ..." (NAME one of r's
 * names), the usage the list of requests shows and "help NAME" prints on
 * a line of its own.
 */
static int describe_len(const ss_request_entry *r)
{
	const char *info = r->info_string, *p;
	size_t n;
	int i;

	for (p = strstr(info, ": "); p; p = strstr(p + 1, ": "))
		for (i = 0; r->command_names[i]; i++) {
			n = strlen(r->command_names[i]);
			if (!strncmp(p + 2, r->command_names[i], n) &&
			    (p[2 + n] == ' ' || p[2 + n] == 0))
				return (int)(p - info);
		}
	return (int)strlen(info);
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
	printf(": %.*s\n", describe_len(r), r->info_string);
	if (spec)
		printf("usage: %s%s%s\n", spec->name, *spec->usage ? " " : "",
		       spec->usage);
	return 0;
}

/*
 * A command that writes is one transaction of the image's journal (a no-op
 * without one): committed if it succeeds, rolled back if it fails, so a
 * failed command leaves the image as it was.  Inside begin ... commit the
 * batch is the transaction, and a failed command rolls all of it back.
 */
static int run_once(const struct cmd_spec *spec, struct cmd_args *a)
{
	errcode_t err = extref_tx_begin2(sh.xfs, EXTREF_TX_SPLIT);
	int ret, undo;

	if (err) {
		com_err(a->name, err, "while starting a transaction");
		return 1;
	}
	ret = spec->impl(a);
	undo = ret && !sh.batch && extref_tx_pending(sh.xfs);
	err = extref_tx_end(sh.xfs, ret ? EXTREF_ERR_ROLLED_BACK : 0);
	/* a commit too big for the journal, when the journal may grow */
	if (!ret && err == EXTREF_ERR_TXN_TOO_BIG && sh.may_grow &&
	    sh.growable) {
		sh.too_big = 1;
		return 1;
	}
	if (!ret && err) {
		com_err(a->name, err, "while committing");
		ret = 1;
	}
	/* failed half-way: what it had changed is undone; say so */
	if (undo && err == EXTREF_ERR_ROLLED_BACK && !sh.too_big)
		fprintf(stderr, "%s: rolled back: the image is as it was "
			"before the command\n", a->name);
	if (ret && sh.batch)
		shell_batch_failed(a->name);
	return ret;
}

/*
 * Outside a batch a command that may (a recursive reflink: sets
 * sh.growable) and was refused as too big for the journal (sets
 * sh.too_big, saying nothing) or whose commit was, runs again after the
 * journal grew to hold it, a few times at most; when the journal cannot
 * grow it runs once more without asking, refused again as before, and
 * says so.
 */
#define GROW_TRIES	3

static int run_in_transaction(const struct cmd_spec *spec,
			      struct cmd_args *a)
{
	int ret, tries;

	for (tries = 0;; tries++) {
		sh.may_grow = !sh.batch && tries < GROW_TRIES;
		sh.growable = sh.too_big = 0;
		ret = run_once(spec, a);
		if (!sh.too_big)
			break;
		if (shell_grow_journal(a->name))
			tries = GROW_TRIES - 1;	/* once more, not asking */
	}
	sh.may_grow = sh.growable = sh.too_big = 0;
	return ret;
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
	ret = (spec->needs & CMD_WRITE) ? run_in_transaction(spec, &a)
				       : spec->impl(&a);
out:
	fflush(stdout);
	if (ret)
		sh.failed = 1;
	cur_spec = NULL;
}
