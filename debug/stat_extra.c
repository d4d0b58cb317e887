/*
 * stat_extra.c --- the lines of stock debugfs's stat that ours adds
 * after the times: project id, extra inode size, device numbers,
 * extended attributes, inode checksum; and ls -l's date column.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "debugfs.h"

/* The end of i_projid in the large inode, from its start. */
#define PROJID_END	(offsetof(struct ext2_inode_large, i_projid) + 4)
#define CSUM_HI_END	(offsetof(struct ext2_inode_large, i_checksum_hi) + 2)

static int has_extra(struct ext2_inode_large *inode, size_t end)
{
	return EXT2_INODE_SIZE(sh.fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	       EXT2_GOOD_OLD_INODE_SIZE + (size_t)inode->i_extra_isize >= end &&
	       EXT2_GOOD_OLD_INODE_SIZE + (size_t)inode->i_extra_isize <=
	       EXT2_INODE_SIZE(sh.fs->super);
}

/* Old (i_block[0]) or new (i_block[1]) encoding, as the kernel reads it. */
static void device_numbers(struct ext2_inode_large *inode, unsigned *major,
			   unsigned *minor)
{
	__u32 b0 = inode->i_block[0], b1 = inode->i_block[1];

	if (b0) {
		*major = (b0 >> 8) & 0xff;
		*minor = b0 & 0xff;
	} else {
		*major = (b1 & 0xfff00) >> 8;
		*minor = (b1 & 0xff) | ((b1 >> 12) & 0xfff00);
	}
}

static int xattr_cb(char *name, char *value, size_t value_len, void *priv)
{
	int *first = priv;

	if (*first) {
		printf("Extended attributes:\n");
		*first = 0;
	}
	printf("  %s (%zu) = \"", name, value_len);
	print_escaped(value, value_len);
	printf("\"\n");
	return 0;
}

static void print_xattrs(ext2_ino_t ino)
{
	struct ext2_xattr_handle *h;
	int first = 1;

	if (ext2fs_xattrs_open(sh.fs, ino, &h))
		return;
	if (ext2fs_xattrs_read(h) == 0)
		ext2fs_xattrs_iterate(h, xattr_cb, &first);
	else
		printf("Extended attributes: (unreadable)\n");
	ext2fs_xattrs_close(&h);
}

void stat_extra(ext2_ino_t ino, struct ext2_inode_large *inode)
{
	int csum = ext2fs_has_feature_metadata_csum(sh.fs->super);

	if (has_extra(inode, PROJID_END))
		printf("Project: %u\n", inode->i_projid);
	if (EXT2_INODE_SIZE(sh.fs->super) > EXT2_GOOD_OLD_INODE_SIZE)
		printf("Size of extra inode fields: %u\n", inode->i_extra_isize);
	if (LINUX_S_ISCHR(inode->i_mode) || LINUX_S_ISBLK(inode->i_mode)) {
		unsigned major, minor;

		device_numbers(inode, &major, &minor);
		printf("%sDevice major/minor number: %02u:%02u (hex %02x:%02x)\n",
		       inode->i_block[0] ? "" : "(New-style) ",
		       major, minor, major, minor);
	}
	print_xattrs(ino);
	if (csum) {
		__u32 c = inode->i_checksum_lo;

		if (has_extra(inode, CSUM_HI_END))
			c |= (__u32)inode->i_checksum_hi << 16;
		printf("Inode checksum: 0x%08x\n", c);
	}
}

/* " 3-Dec-2026 18:27", local time as stock debugfs's ls -l. */
void ls_date(struct ext2_inode_large *inode, char *buf, size_t len)
{
	static const char *const mon[12] = {
		"Jan", "Feb", "Mar", "Apr", "May", "Jun",
		"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
	};
	time_t t = (__s32)inode->i_mtime;
	struct tm tm;

	if (has_extra(inode, offsetof(struct ext2_inode_large, i_mtime_extra) + 4))
		t += (time_t)(inode->i_mtime_extra & EXT4_EPOCH_MASK) << 32;
	if (!localtime_r(&t, &tm)) {
		snprintf(buf, len, "%17s", "?");
		return;
	}
	snprintf(buf, len, "%2d-%s-%4d %02d:%02d", tm.tm_mday, mon[tm.tm_mon],
		 1900 + tm.tm_year, tm.tm_hour, tm.tm_min);
}

/* ls -p: "/ino/mode/uid/gid/name/size/", directories without a size. */
void ls_parsable(ext2_ino_t ino, const char *name, int namelen)
{
	struct ext2_inode_large inode;

	memset(&inode, 0, sizeof(inode));
	if (ext2fs_read_inode_full(sh.fs, ino, (struct ext2_inode *)&inode,
				   sizeof(inode)))
		memset(&inode, 0, sizeof(inode));
	printf("/%u/%06o/%u/%u/%.*s/", ino, inode.i_mode, inode_uid(inode),
	       inode_gid(inode), namelen, name);
	if (LINUX_S_ISDIR(inode.i_mode))
		printf("/\n");
	else
		printf("%llu/\n", (unsigned long long)EXT2_I_SIZE(&inode));
}
