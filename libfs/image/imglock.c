/*
 * imglock.c --- who may open an image: never a writer on a mounted
 * filesystem, one writer or any number of readers at a time.
 *
 * The lock is flock(2) on a descriptor of our own, held for the handle's
 * lifetime: libext2fs opens the image on its own descriptor, and flock
 * locks belong to the open file description, so the two never mix.  The
 * descriptor is close-on-exec: a child such as e2fsck (run by fsck.extref
 * while it holds the lock) does not inherit it, and takes no flock itself
 * (but --grow's resize2fs does: xr_image_lock_fd).
 * A writer holds LOCK_EX, a reader LOCK_SH; both ask without blocking, so
 * a busy image is refused at once with the reason instead of a wait.  A
 * reader therefore never opens an image while a writer's commits are
 * under way, nor a writer while a reader is looking.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "tree/extref_int.h"

struct extref_image_lock {
	int	fd;
};

/*
 * Mounted, as libext2fs sees it: /proc/mounts by device, and for an
 * image file every loop device backed by it (libext2fs asks each mounted
 * loop device for its backing file's device and inode).  Swap counts too.
 */
errcode_t extref_image_check_mount(const char *name)
{
	int mflags = 0;
	errcode_t err;

	err = ext2fs_check_if_mounted(name, &mflags);
	if (err)
		return err;
	if (mflags & (EXT2_MF_MOUNTED | EXT2_MF_SWAP))
		return EXTREF_ERR_MOUNTED;
	return 0;
}

/*
 * Who holds the lock an open was refused: the flock entries of
 * /proc/locks on the image's inode (device major:minor:inode, as the
 * kernel prints them), the first process other than this one, named by
 * /proc/PID/comm.  The words are kept for the thread, as
 * extref_journal_detail() keeps a journal error's (an error code cannot
 * carry a process); empty when the kernel does not say (no /proc, a
 * holder in another pid namespace).
 */
static __thread char holder[128];

static int comm_of(long pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok && *buf;
}

/* The pid of a FLOCK line on (maj, min, ino), not ours; 0 if none. */
static long flock_pid(const char *line, unsigned int maj, unsigned int min,
		      unsigned long ino)
{
	char kind[16], type[16];
	unsigned int lmaj, lmin;
	unsigned long lino;
	long pid;

	if (strstr(line, "->"))			/* a waiter, not a holder */
		return 0;
	if (sscanf(line, "%*d: %15s %*s %15s %ld %x:%x:%lu", kind, type,
		   &pid, &lmaj, &lmin, &lino) != 6)
		return 0;
	if (strcmp(kind, "FLOCK") || lmaj != maj || lmin != min ||
	    lino != ino || pid == (long)getpid())
		return 0;
	return pid;
}

static void find_holder(int fd)
{
	char line[256], comm[64];
	struct stat st;
	long pid = 0;
	FILE *f;

	holder[0] = 0;
	if (fstat(fd, &st) < 0 || !(f = fopen("/proc/locks", "re")))
		return;
	while (!pid && fgets(line, sizeof(line), f))
		pid = flock_pid(line, major(st.st_dev), minor(st.st_dev),
				(unsigned long)st.st_ino);
	fclose(f);
	if (pid && comm_of(pid, comm, sizeof(comm)))
		snprintf(holder, sizeof(holder), "held by %s (pid %ld)", comm,
			 pid);
	else if (pid)
		snprintf(holder, sizeof(holder), "held by pid %ld", pid);
}

const char *extref_image_lock_holder(void)
{
	return holder;
}

/* LOCK_EX refused: by readers only (a shared lock still fits) or a writer. */
static errcode_t busy_reason(int fd, int write)
{
	find_holder(fd);
	if (!write)
		return EXTREF_ERR_LOCKED_WRITER;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return EXTREF_ERR_LOCKED_READER;
	return EXTREF_ERR_LOCKED_WRITER;
}

errcode_t extref_image_lock(const char *name, int flags,
			    extref_image_lock_t *ret)
{
	struct extref_image_lock *l = NULL;
	int write = flags & EXTREF_LOCK_WRITE;
	errcode_t err;
	int fd;

	*ret = NULL;
	if (write && (err = extref_image_check_mount(name)))
		return err;
	fd = open(name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (flock(fd, (write ? LOCK_EX : LOCK_SH) | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? busy_reason(fd, write) : errno;
		goto cleanup;
	}
	err = ext2fs_get_mem(sizeof(*l), &l);
	if (err)
		goto cleanup;
	l->fd = fd;
	*ret = l;
	return 0;
cleanup:
	close(fd);
	return err;
}

void extref_image_unlock(extref_image_lock_t l)
{
	if (!l)
		return;
	close(l->fd);		/* drops the lock */
	ext2fs_free_mem(&l);
}

int xr_image_lock_fd(extref_image_lock_t l)
{
	return l ? l->fd : -1;
}

errcode_t extref_image_lock_same(extref_image_lock_t l, const char *name)
{
	struct stat held, now;

	if (fstat(l->fd, &held) < 0 || stat(name, &now) < 0)
		return errno;
	if (held.st_dev != now.st_dev || held.st_ino != now.st_ino)
		return EXTREF_ERR_IMAGE_REPLACED;
	return 0;
}
