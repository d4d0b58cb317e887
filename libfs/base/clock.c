/*
 * clock.c --- the time the library stamps: SOURCE_DATE_EPOCH when set
 * (reproducible builds), else the clock; and an inode's _extra word.
 */
#include <errno.h>
#include <stdlib.h>
#include "xr_clock.h"

void xr_clock_init(ext2_filsys fs)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == 0 && *end == 0)
		fs->now = (time_t)v;
}

time_t xr_now(ext2_filsys fs)
{
	return fs->now ? fs->now : time(NULL);
}

/*
 * The time a file changed by the library is stamped with, to the
 * nanosecond: SOURCE_DATE_EPOCH (whole seconds: reproducible), else the
 * clock, never on a whole second (at least 1 ns): a ctime of whole
 * seconds is then never one the library's clock stamped (libext2fs
 * writers stamp whole seconds: FORMAT.md section 11).
 */
void xr_now_ts(ext2_filsys fs, struct timespec *ts)
{
	if (fs && fs->now) {
		ts->tv_sec = fs->now;
		ts->tv_nsec = 0;
		return;
	}
	if (clock_gettime(CLOCK_REALTIME, ts)) {
		ts->tv_sec = time(NULL);
		ts->tv_nsec = 0;
	}
	if (!ts->tv_nsec)
		ts->tv_nsec = 1;
}

/* An inode's _extra word for ts: the nanoseconds, and bits 32-33 of the
 * seconds in bits 0-1. */
__u32 xr_time_extra(const struct timespec *ts)
{
	long long s = ts->tv_sec;

	return ((__u32)ts->tv_nsec << 2) |
	       (__u32)(((s - (__s32)s) >> 32) & 3);
}
