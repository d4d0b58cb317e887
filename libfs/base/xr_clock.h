/*
 * xr_clock.h --- the time the library stamps (clock.c).
 */
#ifndef XR_CLOCK_H
#define XR_CLOCK_H

#include <time.h>
#include <ext2fs/ext2fs.h>

/* fs->now from SOURCE_DATE_EPOCH, when it holds a plain number. */
void xr_clock_init(ext2_filsys fs);
/* The time operations stamp: SOURCE_DATE_EPOCH (fs->now) or now. */
time_t xr_now(ext2_filsys fs);
/* The same to the nanosecond; never a whole second but the epoch's. */
void xr_now_ts(ext2_filsys fs, struct timespec *ts);
/* An inode's _extra word for ts (nanoseconds, seconds past 2038). */
__u32 xr_time_extra(const struct timespec *ts);

#endif /* XR_CLOCK_H */
