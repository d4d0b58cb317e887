/*
 * main.c --- debugfs.extref: options, opening the image, the three modes
 * (interactive, -R request, -f command file).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ss/ss.h>
#include <et/com_err.h>
#include "debugfs.h"
#include "extref_builder.h"
#include "extref_fsck.h"

#ifndef EXTREF_VERSION_STRING
#define EXTREF_VERSION_STRING EXTREF_LIB_VERSION
#endif

extern ss_request_table extref_cmds;

struct shell sh;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-w] [-n] [--consistent] [--verify] [--no-replay] "
		"[--as UID[:GID[,GID...]] [--cap CAP,...]] [-R request] "
		"[-f cmdfile] [-V|--version] [-h|--help] [IMAGE]\n"
		"Inspect and change an extref image (ext4 with a reference-count\n"
		"tree in inode 5).\n\n"
		"  -w             open the image read-write\n"
		"  -n             do not verify ext4 metadata checksums (with -w:\n"
		"                 only the expert commands may write)\n"
		"  --consistent   refuse to read an image another extref writer\n"
		"                 holds (by default it is read, with a warning)\n"
		"  --no-replay    show an image whose journal needs recovery as it\n"
		"                 is on disk, as stock debugfs does (default: as the\n"
		"                 journal's verified replay leaves it, in memory)\n"
		"  --as UID[:GID[,GID...]]\n"
		"                 act as that user, groups first GID, then the\n"
		"                 others: every command checks what the kernel would\n"
		"  --cap CAP,...  capabilities of that user (kernel names: chown,\n"
		"                 dac_override, fowner, ...; all; default none)\n"
		"  --verify       with -w: prove the counts against every extent,\n"
		"                 even where the tree's stamp says a writer of\n"
		"                 libextref did and nothing outside has changed\n"
		"                 the allocation since (the default trusts it)\n"		"  -R REQUEST     run one request and exit\n"
		"  -f CMDFILE     run the requests in CMDFILE (- for stdin) and exit\n"
		"  -V, --version  print the version and exit\n"
		"  -h, --help     print this help and exit\n\n"
		"Type \"help\" or \"list_requests\" in the shell for the commands,\n"
		"\"help COMMAND\" for one command's usage.\n",
		PROG_NAME);
}

/* Errors of an ext4 checksum that does not match. */
int csum_error(errcode_t err)
{
	switch (err) {
	case EXT2_ET_SB_CSUM_INVALID:
	case EXT2_ET_INODE_CSUM_INVALID:
	case EXT2_ET_INODE_BITMAP_CSUM_INVALID:
	case EXT2_ET_BLOCK_BITMAP_CSUM_INVALID:
	case EXT2_ET_EXTENT_CSUM_INVALID:
	case EXT2_ET_DIR_CSUM_INVALID:
	case EXT2_ET_EXT_ATTR_CSUM_INVALID:
	case EXT2_ET_MMP_CSUM_INVALID:
	case EXTREF_ERR_DESC_CSUM:
		return 1;
	}
	return 0;
}

/*
 * libext2fs's open checks the superblock's checksum, not the group
 * descriptors' (every close rewrites those): a writer checks them here.
 */
static errcode_t check_descs(ext2_filsys fs)
{
	dgrp_t g;

	if (!ext2fs_has_group_desc_csum(fs))
		return 0;
	for (g = 0; g < fs->group_desc_count; g++)
		if (!ext2fs_group_desc_csum_verify(fs, g))
			return EXTREF_ERR_DESC_CSUM;
	return 0;
}

/* --consistent: a read-only open refuses an image a writer holds. */
static int consistent;

/*
 * The ext4 part, verifying checksums unless nocsum.  A read-only open
 * whose superblock fails its checksum goes on without verifying, and
 * says so; a read-write one is refused.
 */
static errcode_t open_ext4(const char *image, int rw, int *nocsum,
			   const char *who, extref_fs_t *xfs)
{
	int flags = EXTREF_OPEN_NO_TREE | (rw ? EXTREF_OPEN_RW : 0) |
		    EXTREF_OPEN_STAMP | (sh.verify ? EXTREF_OPEN_VERIFY : 0);
	errcode_t err;

	if (!rw && sh.no_replay)
		flags |= EXTREF_OPEN_NO_JOURNAL;	/* no in-memory replay */
	/* With NO_TREE, FORCE only sets EXT2_FLAG_IGNORE_CSUM_ERRORS. */
	err = extref_fs_open(image, flags | (*nocsum ? EXTREF_OPEN_FORCE : 0),
			     xfs, NULL);
	/* a reader is not shut out by a writer, as with stock debugfs,
	 * unless it asked for a consistent view */
	if (err == EXTREF_ERR_LOCKED_WRITER && !rw && !consistent) {
		fprintf(stderr, "%s: warning: %s: %s; reading it anyway: what "
			"is read may change under the shell (--consistent "
			"refuses)\n", who, image, error_message(err));
		flags |= EXTREF_OPEN_NO_LOCK;
		err = extref_fs_open(image, flags |
				     (*nocsum ? EXTREF_OPEN_FORCE : 0),
				     xfs, NULL);
	}
	if (err && csum_error(err) && !rw && !*nocsum) {
		fprintf(stderr, "%s: warning: %s: %s; reading it without "
			"verifying checksums (fsck.extref repairs it)\n",
			who, image, error_message(err));
		*nocsum = 1;
		err = extref_fs_open(image, flags | EXTREF_OPEN_FORCE, xfs,
				     NULL);
	}
	if (!err && rw && !*nocsum) {
		err = check_descs(extref_fs_ext2(*xfs));
		if (err)
			extref_fs_abort(*xfs);
	}
	return err;
}

/* The transaction or block a journal error is about, or the process
 * holding the lock, when there is one. */
static void open_detail(const char *who, const char *image, errcode_t err)
{
	const char *d = extref_journal_detail();
	const char *holder = extref_image_lock_holder();

	if (err == EXTREF_ERR_LOCKED_WRITER || err == EXTREF_ERR_LOCKED_READER) {
		if (*holder)
			fprintf(stderr, "%s: %s: the lock is %s\n", who, image,
				holder);
	} else if (*d) {
		fprintf(stderr, "%s: %s: journal: %s\n", who, image, d);
	}
}

/*
 * A writer does not open an image an interrupted mkfs.extref --convert
 * or --grow left its undo file beside: the user puts the image back with
 * it or deletes it first (extref_build_left_note says how).  Asked
 * before the open, which could replay the journal.
 */
static int convert_left(const char *image, const char *who)
{
	errcode_t left = extref_build_left(image, 0);

	if (!left)
		return 0;
	fprintf(stderr, "%s: %s: %s; not opened for writing\n", who, image,
		extref_build_left_note(image, left));
	return 1;
}

/* Open IMAGE as the shell's image; who names the caller in messages. */
int shell_open(const char *image, int rw, int nocsum, const char *who)
{
	errcode_t err, tree_err, kind;
	extref_fs_t xfs;

	if (rw && convert_left(image, who))
		return 1;	/* before the open, which could replay */
	err = open_ext4(image, rw, &nocsum, who, &xfs);
	if (err && rw && csum_error(err)) {
		fprintf(stderr, "%s: %s: %s: not opened for writing (writes "
			"need metadata that verifies: fsck.extref checks and "
			"repairs it)\n", who, image, error_message(err));
		return 1;
	}
	if (err) {
		com_err(who, err, "while opening %s", image);
		open_detail(who, image, err);
		return 1;
	}
	/* The tree may be damaged: the shell inspects the ext4 part then;
	 * an image whose tree is not made yet says the next step. */
	tree_err = extref_fs_load_tree(xfs);
	kind = tree_err ? extref_fsck_unbuilt(extref_fs_ext2(xfs)) : 0;
	if (kind)
		tree_err = kind;
	sh.xfs = xfs;
	sh.fs = extref_fs_ext2(xfs);
	sh.image = strdup(image);
	sh.rw = rw;
	sh.nocsum = nocsum;
	sh.tree_err = tree_err;
	sh.cwd = EXT2_ROOT_INO;
	shell_apply_identity(who);
	if (extref_fs_replay_error(xfs))
		fprintf(stderr, "%s: warning: %s: the journal needs recovery "
			"and cannot be replayed (%s); showing the image as it "
			"is on disk, unreplayed\n", who, image,
			error_message(extref_fs_replay_error(xfs)));
	if (extref_fs_replay_error(xfs))
		open_detail(who, image, err);
	else if (!rw && sh.no_replay &&
		 ext2fs_has_feature_journal_needs_recovery(sh.fs->super))
		fprintf(stderr, "%s: warning: %s: the journal needs recovery; "
			"showing the image as it is on disk, unreplayed "
			"(--no-replay)\n", who, image);
	else if (extref_fs_replayed(xfs) && rw)
		fprintf(stderr, "%s: %s: recovered the journal (%u "
			"transaction%s replayed by %s, written to the image)\n",
			who, image,
			extref_fs_replayed(xfs),
			extref_fs_replayed(xfs) == 1 ? "" : "s", PROG_NAME);
	else if (extref_fs_replayed(xfs))
		fprintf(stderr, "%s: warning: %s: the journal needs recovery; "
			"showing the image as %s's verified replay of it (%u "
			"transaction%s) leaves it, in memory only: the file is "
			"not changed (open it with -w, or run fsck.extref, to "
			"replay it; --no-replay shows it as on disk)\n",
			who, image, PROG_NAME, extref_fs_replayed(xfs),
			extref_fs_replayed(xfs) == 1 ? "" : "s");
	if (tree_err)
		fprintf(stderr, "%s: warning: %s: reference-count tree not "
			"loaded: %s; only ext4 inspection works\n",
			who, image, error_message(tree_err));
	if (rw && nocsum)
		fprintf(stderr, "%s: warning: %s: checksums not verified "
			"(-n): only the expert commands may write\n",
			who, image);
	return 0;
}

/* Close (and commit) the open image. */
int shell_close(const char *who)
{
	errcode_t err;

	if (!sh.xfs)
		return 0;
	err = extref_fs_close(sh.xfs);	/* commits an open batch */
	sh.batch = 0;
	sh.xfs = NULL;
	sh.fs = NULL;
	free(sh.image);
	sh.image = NULL;
	sh.rw = 0;
	sh.nocsum = 0;
	sh.tree_err = 0;
	if (err) {
		com_err(who, err, "while closing the image");
		return 1;
	}
	return 0;
}

int impl_open(struct cmd_args *a)
{
	if (sh.xfs)
		return cmd_fail(a, "%s is already open; close it first", sh.image);
	return shell_open(a->argv[0], a->opts['w'], a->opts['n'], a->name);
}

int impl_close(struct cmd_args *a)
{
	return shell_close(a->name);
}

/* Run one line; ss_execute_line parses its buffer in place. */
static void execute(const char *line)
{
	char *buf = strdup(line);
	int ret;

	if (!buf) {
		perror(PROG_NAME);
		sh.failed = 1;
		return;
	}
	ret = ss_execute_line(sh.sci_idx, buf);
	if (ret) {
		ss_perror(sh.sci_idx, ret, buf);
		sh.failed = 1;
	}
	free(buf);
}

static void run_file(const char *name)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!strcmp(name, "-")) {
		f = stdin;
	} else {
		f = fopen(name, "r");
		if (!f) {
			perror(name);
			sh.failed = 1;
			return;
		}
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *p = line;

		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			continue;
		printf("%s: %s\n", PROG_NAME, esc(p));
		fflush(stdout);
		/* ss_quit only stops ss_listen: end the file here. */
		if (!strcmp(p, "q") || !strcmp(p, "quit") ||
		    !strncmp(p, "q ", 2) || !strncmp(p, "quit ", 5))
			break;
		execute(p);
	}
	free(line);
	if (f != stdin)
		fclose(f);
}

static const struct option long_opts[] = {
	{ "help",	no_argument,	NULL, 'h' },
	{ "version",	no_argument,	NULL, 'V' },
	{ "as",		required_argument, NULL, 'A' },
	{ "cap",	required_argument, NULL, 'C' },
	{ "verify",	no_argument,	NULL, 'P' },
	{ "consistent",	no_argument,	NULL, 'c' },
	{ "no-replay",	no_argument,	NULL, 'N' },
	{ NULL, 0, NULL, 0 }
};

int main(int argc, char **argv)
{
	const char *request = NULL, *cmdfile = NULL, *caps = NULL;
	int c, rw = 0, nocsum = 0, ret;

	add_error_table(&et_ext2_error_table);

	while ((c = getopt_long(argc, argv, "wnR:f:Vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'w':
			rw = 1;
			break;
		case 'n':
			nocsum = 1;
			break;
		case 'R':
			request = optarg;
			break;
		case 'f':
			cmdfile = optarg;
			break;
		case 'A':
			if (parse_identity(optarg, &sh.ident)) {
				fprintf(stderr, "%s: bad identity for --as "
					"(UID[:GID[,GID...]]): %s\n",
					PROG_NAME, optarg);
				return 1;
			}
			sh.have_ident = 1;
			break;
		case 'C':
			caps = optarg;
			break;
		case 'P':
			sh.verify = 1;
			break;
		case 'c':
			consistent = 1;
			break;
		case 'N':
			sh.no_replay = 1;
			break;
		case 'V':
			printf("%s %s (libextref %s)\n", PROG_NAME,
			       EXTREF_VERSION_STRING, EXTREF_LIB_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (argc - optind > 1 || (request && cmdfile) ||
	    (rw && sh.no_replay)) {
		if (rw && sh.no_replay)
			fprintf(stderr, "%s: --no-replay is for read-only "
				"opens (a write open replays the journal "
				"first)\n", PROG_NAME);
		usage(stderr);
		return 1;
	}
	if (caps && (!sh.have_ident || parse_caps(caps, &sh.ident.caps))) {
		fprintf(stderr, sh.have_ident ? "%s: bad capability list for "
			"--cap: %s\n" : "%s: --cap %s needs --as\n",
			PROG_NAME, caps);
		return 1;
	}

	sh.sci_idx = ss_create_invocation(PROG_NAME, EXTREF_VERSION_STRING,
					  NULL, &extref_cmds, &ret);
	if (ret) {
		ss_perror(sh.sci_idx, ret, "creating invocation");
		return 1;
	}
	ss_add_request_table(sh.sci_idx, &ss_std_requests, 1, &ret);
	if (ret) {
		ss_perror(sh.sci_idx, ret, "adding standard requests");
		return 1;
	}

	if (optind < argc && shell_open(argv[optind], rw, nocsum, PROG_NAME)) {
		if (request || cmdfile)
			return 1;
	}

	if (request) {
		execute(request);
	} else if (cmdfile) {
		run_file(cmdfile);
	} else {
		ss_listen(sh.sci_idx);
	}

	if (shell_close(PROG_NAME))
		sh.failed = 1;
	ss_delete_invocation(sh.sci_idx);
	return sh.failed ? 1 : 0;
}
