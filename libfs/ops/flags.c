/*
 * flags.c --- extref_get_flags, extref_set_flags: an inode's flags read
 * and set as chattr(1) and the FS_IOC_GETFLAGS / FS_IOC_SETFLAGS ioctls
 * do on ext4 (fs/ext4/ioctl.c, ext4_ioctl_setflags; fs/ioctl.c):
 *
 *   The flags a user may change (XR_FL_SETTABLE) are set as asked; the
 *     others ext4 shows keep their value whatever is asked (extents,
 *     index, huge file, inline data ...), except data journaling, DAX,
 *     case folding and the extents flag, whose change is refused
 *     (EXTREF_ERR_FLAGS, EOPNOTSUPP: the library has no migration), as
 *     is a bit ext4 does not show.
 *   The owner or CAP_FOWNER (EPERM); a change of immutable or
 *     append-only needs CAP_LINUX_IMMUTABLE (EPERM); an immutable inode
 *     takes no change but the clearing of immutable (EPERM).
 *   The change time becomes now, a flag changed or not (as ext4).
 */
#include "extref_ops_int.h"
#include "quota/xr_quota.h"
#include "txn/xr_txio.h"

/* ext4's EXT4_FL_USER_VISIBLE */
#define XR_FL_VISIBLE	0x705BDFFFU
/* secrm unrm compr sync immutable append nodump noatime notail dirsync
 * topdir projinherit: what chattr changes on ext4 */
#define XR_FL_SETTABLE	0x200380FFU
/* journal data, extents, DAX, casefold: no migration here */
#define XR_FL_REFUSED	(0x00004000U | 0x00080000U | 0x02000000U | \
			 0x40000000U)
#define XR_FL_GUARDED	(EXT2_IMMUTABLE_FL | EXT2_APPEND_FL)

static errcode_t flags_allowed(extref_fs_t xfs, const struct ext2_inode *in,
			       __u32 want)
{
	const struct extref_cred *c = xr_actor(xfs);
	__u32 old = in->i_flags;

	if ((want & ~XR_FL_VISIBLE) || ((want ^ old) & XR_FL_REFUSED))
		return EXTREF_ERR_FLAGS;
	if (!c)
		return 0;
	if (!xr_owner_or_capable(c, in))
		return EXTREF_ERR_PERM;
	if (((want ^ old) & XR_FL_GUARDED) &&
	    !xr_capable(c, EXTREF_CAP_LINUX_IMMUTABLE))
		return EXTREF_ERR_PERM;
	/* ext4_ioctl_check_immutable: only immutable may go */
	if ((old & EXT2_IMMUTABLE_FL) && (want & EXT2_IMMUTABLE_FL) &&
	    ((want ^ old) & XR_FL_SETTABLE))
		return EXTREF_ERR_PERM;
	return 0;
}

static errcode_t set_flags_op(extref_fs_t xfs, ext2_ino_t ino, __u32 want)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode in;
	__u32 next;
	errcode_t err;

	err = extref_check_modifiable(xfs, ino);
	if (!err)
		err = xr_read_inode(fs, ino, &in);
	if (!err)
		err = flags_allowed(xfs, &in, want);
	if (err)
		return err;
	next = (want & XR_FL_SETTABLE) | (in.i_flags & ~XR_FL_SETTABLE);
	in.i_flags = next;
	return xr_quota_end(xfs, xr_write_inode_times(fs, ino, &in,
						      XR_TIME_CTIME));
}

errcode_t extref_get_flags(extref_fs_t xfs, ext2_ino_t ino, __u32 *flags)
{
	struct ext2_inode in;
	errcode_t err = xr_read_inode(extref_fs_ext2(xfs), ino, &in);

	*flags = err ? 0 : in.i_flags & XR_FL_VISIBLE;
	return err;
}

/* One transaction (txn.c). */
errcode_t extref_set_flags(extref_fs_t xfs, ext2_ino_t ino, __u32 flags)
{
	errcode_t err = xr_tx_begin(xfs);

	return err ? err : xr_tx_end(xfs, set_flags_op(xfs, ino, flags));
}
