/*
 * main.c --- mkfs.extref: make an empty extref image.
 *
 * Usage: mkfs.extref [options] IMAGE [SIZE]
 *
 * getopt here; every option and the size are checked by the library
 * (extref_build_args_set, extref_build_args_check) before the image is
 * touched; the steps after that are target_create() (target.c),
 * run_mke2fs() (mke2fs_run.c) and format_image() (steps.c:
 * extref_build_format), then -d's copy (source.c) and the labels.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <et/com_err.h>
#include <ext2fs/ext2fs.h>
#include <limits.h>

#include "extref_builder.h"
#include "mkfs.h"

#ifndef EXTREF_VERSION_STRING
#define EXTREF_VERSION_STRING EXTREF_LIB_VERSION
#endif

const char *prog = "mkfs.extref";
struct mkfs_plan plan;

/* Every form, once: the head of --help and what a bad call prints. */
static void usage_lines(FILE *f)
{
	fprintf(f,
"Usage: %s [options] IMAGE [SIZE]\n"
"       %s -d SOURCE|ARCHIVE [--dedup=none|file|block] [--all-root]\n"
"           [--headroom=PCT] [--file-contexts=FILE] [options] IMAGE [SIZE]\n"
"       %s --convert [--dedup=none|file|block] [--shrink] [-q] IMAGE\n"
"       %s --update -d SOURCE [--at PATH] [--delete] [--verify] [--grow]\n"
"           [--atomic] IMAGE\n",
		prog, prog, prog, prog);
}

static void usage(FILE *f)
{
	usage_lines(f);
	fprintf(f,
"Make an empty extref image: an ext4 filesystem with an empty\n"
"reference-count tree in inode 5.  With --convert, turn an existing ext4\n"
"image (from mke2fs -d, say) into one in place, and with --dedup share\n"
"the identical data it holds.\n"
"\n"
"SIZE is a number with an optional K, M, G or T suffix (powers of 1024);\n"
"a plain number counts blocks (of -b's size, else of 1024 bytes).\n"
"Needed when IMAGE does not exist; a smaller file is extended; without\n"
"it an existing IMAGE is used whole, as mke2fs uses it.\n"
"\n"
"Options:\n"
"  -b BLOCKSIZE   block size: 1024, 2048 or 4096\n"
"  -N NUM         number of inodes\n"
"  -i BYTES       bytes per inode\n"
"  -I SIZE        inode size in bytes\n"
"  -L LABEL       volume label (at most 16 bytes: longer is cut)\n"
"  -U UUID        filesystem UUID\n"
"  -E OPTS        extended options, as mke2fs's: hash_seed=UUID,\n"
"                 root_owner[=UID:GID], lazy_itable_init=0|1, nodiscard,\n"
"                 stride=N, resize=N, no_copy_xattrs... (not offset=)\n"
"  -O FEATURES    ext4 features to set or (with ^) clear, as in mke2fs\n"
"  -F             overwrite an existing filesystem\n"
"  -q             quiet\n"
"  -v             print mke2fs's report\n"
"  -t TYPE, -T USAGE-TYPES, -m PCT, -j, -J OPTS, -g N, -G N, -r 1,\n"
"  -e ERRORS, -M DIR, -o OS, -l FILE, -c, -D, -K\n"
"                 passed to mke2fs as given (-t and -T: the types of\n"
"                 its own mke2fs.conf); -C, -S refused\n"
"  -n             show what mke2fs would lay out; write nothing\n"
"  -z UNDO_FILE   save what the whole run overwrites (for e2undo)\n"
"  -V             print the version and exit\n"
"  -h, --help     print this help and exit\n"
"  -d SOURCE      copy the directory SOURCE, or the tar or cpio archive\n"
"                 SOURCE (a file or a pipe; -: standard input), into the\n"
"                 image (a new one without SIZE: the content plus\n"
"                 --headroom); given more than once, archives applied\n"
"                 in order as OCI layers (whiteouts delete);\n"
"                 layers:LIST, one archive a line; oci:DIR[:TAG], an\n"
"                 OCI image layout on disk\n"
"  --size=auto    with -d: size an existing IMAGE from SOURCE too\n"
"  --headroom=PCT with -d and no SIZE, or --shrink: room to spare, in\n"
"                 percent (5)\n"
"  --all-root     with -d or --update: every file owned by root\n"
"  --file-contexts=FILE  label every file the build creates from the\n"
"                 SELinux file_contexts FILE (security.selinux)\n"
"  --convert      convert the existing ext4 filesystem in IMAGE\n"
"  --shrink       with --convert: replace the image file by a fresh\n"
"                 -d IMAGE build of what it holds (an extref image of a\n"
"                 build's size, the same files), renamed over it; alone:\n"
"                 the same for an extref image; not on a block device\n"
"  --dedup=MODE   with -d or --convert: none, file (identical files) or\n"
"                 block (every identical block); default: block with -d,\n"
"                 none with --convert\n"
"  --update       write the directory SOURCE (-d) into the existing extref\n"
"                 image IMAGE: new files added, files in both replaced,\n"
"                 files only in the image kept; data equal to what the\n"
"                 image holds is shared, only new blocks are written;\n"
"                 SOURCE an archive: applied as one more OCI layer\n"
"  --at PATH      with --update: the image's directory to write into (/)\n"
"  --delete       with --update: remove what SOURCE lacks, as rsync does\n"
"  --verify       with --update: prove the counts against every extent,\n"
"                 even where the tree's stamp says it was done\n"
"  --atomic       with --update: refuse an update too big for one\n"
"                 transaction of the journal (by default the journal\n"
"                 grows to hold it, and stays so)\n"
"  --grow         with --update: an image file without room for the\n"
"                 update is first grown (stock resize2fs) to what it\n"
"                 needs, --headroom more; never a block device\n"
"With SOURCE_DATE_EPOCH set, -d and --update clamp every timestamp to it,\n"
"and a new image's UUID and hash seed, unless given, are derived from it,\n"
"the label and the source: the same source gives the same image.\n");
}

/* A bad call: the usage lines and where the rest is, as mke2fs does. */
static void bad_usage(void)
{
	usage_lines(stderr);
	fprintf(stderr, "Try '%s --help' for more information.\n", prog);
	exit(1);
}

static void version(void)
{
	const char *lib_ver;

	ext2fs_get_library_version(&lib_ver, NULL);
	printf("%s %s (EXT2FS library %s)\n", prog, EXTREF_VERSION_STRING,
	       lib_ver);
	exit(0);
}

/* One option into o (extref_build_args_set: its value checked). */
static void take_opt(struct extref_build_args *o, int c, const char *arg)
{
	char why[PATH_MAX + 256];

	if (extref_build_args_set(o, c, arg, why, sizeof(why)))
		fatal("%s", why);
	if (c == 'L' && o->label == o->label_cut)	/* as mke2fs does */
		fprintf(stderr, "%s: warning: label too long; truncated to "
			"'%s'\n", prog, o->label);
}

/* getopt's refusal of c said (as mke2fs says it); no return. */
static void bad_opt(char **argv)
{
	if (optopt && extref_build_args_needs_arg(optopt))
		fprintf(stderr, "%s: option -%c needs an argument\n", prog,
			optopt);
	else if (optopt)
		fprintf(stderr, "%s: invalid option -%c\n", prog, optopt);
	else
		fprintf(stderr, "%s: invalid option %s\n", prog,
			argv[optind - 1]);
	bad_usage();
}

static void parse_args(int argc, char **argv, struct extref_build_args *o)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "convert", no_argument, NULL, EXTREF_ARG_CONVERT },
		{ "dedup", required_argument, NULL, EXTREF_ARG_DEDUP },
		{ "headroom", required_argument, NULL, EXTREF_ARG_HEADROOM },
		{ "all-root", no_argument, NULL, EXTREF_ARG_ALL_ROOT },
		{ "file-contexts", required_argument, NULL,
		  EXTREF_ARG_FILE_CONTEXTS },
		{ "update", no_argument, NULL, EXTREF_ARG_UPDATE },
		{ "at", required_argument, NULL, EXTREF_ARG_AT },
		{ "delete", no_argument, NULL, EXTREF_ARG_DELETE },
		{ "shrink", no_argument, NULL, EXTREF_ARG_SHRINK },
		{ "verify", no_argument, NULL, EXTREF_ARG_VERIFY },
		{ "grow", no_argument, NULL, EXTREF_ARG_GROW },
		{ "atomic", no_argument, NULL, EXTREF_ARG_ATOMIC },
		{ "size", required_argument, NULL, EXTREF_ARG_SIZE },
		{ NULL, 0, NULL, 0 }
	};
	char optstring[80], why[PATH_MAX + 256];
	int c;

	opterr = 0;
	extref_build_args_init(o);
	snprintf(optstring, sizeof(optstring), "%sVh",
		 extref_build_args_optstring());
	while ((c = getopt_long(argc, argv, optstring, longopts,
				NULL)) != -1) {
		if (c == 'V')
			version();
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?' || c == ':')
			bad_opt(argv);
		take_opt(o, c, optarg);
	}
	if (optind >= argc || argc - optind > 2)
		bad_usage();
	o->image = argv[optind];
	if (argc - optind == 2 && (o->size_arg || o->size_auto))
		fatal("SIZE given twice (--size and %s)", argv[optind + 1]);
	if (argc - optind == 2)
		o->size_arg = argv[optind + 1];
	if (extref_build_args_check(o, why, sizeof(why)))
		fatal("%s", why);
}

int main(int argc, char **argv)
{
	struct extref_build_args o;
	struct extref_build_target t;
	int rc = 0;

	memset(&t, 0, sizeof(t));
	add_error_table(&et_ext2_error_table);

	cleanup_init();			/* nothing left behind: cleanup.c */
	parse_args(argc, argv, &o);
	progress_init(!o.quiet && isatty(1));
	if (o.convert || o.shrink)
		return convert_image(&o);
	if (o.update)
		return update_image(&o);
	if (o.size_arg &&
	    extref_build_parse_size(o.size_arg, o.blocksize ? o.blocksize :
				    1024, &plan.size_bytes))
		fatal("invalid SIZE '%s' (a number with an optional K, M, G "
		      "or T suffix)", o.size_arg);
	/* No SIZE: an existing image is used whole, as mke2fs does. */
	if (!o.size_arg && !o.size_auto)
		target_whole(&o);
	/* A build's blocks follow its data, not mke2fs's table for small
	 * filesystems (1 KiB below 512 MiB): 4 KiB unless -b says.  An
	 * existing image used whole takes mke2fs's choice, as mke2fs. */
	if (o.source && !o.blocksize && !plan.whole) {
		o.blocksize = 4096;
		o.bs_chosen = 1;
	}
	if (o.source)
		source_check(&o);		/* may set the size */

	target_probe(&o, &t);		/* nothing touched yet */
	if (o.noaction)
		return run_mke2fs(&o, &t) ? 1 : 0; /* nor will be */
	target_create(&o, &t);
	if (o.undo && !t.orig_size) {
		o.undo = NULL;		/* a new image: nothing to put back */
	} else if (o.undo && undo_build_begin(&o, &t)) {
		target_undo(&o);
		return 1;
	}
	if (run_mke2fs(&o, &t) || format_image(&o) ||
	    (o.source && source_finish(&o)) ||
	    (o.file_contexts && labels_apply(&o))) {
		if (o.undo)
			undo_build_abort(&o);
		target_undo(&o);
		rc = 1;
	} else if (o.undo && undo_build_end(&o)) {
		extref_build_guard_keep();	/* made, but no undo file */
		rc = 1;
	} else {
		extref_build_guard_keep();
		/* the image is made: a summary that fails keeps it */
		if (o.source && !o.quiet)
			rc = summary_print(&o);
	}
	extref_build_args_free(&o);
	return rc;
}
