/*
 * shrink_replace.c --- where a shrink's copy is made and how it takes
 * the image's place: a hidden directory beside the image,
 * DIR/.NAME.shrink-PID (0700), made and handed to the caller with its
 * signals blocked (a signal then removes it: the caller's), removed with
 * what it holds on any failure; the copy given the image's mode and
 * owner (as far as we may), synced, renamed over the image with the
 * signals blocked (the caller told, EXTREF_SHRINK_RENAMED, before one
 * can come), the directory synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <et/com_err.h>
#include "shrink_int.h"

static void block(const struct xr_shrink *s, sigset_t *old)
{
	if (s->o->signals)
		sigprocmask(SIG_BLOCK, s->o->signals, old);
}

static void unblock(const struct xr_shrink *s, const sigset_t *old)
{
	if (s->o->signals)
		sigprocmask(SIG_SETMASK, old, NULL);
}

/* s's paths: the directory and its three files; 0, or ENAMETOOLONG. */
static int paths(struct xr_shrink *s)
{
	char a[PATH_MAX], b[PATH_MAX];
	size_t n = sizeof(s->dir);

	if (strlen(s->image) >= sizeof(a))
		return ENAMETOOLONG;
	strcpy(a, s->image);
	strcpy(b, s->image);
	if ((size_t)snprintf(s->dir, n, "%s/.%s.shrink-%ld", dirname(a),
			     basename(b), (long)getpid()) >= n)
		return ENAMETOOLONG;
	snprintf(s->first, sizeof(s->first), "%s/a", s->dir);
	snprintf(s->copy, sizeof(s->copy), "%s/b", s->dir);
	return 0;
}

errcode_t xr_shrink_dir(struct xr_shrink *s)
{
	sigset_t old;
	int rc = paths(s), e;

	if (rc) {
		s->dir[0] = 0;
		return xr_shrink_why(s, rc, "%s: name too long", s->image);
	}
	block(s, &old);
	rc = mkdir(s->dir, 0700);
	e = errno;
	if (!rc && s->o->hidden && s->o->hidden(s->dir, s->o->priv)) {
		rmdir(s->dir);
		e = ENAMETOOLONG;
		rc = -1;
	}
	unblock(s, &old);
	if (!rc)
		return 0;
	xr_shrink_why(s, e, "%s: cannot make %s: %s", s->image, s->dir,
		      strerror(e));
	s->dir[0] = 0;
	return e;
}

void xr_shrink_dir_remove(struct xr_shrink *s)
{
	if (!s->dir[0])
		return;
	unlink(s->first);
	unlink(s->copy);
	rmdir(s->dir);
	s->dir[0] = 0;
}

static int sync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC), rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/* The copy, with the image's mode and owner, on disk. */
static errcode_t ready(struct xr_shrink *s)
{
	struct stat st;

	if (stat(s->image, &st) || chmod(s->copy, st.st_mode & 07777) ||
	    (chown(s->copy, st.st_uid, st.st_gid) && errno != EPERM))
		return xr_shrink_why(s, errno, "%s: cannot give %s its mode "
				     "and owner: %s", s->image, s->copy,
				     strerror(errno));
	if (sync_path(s->copy, O_RDONLY))
		return xr_shrink_why(s, errno, "%s: cannot sync %s: %s",
				     s->image, s->copy, strerror(errno));
	return 0;
}

errcode_t xr_shrink_replace(struct xr_shrink *s)
{
	char d[PATH_MAX];
	sigset_t old;
	errcode_t err;
	int rc, e;

	/* the copy read the image as opened: still the file locked? */
	err = extref_image_lock_same(s->lock, s->image);
	if (err)
		return xr_shrink_why(s, err, "%s: %s", s->image,
				     error_message(err));
	err = ready(s);
	if (err)
		return err;
	xr_shrink_note(s, EXTREF_SHRINK_SYNCED);
	block(s, &old);		/* renamed and told, no signal between */
	rc = rename(s->copy, s->image);
	e = errno;
	if (!rc) {
		s->res->replaced = 1;
		xr_shrink_note(s, EXTREF_SHRINK_RENAMED);
	}
	unblock(s, &old);
	if (rc)
		return xr_shrink_why(s, e, "%s: cannot rename %s over it: %s",
				     s->image, s->copy, strerror(e));
	strcpy(d, s->image);	/* paths() checked the length */
	if (sync_path(dirname(d), O_RDONLY | O_DIRECTORY))
		return xr_shrink_why(s, errno, "%s: shrunk, but its directory "
				     "cannot be synced: %s", s->image,
				     strerror(errno));
	return 0;
}
