/*
 * mke2fs.c --- what a build asks of the stock mke2fs: its configuration
 * (ours, so the result does not depend on the host's /etc/mke2fs.conf),
 * its argv (extref_build_mke2fs_argv: under SOURCE_DATE_EPOCH the UUID
 * and the hash seed not given derived, build_ident.c) and the one line
 * that says why it failed, made from its output
 * (extref_build_mke2fs_why).  The run
 * itself is extref_build_run_tool's (tool.c).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "build_int.h"

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

const char *extref_build_mke2fs_conf(void)
{
	return mke2fs_conf;
}

static void add(struct extref_build_mke2fs *m, int *argc, const char *a)
{
	if (*argc < EXTREF_MKE2FS_MAX_ARGS - 1)
		m->argv[(*argc)++] = a;
	m->argv[*argc] = NULL;
}

/* e (mke2fs -E's text, checked) sets the hash seed. */
static int sets_hash_seed(const char *e)
{
	return e && (!strncmp(e, "hash_seed=", 10) ||
		     strstr(e, ",hash_seed="));
}

/*
 * SOURCE_DATE_EPOCH: the UUID and the hash seed not given derived from
 * the epoch, the label and the source's digest (build_ident.c).
 */
static void derive(struct extref_build_mke2fs *m)
{
	char uuid[37], seed[37];

	m->uuidbuf[0] = m->seedbuf[0] = '\0';
	if (!m->have_epoch)
		return;
	xr_build_ident(m->epoch, m->label, m->source_digest, m->uuid, uuid,
		       seed);
	if (!m->uuid)
		memcpy(m->uuidbuf, uuid, sizeof(uuid));
	if (!sets_hash_seed(m->ext_opts))
		memcpy(m->seedbuf, seed, sizeof(seed));
}

/*
 * A build into a regular file that reads back as zeros (made by us, or
 * discarded by mke2fs, which punches a file's blocks) need not have
 * its journal written with zeros: lazy_journal_init leaves it a hole,
 * the same bytes, 4 MiB less on the host.  -E is one option for
 * mke2fs (the last one wins): the user's extended options, a derived
 * hash seed and this go together.  NULL when they do not fit.
 */
static const char *ext_opts(struct extref_build_mke2fs *m)
{
	const char *e = m->ext_opts;
	int zeros = m->created || !(e && strstr(e, "nodiscard"));
	int lazy = m->has_source && !m->is_blockdev && zeros &&
		   !(e && strstr(e, "lazy_journal_init"));
	int n;

	if (!lazy && !m->seedbuf[0])
		return e;
	n = snprintf(m->ebuf, sizeof(m->ebuf), "%s%s%s%s%s%s",
		     e ? e : "", e && m->seedbuf[0] ? "," : "",
		     m->seedbuf[0] ? "hash_seed=" : "", m->seedbuf,
		     lazy && (e || m->seedbuf[0]) ? "," : "",
		     lazy ? "lazy_journal_init=1" : "");
	if (n < 0 || (size_t)n >= sizeof(m->ebuf))
		return m->seedbuf[0] ? NULL : e;	/* lazy: only room */
	return m->ebuf;
}

errcode_t extref_build_mke2fs_argv(struct extref_build_mke2fs *m)
{
	const char *e;
	int n = 0;

	derive(m);
	e = ext_opts(m);
	if (!e && m->seedbuf[0])
		return EXT2_ET_INVALID_ARGUMENT;
	add(m, &n, "mke2fs");
	if (!m->verbose)
		add(m, &n, "-q");
	add(m, &n, "-F");
	add(m, &n, "-t");
	add(m, &n, m->fs_type ? m->fs_type : "ext4");
	/* with -t or -T, mke2fs.conf's types choose unless -b says */
	if (m->give_blocksize) {
		snprintf(m->bsbuf, sizeof(m->bsbuf), "%u", m->blocksize);
		add(m, &n, "-b");
		add(m, &n, m->bsbuf);
	}
#define OPT(flag, val) do { if (val) { add(m, &n, flag); \
				       add(m, &n, val); } } while (0)
	OPT("-N", m->inodes);
	OPT("-i", m->inode_ratio);
	OPT("-I", m->inode_size);
	OPT("-L", m->label);
	OPT("-U", m->uuid ? m->uuid : m->uuidbuf[0] ? m->uuidbuf : NULL);
	OPT("-E", e);
	OPT("-O", m->features);
	OPT("-J", m->journal_opt);
	if (m->reserved_zero) {
		add(m, &n, "-m");
		add(m, &n, "0");
	}
#undef OPT
	for (int i = 0; i < m->npass; i++)	/* as given */
		add(m, &n, m->pass[i]);
	add(m, &n, m->image);
	snprintf(m->sizebuf, sizeof(m->sizebuf), "%lluk",
		 (unsigned long long)(m->fs_bytes / 1024));
	add(m, &n, m->sizebuf);
	if (n >= EXTREF_MKE2FS_MAX_ARGS - 1)
		return EXT2_ET_INVALID_ARGUMENT;
	return 0;
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

void extref_build_mke2fs_why(const struct extref_build_mke2fs *m, char *out,
			     int status, char *why, size_t len)
{
	const char *image = m->image;
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
		snprintf(why, len, "%s: size too small for the requested "
			 "geometry (fewer inodes than the reserved ones: give "
			 "a larger SIZE or -N, or a smaller -i)", image);
	else if (size)
		snprintf(why, len, "%s: size too small for the requested "
			 "geometry (%s)", image, size);
	else if (first && !strncmp(first, "Invalid filesystem option set: ", 31))
		snprintf(why, len, "%s: unknown feature in '%s'", image,
			 first + 31);
	else if (first && m->need_for && m->need &&
		 (strstr(first, "allocate") || strstr(first, "space")))
		snprintf(why, len, "%s: image too small for %s (%s): it needs "
			 "about %llu KiB", image, m->need_for, first,
			 (unsigned long long)(m->need / 1024));
	else if (first)
		snprintf(why, len, "%s: %s", image, first);
	else if (WIFSIGNALED(status))
		snprintf(why, len, "%s: mke2fs killed by signal %d", image,
			 WTERMSIG(status));
	else
		snprintf(why, len, "%s: mke2fs failed (exit status %d)", image,
			 WEXITSTATUS(status));
}
