/*
 * inval.c --- the kernel's cached attributes and pages of a file dropped
 * from a thread of their own (after a clone or dedupe through the private
 * ioctl, after an access ACL changed the mode).
 *
 * The request loop is single-threaded (loop.c).  A notification written
 * from a request's handler can wait forever: the kernel locks each cached
 * page to drop it, and a page being read is locked until the server
 * answers that read, which waits behind the handler (seen with fstests'
 * generic/168: the server stuck in fuse_reverse_inval_inode).  So the
 * handler queues the path, and this thread writes the notification; the
 * handler waits for it a moment (XF_INVAL_WAIT_MS), so that as a rule
 * the kernel has dropped its cache before the answer, but no longer: a
 * notification held up by a read the loop has still to answer goes on
 * once the loop answers it.  The shim (fuse/shim) also drops the
 * caller's cached pages of a clone's destination after the ioctl.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xfuse.h"

#define XF_INVAL_WAIT_MS	50

struct inval {
	struct inval	*next;
	char		path[];
};

static struct {
	pthread_mutex_t	lock;
	pthread_cond_t	cond;
	struct inval	*head, **tail;
	struct fuse	*fuse;
	pthread_t	thread;
	int		running, stop;
	pthread_cond_t	done_cond;
	unsigned long	queued, done;	/* how many so far */
} q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL,
	&q.head, NULL, 0, 0, 0, PTHREAD_COND_INITIALIZER, 0, 0 };

static void *worker(void *arg)
{
	struct inval *e;

	(void)arg;
	pthread_mutex_lock(&q.lock);
	for (;;) {
		while (!q.head && !q.stop)
			pthread_cond_wait(&q.cond, &q.lock);
		if (!q.head)
			break;
		e = q.head;
		q.head = e->next;
		if (!q.head)
			q.tail = &q.head;
		pthread_mutex_unlock(&q.lock);
		/* ENOENT: nothing cached; other errors change nothing */
		(void)fuse_invalidate_path(q.fuse, e->path);
		free(e);
		pthread_mutex_lock(&q.lock);
		q.done++;
		pthread_cond_broadcast(&q.done_cond);
	}
	pthread_mutex_unlock(&q.lock);
	return NULL;
}

/* At the mount's init (the loop's thread). */
void xf_inval_start(struct fuse *f)
{
	q.fuse = f;
	q.running = !pthread_create(&q.thread, NULL, worker, NULL);
}

/* After the loop: what is queued is written, then the thread ends; a
 * notification the loop can no longer unblock (a signal ended it while
 * mounted) is left behind after a second. */
void xf_inval_stop(void)
{
	struct timespec until;

	if (!q.running)
		return;
	pthread_mutex_lock(&q.lock);
	q.stop = 1;
	pthread_cond_signal(&q.cond);
	pthread_mutex_unlock(&q.lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	if (pthread_timedjoin_np(q.thread, NULL, &until))
		pthread_detach(q.thread);
	q.running = 0;
}

/*
 * Drop what the kernel caches of path: queued, then awaited at most
 * XF_INVAL_WAIT_MS (a lost one: memory short, no thread: the cache
 * times out, as without it).
 */
void xf_inval(const char *path)
{
	size_t n = strlen(path) + 1;
	struct inval *e;
	struct timespec until;
	unsigned long mine;

	if (!q.running || !(e = malloc(sizeof(*e) + n)))
		return;
	memcpy(e->path, path, n);
	e->next = NULL;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += XF_INVAL_WAIT_MS * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&q.lock);
	*q.tail = e;
	q.tail = &e->next;
	mine = ++q.queued;
	pthread_cond_signal(&q.cond);
	while (q.done < mine &&
	       pthread_cond_timedwait(&q.done_cond, &q.lock, &until) !=
	       ETIMEDOUT)
		;
	pthread_mutex_unlock(&q.lock);
}
