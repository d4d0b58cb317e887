/*
 * mke2fs_run.c --- lay out the ext4 filesystem with the stock mke2fs.
 *
 * mke2fs runs as a child (posix_spawn, no shell: the library's
 * extref_build_run_tool;
 * MKFS_EXTREF_MKE2FS names another mke2fs than the one found at build
 * time) with MKE2FS_CONFIG pointing at a configuration of our own, so the
 * result does not depend on the host's /etc/mke2fs.conf.  Its text, the
 * argv and the one line said on failure are the library's
 * (libfs/builder/mke2fs.c: extref_build_mke2fs_conf, _argv, _why); the
 * configuration is a memory file (memfd) the child reads through
 * /proc/self/fd, or, where there is none, a temporary file registered
 * with cleanup.c.
 */
#define _GNU_SOURCE
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

#include "extref_builder.h"
#include "mkfs.h"

#ifndef MKE2FS_PATH
#define MKE2FS_PATH "/sbin/mke2fs"
#endif

/*
 * The configuration in a memory file: its descriptor (closed at exec but
 * in the child, which keeps it) and the name the child opens it by in
 * path; -1 where there is no memfd or no /proc.  Nothing to remove.
 */
static int conf_memfd(char *path, size_t len)
{
	size_t n = strlen(extref_build_mke2fs_conf());
	int fd = memfd_create("mkfs.extref.conf", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	if (write(fd, extref_build_mke2fs_conf(), n) != (ssize_t)n ||
	    access(path, R_OK)) {
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
	size_t n = strlen(extref_build_mke2fs_conf());
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
	if (write(fd, extref_build_mke2fs_conf(), n) != (ssize_t)n ||
	    close(fd) < 0) {
		error_line("cannot write %s: %s", path, strerror(errno));
		cleanup_drop_conf();
		return -1;
	}
	return 0;
}

/* o and t as the library's mke2fs call takes them. */
static void mke2fs_of(const struct mkfs_opts *o, const struct mkfs_target *t,
		      struct extref_build_mke2fs *m)
{
	memset(m, 0, sizeof(*m));
	m->image = o->image;
	m->fs_bytes = t->fs_bytes;
	m->blocksize = o->blocksize;
	m->give_blocksize = o->bs_chosen || !o->host_conf;
	m->fs_type = o->fs_type;
	m->inodes = o->inodes;
	m->inode_ratio = o->inode_ratio;
	m->inode_size = o->inode_size;
	m->label = o->label;
	m->uuid = o->uuid;
	m->ext_opts = o->ext_opts;
	m->features = o->features;
	m->journal_opt = o->journal_given ? NULL : o->journal_opt;
	m->reserved_zero = o->reserved_zero && !o->reserved_given;
	m->pass = o->pass;
	m->npass = o->npass;
	m->verbose = o->verbose;
	m->has_source = o->source != NULL;
	m->created = t->created;
	m->is_blockdev = t->is_blockdev;
	m->have_epoch = o->have_epoch;	/* -U, hash_seed= derived */
	m->epoch = o->epoch;
	m->source_digest = o->source_digest;
	if (o->source) {
		m->need_for = o->archive ? o->archive : o->source;
		m->need = o->source_need;
	}
}

int run_mke2fs(const struct mkfs_opts *o, const struct mkfs_target *t)
{
	struct extref_build_mke2fs m;
	char conf[4096], why[8192], *out = NULL;
	int status = 0, conf_fd, err;

	mke2fs_of(o, t, &m);
	if (extref_build_mke2fs_argv(&m)) {
		error_line("%s: the options for mke2fs are too long", o->image);
		return -1;
	}
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
	err = run_e2fs_tool(o, MKE2FS_PATH, "MKFS_EXTREF_MKE2FS", m.argv,
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
	extref_build_mke2fs_why(&m, out, status, why, sizeof(why));
	error_line("%s", why);
	free(out);
	return -1;
}
