/*
 * target_create.c --- the image file of a build made the size the probe
 * settled (extref_build_target_create): created, or a smaller regular
 * file extended, and registered to be put back (extref_build_guard_image)
 * with the caller's signals blocked in between.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "extref.h"
#include "extref_builder.h"

/* Opened (created: t->created) and registered; the fd, or -1 and errno. */
static int open_registered(const char *image, const sigset_t *signals,
			   struct extref_build_target *t)
{
	sigset_t old;
	int fd, e;

	if (signals)
		sigprocmask(SIG_BLOCK, signals, &old);
	if (t->exists) {
		fd = open(image, O_RDWR | O_CLOEXEC);
	} else {
		fd = open(image, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		t->created = fd >= 0;
	}
	e = errno;
	if (fd >= 0 && extref_build_guard_image(image, t->created,
						t->orig_size)) {
		e = ENAMETOOLONG;
		close(fd);
		fd = -1;
		if (t->created)
			unlink(image);
		t->created = 0;
	}
	if (signals)
		sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return fd;
}

errcode_t extref_build_target_create(const char *image,
				     const sigset_t *signals,
				     struct extref_build_target *t)
{
	int fd, e;

	t->created = t->extended = 0;
	if (t->exists && (t->is_blockdev || t->fs_bytes <= t->orig_size))
		return 0;
	fd = open_registered(image, signals, t);
	if (fd < 0) {
		e = errno;
		snprintf(t->why, sizeof(t->why), "cannot open %s: %s", image,
			 strerror(e));
		return e;
	}
	if (ftruncate(fd, (off_t)t->fs_bytes) < 0) {
		e = errno;
		close(fd);
		snprintf(t->why, sizeof(t->why), "%s: cannot make the file "
			 "%llu bytes long: %s", image,
			 (unsigned long long)t->fs_bytes, strerror(e));
		return e;
	}
	t->extended = t->exists;
	close(fd);
	return 0;
}
