/*
 * main.c --- extref-fuse: the options, the image opened for the whole
 * mount (the library's writer path: the image's lock, the journal
 * replayed, the tree loaded and verified), the request table, the mount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <et/com_err.h>
#include "xfuse.h"
#include <fuse_lowlevel.h>
#include "extref_builder.h"
#include "extref_fsck.h"

#ifndef EXTREF_VERSION_STRING
#define EXTREF_VERSION_STRING EXTREF_LIB_VERSION
#endif

struct xfuse xf;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s IMAGE MOUNTPOINT [-o OPTION[,OPTION...]] [-f] [-d]\n"
		"       %s -h|--help | -V|--version\n"
		"Mount an extref image read-write through FUSE: every write is\n"
		"copy-on-write, every request atomic (committed to the image's\n"
		"journal in batches: at fsync, and every few seconds), and\n"
		"copy_file_range (plain cp) makes reflinks;\n"
		"FICLONE, FIDEDUPERANGE and FIEMAP (cp --reflink=always,\n"
		"xfs_io, filefrag) need LD_PRELOAD=libextref-preload.so.\n"
		"Unmount with fusermount3 -u MOUNTPOINT.\n\n"
		"  -o ro                   mount read-only\n"
		"  -o commit=SECONDS       commit the requests at least this\n"
		"                          often (default 5, as ext4); 0: every\n"
		"                          request on its own, before its answer\n"
		"  -o allow_other          let other users in (fuse.conf's\n"
		"                          user_allow_other for non-root)\n"
		"  -o default_permissions  let the kernel check permissions (by\n"
		"                          default the library checks them as\n"
		"                          the kernel would, for the caller)\n"
		"  -o OPTION               any other FUSE mount option\n"
		"  -f                      stay in the foreground\n"
		"  -d                      debug: print every request (implies -f)\n"
		"  -V, --version           print the version and exit\n"
		"  -h, --help              print this help and exit\n",
		PROG_NAME, PROG_NAME);
}

static void *xf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* the umask is the server's to apply: not where a default ACL
	 * gives the mode (ctx.c) */
	if (conn->capable & FUSE_CAP_DONT_MASK)
		conn->want |= FUSE_CAP_DONT_MASK;
	cfg->use_ino = 1;
	cfg->readdir_ino = 1;
	/* an unlinked open file is not renamed to .fuse_hidden* (a name
	 * a crash would leave behind): the library keeps it on the orphan
	 * list until its last release (handle.c) */
	cfg->hard_remove = 1;
	xf_inval_start(fuse_get_context()->fuse);
	return NULL;
}

static const struct fuse_operations xf_ops = {
	.init		= xf_init,
	.getattr	= xf_getattr,
	.readlink	= xf_readlink,
	.mknod		= xf_mknod_r,
	.mkdir		= xf_mkdir_r,
	.unlink		= xf_unlink,
	.rmdir		= xf_rmdir,
	.symlink	= xf_symlink_r,
	.rename		= xf_rename_r,
	.link		= xf_link_r,
	.access		= xf_access,
	.chmod		= xf_chmod,
	.chown		= xf_chown,
	.truncate	= xf_truncate_r,
	.open		= xf_open_r,
	.release	= xf_release,
	.read		= xf_read,
	.write		= xf_write_r,
	.statfs		= xf_statfs,
	.flush		= xf_flush,
	.fsync		= xf_fsync,
	.fsyncdir	= xf_fsyncdir,
	.setxattr	= xf_setxattr_r,
	.getxattr	= xf_getxattr,
	.listxattr	= xf_listxattr,
	.removexattr	= xf_removexattr,
	.readdir	= xf_readdir,
	.create		= xf_create_r,
	.utimens	= xf_utimens,
	.fallocate	= xf_fallocate_r,
	.copy_file_range = xf_copy_file_range_r,
	.lseek		= xf_lseek,
	.ioctl		= xf_ioctl_r,
};

/* ----- options ----- */

struct cmdline {
	char	*image;
	int	mountpoint;
	int	help, version, ro;
	unsigned int commit;
};

enum { KEY_HELP, KEY_VERSION, KEY_RO };

#define XF_COMMIT_DEFAULT	5	/* seconds, as ext4's commit= */

static const struct fuse_opt opt_spec[] = {
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("ro", KEY_RO),
	{ "commit=%u", offsetof(struct cmdline, commit), 0 },
	FUSE_OPT_END
};

/* The first word is the image (kept here); the mountpoint and every
 * option go on to FUSE, -o ro noted on the way. */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *out)
{
	struct cmdline *c = data;

	(void)out;
	switch (key) {
	case KEY_HELP:
		c->help = 1;
		return 0;
	case KEY_VERSION:
		c->version = 1;
		return 0;
	case KEY_RO:
		c->ro = 1;
		return 1;
	case FUSE_OPT_KEY_NONOPT:
		if (!c->image) {
			c->image = realpath(arg, NULL);
			if (!c->image) {
				fprintf(stderr, "%s: %s: %s\n", PROG_NAME, arg,
					strerror(errno));
				return -1;
			}
			return 0;
		}
		c->mountpoint++;
		return 1;
	}
	return 1;
}

/* -s (one request at a time), and the image as the mount's source. */
static int mount_args(struct fuse_args *args, const char *image)
{
	char *opts = NULL, *fsname = NULL;
	int res;

	if (asprintf(&fsname, "fsname=%s", image) < 0)
		return -1;
	res = fuse_opt_add_opt_escaped(&opts, fsname);
	if (!res)
		res = fuse_opt_add_opt(&opts, "subtype=extref");
	if (!res)
		res = fuse_opt_add_arg(args, "-s");
	if (!res)
		res = fuse_opt_add_arg(args, "-o");
	if (!res)
		res = fuse_opt_add_arg(args, opts);
	free(fsname);
	free(opts);
	return res;
}

/* What fuse_main does, with the loop of loop.c. */
static int run(struct fuse_args *args)
{
	struct fuse_cmdline_opts o;
	struct fuse_session *se;
	struct fuse *f;
	int res = 1;

	memset(&o, 0, sizeof(o));
	if (fuse_parse_cmdline(args, &o) || !o.mountpoint) {
		free(o.mountpoint);
		return 1;
	}
	f = fuse_new(args, &xf_ops, sizeof(xf_ops), NULL);
	if (!f)
		goto out;
	se = fuse_get_session(f);
	if (fuse_mount(f, o.mountpoint))
		goto destroy;
	if (!fuse_daemonize(o.foreground) && !fuse_set_signal_handlers(se)) {
		res = xf_loop(se);
		fuse_remove_signal_handlers(se);
	}
	xf_inval_stop();
	fuse_unmount(f);
destroy:
	fuse_destroy(f);
out:
	free(o.mountpoint);
	return res;
}

/* ----- the image ----- */

/* Whether a FUSE mount of image is in this mount namespace (1 when
 * that cannot be told). */
static int mounted_here(const char *image)
{
	char real[PATH_MAX], other[PATH_MAX];
	struct mntent *m;
	FILE *f;
	int found = 0;

	if (!realpath(image, real) || !(f = setmntent("/proc/self/mounts", "r")))
		return 1;
	while (!found && (m = getmntent(f)))
		found = !strncmp(m->mnt_type, "fuse", 4) &&
			realpath(m->mnt_fsname, other) && !strcmp(real, other);
	endmntent(f);
	return found;
}

#define XF_LOCK_WAIT_MS	10000

/*
 * Open the image, waiting for a lock a process holds while no mount of
 * the image is left here: an unmount returns before the server that
 * served it has committed and let the image go, and `umount; mount`
 * must work (fstests' cycle mounts).  A mounted image is refused at
 * once; after XF_LOCK_WAIT_MS as well.
 */
static errcode_t open_waiting(const char *image, int flags)
{
	int waited = 0;
	errcode_t err;

	for (;;) {
		err = extref_fs_open(image, flags, &xf.xfs, NULL);
		if ((err != EXTREF_ERR_LOCKED_WRITER &&
		     err != EXTREF_ERR_LOCKED_READER) ||
		    waited >= XF_LOCK_WAIT_MS || mounted_here(image))
			return err;
		if (waited == 1000)
			fprintf(stderr, "%s: %s: waiting for the lock (%s)\n",
				PROG_NAME, image, extref_image_lock_holder());
		usleep(50 * 1000);
		waited += 50;
	}
}

/* An open refused for want of a tree: the next step when the image is
 * no extref image yet (extref_fsck_unbuilt: mkfs.extref --convert
 * makes it one, or adopts it), as mkfs.extref --update and
 * debugfs.extref -w say it; else 0. */
static errcode_t next_step(const char *image, errcode_t err)
{
	ext2_filsys fs;
	errcode_t kind;

	if (err != EXTREF_ERR_NO_FEATURE && err != EXTREF_ERR_NO_TREE)
		return 0;
	if (ext2fs_open2(image, NULL, EXT2_FLAG_64BITS, 0, 0,
			 extref_io_manager(), &fs))
		return 0;
	kind = extref_fsck_unbuilt(fs);
	ext2fs_close_free(&fs);
	return kind;
}

/* Open the image for the whole mount: read-write as every writer does
 * (lock, replay, verify), or read-only under a shared lock. */
static int open_image(const char *image, int ro)
{
	int flags = EXTREF_OPEN_STAMP | (ro ? 0 : EXTREF_OPEN_RW);
	const char *holder;
	errcode_t err, kind;

	if (!ro && (kind = extref_build_left(image, 0))) {
		fprintf(stderr, "%s: %s: %s; not mounted\n", PROG_NAME, image,
			extref_build_left_note(image, kind));
		return 1;
	}
	err = open_waiting(image, flags);
	if (err && (kind = next_step(image, err))) {
		fprintf(stderr, "%s: %s: %s; not mounted\n", PROG_NAME, image,
			error_message(kind));
		return 1;
	}
	if (err) {
		com_err(PROG_NAME, err, "while opening %s", image);
		holder = extref_image_lock_holder();
		if ((err == EXTREF_ERR_LOCKED_WRITER ||
		     err == EXTREF_ERR_LOCKED_READER) && *holder)
			fprintf(stderr, "%s: %s: the lock is %s\n", PROG_NAME,
				image, holder);
		return 1;
	}
	xf.fs = extref_fs_ext2(xf.xfs);
	xf.image = image;
	xf.ro = ro;
	if (!ro && xf.commit) {
		err = extref_tx_begin2(xf.xfs, EXTREF_TX_BATCH);
		if (err) {
			com_err(PROG_NAME, err, "while starting on %s", image);
			extref_fs_abort(xf.xfs);
			return 1;
		}
		xf.batch = extref_fs_journaled(xf.xfs);
	}
	return 0;
}

static int close_image(void)
{
	errcode_t err;

	extref_set_identity(xf.xfs, NULL);
	/* files still open at unmount (none after a clean one) */
	err = xf.ro ? 0 : extref_orphan_release_all(xf.xfs, NULL);
	if (err)
		com_err(PROG_NAME, err, "while releasing the orphans of %s",
			xf.image);
	if (xf.batch) {	/* the last commit */
		xf.batch = 0;
		err = extref_tx_end(xf.xfs, 0);
		if (err)
			com_err(PROG_NAME, err, "while committing to %s",
				xf.image);
	}
	err = extref_fs_close(xf.xfs);
	if (err) {
		com_err(PROG_NAME, err, "while closing %s", xf.image);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct cmdline c;
	int res;

	memset(&c, 0, sizeof(c));
	c.commit = XF_COMMIT_DEFAULT;
	add_error_table(&et_ext2_error_table);
	if (fuse_opt_parse(&args, &c, opt_spec, opt_proc) != 0)
		return 1;
	if (c.help || c.version) {
		if (c.help)
			usage(stdout);
		else
			printf("%s %s (libextref %s, libfuse %s)\n", PROG_NAME,
			       EXTREF_VERSION_STRING, EXTREF_LIB_VERSION,
			       fuse_pkgversion());
		fuse_opt_free_args(&args);
		return 0;
	}
	if (!c.image || c.mountpoint != 1) {
		usage(stderr);
		fuse_opt_free_args(&args);
		return 1;
	}
	xf.commit = c.commit;
	if (mount_args(&args, c.image) || open_image(c.image, c.ro)) {
		fuse_opt_free_args(&args);
		return 1;
	}
	res = run(&args);
	fuse_opt_free_args(&args);
	res |= close_image();
	free(c.image);
	return res ? 1 : 0;
}
