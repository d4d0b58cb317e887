/*
 * clock.c --- the time the library stamps: SOURCE_DATE_EPOCH when set
 * (reproducible builds), else the clock.
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
