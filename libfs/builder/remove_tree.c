/*
 * remove_tree.c --- extref_build_remove_tree: a build's private temporary
 * directory removed with all it holds, from a signal handler if need be:
 * system calls only (getdents64, unlinkat, openat), no stdio, no malloc,
 * no nftw, no recursion.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "build_int.h"

/* One directory entry as getdents64 returns it. */
struct dent64 {
	uint64_t	d_ino;
	int64_t		d_off;
	unsigned short	d_reclen;
	unsigned char	d_type;
	char		d_name[];
};

static int is_dot(const char *n)
{
	return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]));
}

/*
 * Remove what fd's directory holds.  Returns 1 after descending into a
 * non-empty subdirectory (fd then refers to it), 0 when a scan found
 * nothing more to remove.  *removed counts what went.
 */
static int empty_one(int *fd, unsigned long *removed)
{
	char buf[4096];
	long n;

	if (lseek(*fd, 0, SEEK_SET) < 0)
		return 0;
	while ((n = syscall(SYS_getdents64, *fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n; ) {
			struct dent64 *d = (struct dent64 *)(buf + off);
			int sub;

			off += d->d_reclen;
			if (is_dot(d->d_name))
				continue;
			if (!unlinkat(*fd, d->d_name, 0) ||
			    !unlinkat(*fd, d->d_name, AT_REMOVEDIR)) {
				(*removed)++;
				continue;
			}
			if (errno != ENOTEMPTY && errno != EEXIST)
				continue;
			sub = openat(*fd, d->d_name, O_RDONLY | O_DIRECTORY |
				     O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			close(*fd);
			*fd = sub;
			return 1;
		}
	}
	return 0;
}

/*
 * Remove the tree at root without recursion or memory: descend into a
 * non-empty directory, empty it, climb back through "..", rescan.  The
 * tree is private (mode 0700, made by us), so ".." is where we came
 * from.  Gives up on a directory it cannot empty.
 */
void extref_build_remove_tree(const char *root)
{
	unsigned long removed = 0, at_descent = 0;
	int fd, depth = 0;

	fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		int up;

		if (empty_one(&fd, &removed)) {
			depth++;
			at_descent = removed;
			continue;
		}
		if (depth == 0 || removed == at_descent)
			break;		/* done, or stuck below */
		up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(fd);
		if (up < 0)
			return;
		fd = up;
		depth--;
	}
	close(fd);
	rmdir(root);
}

