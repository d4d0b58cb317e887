/*
 * build_shrink.c --- extref_build_shrink: an image file replaced by a
 * fresh build of what it holds, in one walk under the image's write
 * lock, taken first and held to the end.
 *
 * The walk: the lock; the checks on the one read-only open of the image
 * (shrink_check.c: a symbolic link, a block device refused; a journal
 * replayed; the caller's check; the counts, stable_inodes); the hidden
 * directory beside the image (shrink_replace.c); the copy built from
 * that open (shrink_copy.c), and with dedupe deduplicated and copied
 * once more, from the first copy, into a file sized for what it holds
 * then; the caller's check of the copy; the copy renamed over the image
 * (shrink_replace.c).  Until the rename the image is not written (the
 * replay aside); a failure removes the hidden directory.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shrink_int.h"

#ifdef EXTREF_FAULT_INJECTION
/*
 * Crash tests only (configure --enable-fault-injection):
 * EXTREF_FAULT_SHRINK_STEP=STEP sends the process SIGTERM right after
 * STEP is told: "formatted", "first", "built", "synced" or "renamed"
 * (with the signals blocked: taken at the rename's end).
 */
static void fault_after(unsigned int what)
{
	static const char *const name[] = { NULL, NULL, "formatted", "first",
					    "built", "synced", "renamed" };
	const char *s = getenv("EXTREF_FAULT_SHRINK_STEP");

	if (s && what < 7 && name[what] && !strcmp(s, name[what]))
		raise(SIGTERM);
}
#else
#define fault_after(what)	do { } while (0)
#endif

void xr_shrink_note(const struct xr_shrink *s, unsigned int what)
{
	if (s->o->note)
		s->o->note(EXTREF_NOTE_SHRINK, what, s->o->priv);
	fault_after(what);
}

errcode_t xr_shrink_why(struct xr_shrink *s, errcode_t err, const char *fmt,
			...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->res->why, sizeof(s->res->why), fmt, ap);
	va_end(ap);
	return err;
}

/* With dedupe: the first copy deduplicated, then copied once more (its
 * sharing kept) into a file sized for what it holds now. */
static errcode_t second_copy(struct xr_shrink *s)
{
	struct xr_src src;
	__u64 blocks;
	errcode_t err;

	xr_shrink_note(s, EXTREF_SHRINK_FIRST);
	err = xr_src_open(s->first, &src);
	if (!err)
		err = xr_src_scan(&src);
	if (err && src.fs)
		xr_src_close(&src);
	if (err)
		return xr_shrink_why(s, err, "%s: cannot read the image: %s",
				     s->first, error_message(err));
	err = xr_shrink_copy(s, &src, s->first, s->copy, EXTREF_DEDUPE_NONE,
			     &blocks);
	xr_src_close(&src);
	unlink(s->first);
	if (!err)
		s->res->blocks_after = blocks;
	return err;
}

/* Steps 2 and 3: the copy made, checked, put in the image's place. */
static errcode_t copy_and_replace(struct xr_shrink *s)
{
	const struct extref_build_shrink_opts *o = s->o;
	int dedupe = o->dedupe != EXTREF_DEDUPE_NONE;
	errcode_t err;

	s->res->step = EXTREF_STEP_COPY;
	err = xr_shrink_dir(s);
	if (!err)
		err = xr_shrink_copy(s, &s->src, s->image,
				     dedupe ? s->first : s->copy, o->dedupe,
				     &s->res->blocks_after);
	xr_src_close(&s->src);	/* the image: read to the end */
	if (!err && dedupe)
		err = second_copy(s);
	if (err)
		return err;
	s->res->step = EXTREF_STEP_COPY_CHECK;
	err = o->check ? o->check(s->copy, o->priv) : 0;
	if (err)
		return err;
	xr_shrink_note(s, EXTREF_SHRINK_BUILT);
	s->res->step = EXTREF_STEP_REPLACE;
	return xr_shrink_replace(s);
}

errcode_t extref_build_shrink(const char *image,
			      const struct extref_build_shrink_opts *o,
			      struct extref_build_shrink_result *res)
{
	struct xr_shrink s;
	errcode_t err;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.image = image;
	s.o = o;
	s.res = res;
	res->step = EXTREF_STEP_LOCK;
	err = extref_image_lock(image, EXTREF_LOCK_WRITE, &s.lock);
	if (err)
		return err;
	err = xr_shrink_check(&s);
	if (!err) {
		xr_shrink_note(&s, EXTREF_SHRINK_COPYING);
		err = copy_and_replace(&s);
	}
	if (s.src.fs)
		xr_src_close(&s.src);
	xr_shrink_dir_remove(&s);	/* what is left there, once renamed
					   or not */
	extref_image_unlock(s.lock);
	return err;
}
