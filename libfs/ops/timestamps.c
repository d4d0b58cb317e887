/*
 * timestamps.c --- an inode written with its change (and modification)
 * time set to now (xr_now_ts: the image's clock to the nanosecond, or
 * SOURCE_DATE_EPOCH); one time of an inode set to the nanosecond, as
 * ext4 encodes it.
 */
#include <stddef.h>
#include <string.h>
#include "extref_ops_int.h"

/* The large inode has room for field (i_extra_isize says so). */
#define HAS(in, f) (offsetof(struct ext2_inode_large, f) + sizeof((in)->f) <= \
		    EXT2_GOOD_OLD_INODE_SIZE + (size_t)(in)->i_extra_isize)

/* The _extra words of the times which names, where the inode has them. */
static void set_extra(struct ext2_inode_large *full, int which, __u32 extra)
{
	if (HAS(full, i_ctime_extra))
		full->i_ctime_extra = extra;
	if ((which & XR_TIME_MTIME) && HAS(full, i_mtime_extra))
		full->i_mtime_extra = extra;
	if ((which & XR_TIME_ATIME) && HAS(full, i_atime_extra))
		full->i_atime_extra = extra;
}

/*
 * Write inode with its change time (and, with XR_TIME_MTIME and
 * XR_TIME_ATIME, its modification and access times) set to now: seconds
 * and nanoseconds together, so that a time set here never keeps the
 * nanoseconds of an older one.
 */
errcode_t xr_write_inode_times(ext2_filsys fs, ext2_ino_t ino,
			       struct ext2_inode *inode, int which)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	struct ext2_inode_large *full = NULL;
	struct timespec now;
	errcode_t err;

	xr_now_ts(fs, &now);
	inode->i_ctime = (__u32)now.tv_sec;
	if (which & XR_TIME_MTIME)
		inode->i_mtime = (__u32)now.tv_sec;
	if (which & XR_TIME_ATIME)
		inode->i_atime = (__u32)now.tv_sec;
	if (isz <= EXT2_GOOD_OLD_INODE_SIZE)
		return ext2fs_write_inode(fs, ino, inode);
	err = ext2fs_get_memzero(isz, &full);
	if (!err)
		err = ext2fs_read_inode_full(fs, ino,
					     (struct ext2_inode *)full, isz);
	if (!err) {
		memcpy(full, inode, sizeof(*inode));
		set_extra(full, which, xr_time_extra(&now));
		err = ext2fs_write_inode_full(fs, ino,
					      (struct ext2_inode *)full, isz);
	}
	ext2fs_free_mem(&full);
	return err;
}

errcode_t xr_inode_times_now(ext2_filsys fs, ext2_ino_t ino)
{
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(fs, ino, &in);

	return err ? err : xr_write_inode_times(fs, ino, &in, XR_TIME_MTIME |
						XR_TIME_ATIME);
}

/* The seconds ext4 can keep: 32 bits, and 2 epoch bits more with the
 * extra field (EXT4_EXTRA_TIMESTAMP_MAX). */
#define XR_TIME_MIN		(-0x80000000LL)
#define XR_TIME_MAX_BASE	0x7fffffffLL
#define XR_TIME_MAX_EXTRA	0x37fffffffLL

static __u32 *time_field(struct ext2_inode_large *in, int which,
			 __u32 **extra, size_t *extra_off)
{
	switch (which) {
	case XR_TS_ATIME:
		*extra = &in->i_atime_extra;
		*extra_off = offsetof(struct ext2_inode_large, i_atime_extra);
		return &in->i_atime;
	case XR_TS_MTIME:
		*extra = &in->i_mtime_extra;
		*extra_off = offsetof(struct ext2_inode_large, i_mtime_extra);
		return &in->i_mtime;
	default:
		*extra = &in->i_ctime_extra;
		*extra_off = offsetof(struct ext2_inode_large, i_ctime_extra);
		return &in->i_ctime;
	}
}

/*
 * One time of in (read whole, isz bytes) set to sec.nsec as ext4 keeps
 * it: the low 32 bits of the seconds in the base field and, when the
 * inode's extra fields reach that time's, the epoch bits (seconds past
 * 32 bits, signed) and the nanoseconds in its extra field.  A time the
 * inode cannot hold is clamped to the nearest it can (the kernel's
 * timestamp_truncate), its nanoseconds dropped without the extra field.
 */
void xr_time_set(ext2_filsys fs, struct ext2_inode_large *in, int which,
		 __s64 sec, __u32 nsec)
{
	int isz = EXT2_INODE_SIZE(fs->super);
	__u32 *extra, *base;
	size_t off;
	int has_extra;

	base = time_field(in, which, &extra, &off);
	has_extra = isz > EXT2_GOOD_OLD_INODE_SIZE &&
		    EXT2_GOOD_OLD_INODE_SIZE + (size_t)in->i_extra_isize >=
		    off + sizeof(__u32);
	if (sec < XR_TIME_MIN)
		sec = XR_TIME_MIN;
	if (sec > (has_extra ? XR_TIME_MAX_EXTRA : XR_TIME_MAX_BASE))
		sec = has_extra ? XR_TIME_MAX_EXTRA : XR_TIME_MAX_BASE;
	*base = (__u32)sec;
	if (has_extra)
		*extra = (((sec - (__s32)sec) >> 32) & 3) |
			 ((nsec % 1000000000U) << 2);
}
