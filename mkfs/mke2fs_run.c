/*
 * mke2fs_run.c --- lay out the ext4 filesystem with the stock mke2fs.
 *
 * mke2fs runs as a child (posix_spawn, no shell: the library's
 * extref_build_run_tool;
 * MKFS_EXTREF_MKE2FS names another mke2fs than the one found at build
 * time) with MKE2FS_CONFIG pointing at a configuration of our own, so the
 * result does not depend on the host's /etc/mke2fs.conf.  The
 * configuration is a memory file (memfd) the child reads through
 * /proc/self/fd, or, where there is none, a temporary file.  Its output
 * is captured; on failure we print one line made from its first
 * meaningful error message.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mkfs.h"

#ifndef MKE2FS_PATH
#define MKE2FS_PATH "/sbin/mke2fs"
#endif

/* Debian's mke2fs.conf, minus the types we never ask for. */
static const char mke2fs_conf[] =
	"[defaults]\n"
	"\tbase_features = sparse_super,large_file,filetype,resize_inode,"
	"dir_index,ext_attr\n"
	"\tdefault_mntopts = acl,user_xattr\n"
	"\tenable_periodic_fsck = 0\n"
	"\tblocksize = 4096\n"
	"\tinode_size = 256\n"
	"\tinode_ratio = 16384\n"
	"\n"
	"[fs_types]\n"
	"\text4 = {\n"
	"\t\tfeatures = has_journal,extent,huge_file,flex_bg,metadata_csum,"
	"64bit,dir_nlink,extra_isize\n"
	"\t}\n"
	"\tsmall = {\n"
	"\t\tblocksize = 1024\n"
	"\t\tinode_ratio = 4096\n"
	"\t}\n"
	"\tfloppy = {\n"
	"\t\tblocksize = 1024\n"
	"\t\tinode_ratio = 8192\n"
	"\t}\n"
	"\tbig = {\n"
	"\t\tinode_ratio = 32768\n"
	"\t}\n"
	"\thuge = {\n"
	"\t\tinode_ratio = 65536\n"
	"\t}\n";

/*
 * The configuration in a memory file: its descriptor (closed at exec but
 * in the child, which keeps it) and the name the child opens it by in
 * path; -1 where there is no memfd or no /proc.  Nothing to remove.
 */
static int conf_memfd(char *path, size_t len)
{
	size_t n = sizeof(mke2fs_conf) - 1;
	int fd = memfd_create("mkfs.extref.conf", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	if (write(fd, mke2fs_conf, n) != (ssize_t)n || access(path, R_OK)) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Write the configuration to a temporary file; its name in path.  The
 * file is registered for removal (cleanup.c) as it is made.
 */
static int write_conf(char *path, size_t len)
{
	const char *dir = getenv("TMPDIR");
	size_t n = sizeof(mke2fs_conf) - 1;
	sigset_t old;
	int fd, e;

	if (!dir || !*dir)
		dir = "/tmp";
	snprintf(path, len, "%s/mkfs.extref.conf.XXXXXX", dir);
	cleanup_block(&old);
	fd = mkstemp(path);
	e = errno;
	if (fd >= 0 && cleanup_add_conf(path)) {
		close(fd);
		unlink(path);
		fd = -1;
		e = ENAMETOOLONG;
	}
	cleanup_unblock(&old);
	if (fd < 0) {
		error_line("cannot create a temporary file in %s: %s", dir,
			   strerror(e));
		return -1;
	}
	if (write(fd, mke2fs_conf, n) != (ssize_t)n || close(fd) < 0) {
		error_line("cannot write %s: %s", path, strerror(errno));
		cleanup_drop_conf();
		return -1;
	}
	return 0;
}

#define MAX_ARGS (40 + MKFS_PASS_MAX)

static void add(const char **argv, int *argc, const char *a)
{
	if (*argc < MAX_ARGS - 1)
		argv[(*argc)++] = a;
	argv[*argc] = NULL;
}

/*
 * A build into a regular file that reads back as zeros (made by us, or
 * discarded by mke2fs, which punches a file's blocks) need not have
 * its journal written with zeros: lazy_journal_init leaves it a hole,
 * the same bytes, 4 MiB less on the host.  -E is one option for
 * mke2fs (the last one wins): the user's extended options and this go
 * together.
 */
static const char *ext_opts(const struct mkfs_opts *o,
			    const struct mkfs_target *t, char *buf,
			    size_t len)
{
	int zeros = t->created ||
		    !(o->ext_opts && strstr(o->ext_opts, "nodiscard"));

	if (!o->source || t->is_blockdev || !zeros ||
	    (o->ext_opts && strstr(o->ext_opts, "lazy_journal_init")) ||
	    (o->ext_opts && strlen(o->ext_opts) + 32 > len))
		return o->ext_opts;
	snprintf(buf, len, "%s%slazy_journal_init=1",
		 o->ext_opts ? o->ext_opts : "", o->ext_opts ? "," : "");
	return buf;
}

static void build_argv(const struct mkfs_opts *o, const struct mkfs_target *t,
		       const char **argv, char *bsbuf, char *sizebuf,
		       char *ebuf, size_t elen)
{
	int n = 0;

	add(argv, &n, "mke2fs");
	if (!o->verbose)
		add(argv, &n, "-q");
	add(argv, &n, "-F");
	add(argv, &n, "-t");
	add(argv, &n, o->fs_type ? o->fs_type : "ext4");
	/* with -t or -T, mke2fs.conf's types choose unless -b says */
	if (o->bs_chosen || !o->host_conf) {
		sprintf(bsbuf, "%u", o->blocksize);
		add(argv, &n, "-b");
		add(argv, &n, bsbuf);
	}
#define OPT(flag, val) do { if (val) { add(argv, &n, flag); \
				       add(argv, &n, val); } } while (0)
	OPT("-N", o->inodes);
	OPT("-i", o->inode_ratio);
	OPT("-I", o->inode_size);
	OPT("-L", o->label);
	OPT("-U", o->uuid);
	OPT("-E", ext_opts(o, t, ebuf, elen));
	OPT("-O", o->features);
	if (!o->journal_given)
		OPT("-J", o->journal_opt);
	if (o->reserved_zero && !o->reserved_given) {
		add(argv, &n, "-m");
		add(argv, &n, "0");
	}
#undef OPT
	for (int i = 0; i < o->npass; i++)	/* as given (mke2fs_opts.c) */
		add(argv, &n, o->pass[i]);
	add(argv, &n, o->image);
	sprintf(sizebuf, "%lluk", (unsigned long long)(t->fs_bytes / 1024));
	add(argv, &n, sizebuf);
}

/*
 * Join continuation lines (mke2fs indents them with a tab) into the line
 * before, so each message is one line.
 */
static void join_continuations(char *s)
{
	for (char *p = s; (p = strchr(p, '\n')); p++)
		if (p[1] == '\t' || (p[1] == ' ' && p[2] == ' '))
			*p = ' ';
}

/* The banner, and warnings that do not explain a failure. */
static int is_noise(const char *line)
{
	return !*line ||
	       (!strncmp(line, "mke2fs ", 7) && isdigit((unsigned char)line[7])) ||
	       !strcmp(line, "Filesystem too small for a journal");
}

static int is_size_problem(const char *line)
{
	return strstr(line, "too small") || strstr(line, "Not enough space") ||
	       strstr(line, "too big for a") ||
	       strstr(line, "Illegal inode number") ||
	       strstr(line, "Cannot create filesystem with requested number");
}

/* Trim a message to its text: no "mke2fs: " or "IMAGE: " prefix. */
static char *clean(char *line, const char *image)
{
	size_t il = strlen(image);

	while (isspace((unsigned char)*line))
		line++;
	if (!strncmp(line, "mke2fs: ", 8))
		line += 8;
	if (!strncmp(line, image, il) && !strncmp(line + il, ": ", 2))
		line += il + 2;
	for (char *e = line + strlen(line);
	     e > line && isspace((unsigned char)e[-1]); )
		*--e = '\0';
	/* squeeze runs of white space left by joined lines */
	for (char *r = line, *w = line; ; r++) {
		if (isspace((unsigned char)*r)) {
			while (isspace((unsigned char)r[1]))
				r++;
			*r = ' ';
		}
		*w++ = *r;
		if (!*r)
			break;
	}
	return line;
}

/* Print one line that says why mke2fs failed. */
static void report(const struct mkfs_opts *o, char *out, int status)
{
	const char *image = o->image;
	char *line, *save = NULL, *first = NULL, *size = NULL;

	join_continuations(out);
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		line = clean(line, image);
		if (is_noise(line))
			continue;
		if (!first)
			first = line;
		if (!size && is_size_problem(line))
			size = line;
	}
	if (size && strstr(size, "Illegal inode number"))
		error_line("%s: size too small for the requested geometry "
			   "(fewer inodes than the reserved ones: give a "
			   "larger SIZE or -N, or a smaller -i)", image);
	else if (size)
		error_line("%s: size too small for the requested geometry (%s)",
			   image, size);
	else if (first && !strncmp(first, "Invalid filesystem option set: ", 31))
		error_line("%s: unknown feature in '%s'", image, first + 31);
	else if (first && o->source && o->source_need &&
		 (strstr(first, "allocate") || strstr(first, "space")))
		error_line("%s: image too small for %s (%s): it needs about "
			   "%llu KiB", image,
			   o->archive ? o->archive : o->source, first,
			   (unsigned long long)(o->source_need / 1024));
	else if (first)
		error_line("%s: %s", image, first);
	else if (WIFSIGNALED(status))
		error_line("%s: mke2fs killed by signal %d", image,
			   WTERMSIG(status));
	else
		error_line("%s: mke2fs failed (exit status %d)", image,
			   WEXITSTATUS(status));
}

int run_mke2fs(const struct mkfs_opts *o, const struct mkfs_target *t)
{
	const char *argv[MAX_ARGS];
	char conf[4096], bsbuf[16], sizebuf[32], ebuf[1024], *out = NULL;
	int status = 0, conf_fd, err;

	build_argv(o, t, argv, bsbuf, sizebuf, ebuf, sizeof(ebuf));
	if (o->host_conf) {
		/* -t or -T: the types of mke2fs's own configuration
		 * ($MKE2FS_CONFIG, else /etc/mke2fs.conf), as mke2fs */
		conf_fd = -1;
	} else {
		conf_fd = conf_memfd(conf, sizeof(conf));
		if (conf_fd < 0 && write_conf(conf, sizeof(conf)))
			return -1;
	}
	/* the child is registered (to be killed and waited for on a
	 * signal) before a signal can come (cleanup.c) */
	err = run_e2fs_tool(o, MKE2FS_PATH, "MKFS_EXTREF_MKE2FS", argv,
			    o->host_conf ? NULL : conf, conf_fd, 0, &out,
			    &status);
	if (conf_fd >= 0)
		close(conf_fd);
	cleanup_drop_conf();
	if (err) {
		error_line("%s: cannot run mke2fs: %s", o->image,
			   strerror(err));
		free(out);
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (o->verbose)
			fputs(out, stdout);
		free(out);
		return 0;
	}
	report(o, out, status);
	free(out);
	return -1;
}
