/*
 * loop.c --- the request loop and the batch's commits.
 *
 * A read-write mount runs every request as a step of one batch
 * (extref_tx_begin2 with EXTREF_TX_BATCH): each request is atomic on its
 * own (one that fails is rolled back alone), and the batch is committed
 * to the image's journal when a request asks for it (fsync, fsyncdir),
 * at most xf.commit seconds after its first
 * uncommitted request (the loop waits for the next request no longer
 * than that), before it could outgrow the journal (the library), and at
 * the unmount.  xf.commit 0: every request is committed on its own.
 *
 * The loop is libfuse's single-threaded one (fuse_session_loop) with a
 * timeout: the server stays single-threaded, and the commit runs between
 * two requests, never inside one.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include "xfuse.h"
#include <fuse_lowlevel.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double dirty_since;	/* the first uncommitted request, or 0 */

/* Commit what the batch holds: 0, or the errno for the request. */
int xf_commit(void)
{
	errcode_t err;

	dirty_since = 0;
	if (!xf.batch)
		return 0;
	err = extref_tx_commit(xf.xfs);
	if (err)
		com_err(PROG_NAME, err, "while committing to %s", xf.image);
	return xf_err(err);
}

/* Milliseconds until the batch is due, -1 when nothing waits. */
static int due_in(void)
{
	double left;

	if (!xf.batch)
		return -1;
	if (!dirty_since) {
		if (!extref_tx_pending(xf.xfs))
			return -1;
		dirty_since = now();
	}
	left = dirty_since + xf.commit - now();
	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* Wait for a request at most until the batch is due: 1 when one came. */
static int wait_request(struct fuse_session *se)
{
	struct pollfd p = { .fd = fuse_session_fd(se), .events = POLLIN };
	int ms = due_in(), n;

	if (ms == 0) {
		(void)xf_commit();
		ms = -1;
	}
	n = poll(&p, 1, ms);
	if (n == 0)
		(void)xf_commit();
	return n > 0 || (n < 0 && errno != EINTR) ? 1 : 0;
}

int xf_loop(struct fuse_session *se)
{
	struct fuse_buf buf = { .mem = NULL };
	int res = 0;

	while (!fuse_session_exited(se)) {
		if (!wait_request(se))
			continue;
		res = fuse_session_receive_buf(se, &buf);
		if (res == -EINTR)
			continue;
		if (res <= 0)
			break;
		fuse_session_process_buf(se, &buf);
	}
	free(buf.mem);
	fuse_session_reset(se);
	return res < 0 ? 1 : 0;
}
