/*
 * hostmeta.c --- what dump and rdump put on the host beyond the data:
 * owner, mode, times and extended attributes, and what they leave out.
 *
 * The image may be someone else's, so by default nothing it holds gains
 * power on the host: no set-user-ID or set-group-ID bit, no device node,
 * FIFO or socket, no extended attribute outside user.* (security.*
 * holds file capabilities and SELinux labels, trusted.* and system.*
 * what only root may set), and no change of owner unless asked (-p).
 * A faithful copy is asked for with tar's names: --same-owner (-p),
 * --same-permissions, --xattrs, and --devices.  What was left out is
 * said once, with a count, at the end of the command.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include "debugfs.h"

void host_warn(const struct cmd_args *a, const char *what, const char *name)
{
	fflush(stdout);
	fprintf(stderr, "%s: warning: %s: %s: %s\n", a->name, name, what,
		strerror(errno));
}

static void to_timespec(__u32 secs, __u32 extra, int big, struct timespec *ts)
{
	ts->tv_sec = (__s32)secs;
	ts->tv_nsec = 0;
	if (big) {
		ts->tv_sec += (time_t)(extra & EXT4_EPOCH_MASK) << 32;
		ts->tv_nsec = extra >> EXT4_EPOCH_BITS;
		if (ts->tv_nsec >= 1000000000L)
			ts->tv_nsec = 0;
	}
}

/* Access and modification times of inode, with nanoseconds. */
void host_times(const struct ext2_inode_large *inode, struct timespec ts[2])
{
	int big = EXT2_INODE_SIZE(sh.fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
		  inode->i_extra_isize >= 24;

	to_timespec(inode->i_atime, inode->i_atime_extra, big, &ts[0]);
	to_timespec(inode->i_mtime, inode->i_mtime_extra, big, &ts[1]);
}

/* The permission bits to give the host object: set-id only if asked. */
mode_t host_mode(struct host_meta *hm, const struct ext2_inode_large *inode)
{
	mode_t mode = inode->i_mode & 07777;

	if ((mode & (S_ISUID | S_ISGID)) && !(hm->flags & HM_SETID)) {
		mode &= ~(mode_t)(S_ISUID | S_ISGID);
		hm->setid_dropped++;
	}
	return mode;
}

/* The flags of dump's (-p) or rdump's options. */
void host_meta_init(struct host_meta *hm, const struct cmd_args *a, int tree)
{
	memset(hm, 0, sizeof(*hm));
	hm->flags = tree ? HM_MODE | HM_TIMES | HM_XATTRS : 0;
	if (a->opts['p'])
		hm->flags |= HM_OWNER | (tree ? 0 : HM_MODE | HM_TIMES);
	if (a->opts['P'])
		hm->flags |= HM_MODE | HM_SETID;
	if (a->opts['X'])
		hm->flags |= HM_XATTRS | HM_ALL_XATTRS;
	if (a->opts['D'])
		hm->flags |= HM_DEVICES;
}

/* What was left out, once each with a count (not a failure). */
void host_meta_report(const struct cmd_args *a, const struct host_meta *hm)
{
	fflush(stdout);
	if (hm->setid_dropped)
		fprintf(stderr, "%s: %lu set-user-ID or set-group-ID bit(s) "
			"not kept (--same-permissions keeps them)\n", a->name,
			hm->setid_dropped);
	if (hm->specials_skipped)
		fprintf(stderr, "%s: %lu device(s), FIFO(s) or socket(s) "
			"skipped (--devices makes them)\n", a->name,
			hm->specials_skipped);
	if (hm->xattrs_dropped)
		fprintf(stderr, "%s: %lu extended attribute(s) outside user.* "
			"not copied (--xattrs copies them)\n", a->name,
			hm->xattrs_dropped);
}

struct xa_ctx {
	const struct cmd_args *a;
	struct host_meta *hm;
	int		fd;
	const char	*name;
};

static int xa_set_cb(char *name, char *value, size_t value_len, void *priv)
{
	struct xa_ctx *c = priv;

	if (!strcmp(name, "system.data"))
		return 0;	/* inline data, not an attribute */
	if (!(c->hm->flags & HM_ALL_XATTRS) && strncmp(name, "user.", 5)) {
		c->hm->xattrs_dropped++;
		return 0;
	}
	if (fsetxattr(c->fd, name, value, value_len, 0))
		host_warn(c->a, name, c->name);
	return 0;
}

static void copy_xattrs(const struct cmd_args *a, struct host_meta *hm,
			ext2_ino_t ino, int fd, const char *name)
{
	struct ext2_xattr_handle *h;
	struct xa_ctx c = { a, hm, fd, name };

	if (ext2fs_xattrs_open(sh.fs, ino, &h))
		return;
	if (ext2fs_xattrs_read(h) == 0)
		ext2fs_xattrs_iterate(h, xa_set_cb, &c);
	ext2fs_xattrs_close(&h);
}

/*
 * Owner (-p), then mode (after the owner: chown clears set-id bits),
 * then the extended attributes, then times, as hm->flags ask.  Failures
 * are warnings, as in stock debugfs: the data is out.
 */
void set_host_meta(const struct cmd_args *a, struct host_meta *hm,
		   ext2_ino_t ino, struct ext2_inode_large *inode, int fd,
		   const char *name)
{
	struct timespec ts[2];

	if ((hm->flags & HM_OWNER) &&
	    fchown(fd, inode_uid(*inode), inode_gid(*inode)))
		host_warn(a, "setting the owner", name);
	if ((hm->flags & HM_MODE) && fchmod(fd, host_mode(hm, inode)))
		host_warn(a, "setting the mode", name);
	if (hm->flags & HM_XATTRS)
		copy_xattrs(a, hm, ino, fd, name);
	host_times(inode, ts);
	if ((hm->flags & HM_TIMES) && futimens(fd, ts))
		host_warn(a, "setting the times", name);
}
