/*
 * regular.c --- opening a path where a file is expected, without
 * blocking: open(2) of a FIFO with no writer waits forever, so the path
 * is opened O_NONBLOCK (which a FIFO opened for reading honours at once)
 * and O_NONBLOCK is cleared again before the descriptor is used.  The
 * caller then checks what it opened with fstat on that descriptor (never
 * on the path: it may have changed since), and refuses what is not a
 * regular file.  Paths that accept a pipe on purpose (-d -, a single -d
 * ARCHIVE) keep their blocking open(): they wait for the writer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "mkfs.h"

/* open(path, flags) that does not wait for a FIFO's writer; -1 and errno
 * as open's. */
int open_noblock(const char *path, int flags)
{
	int fd = open(path, flags | O_NONBLOCK);
	int fl;

	if (fd < 0 || (flags & O_NONBLOCK))
		return fd;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}
