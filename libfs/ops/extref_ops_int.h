/*
 * extref_ops_int.h --- private helpers of the file operations.
 */
#ifndef EXTREF_OPS_INT_H
#define EXTREF_OPS_INT_H

#include "extref_ops.h"
#include "base/xr_clock.h"
#include "quota/xr_quota.h"
#include "txn/xr_handle.h"
#include "extent/xr_extent.h"

/* damage.c: a checksum error met reading ino names ino and its block
 * (extref_damage_where), unless a deeper step named its own. */
void xr_note_damage(extref_fs_t xfs, ext2_ino_t ino, errcode_t err);
/* At an operation's start: no damage named. */
void xr_damage_clear(extref_fs_t xfs);
/* An operation on inos[0..n) ended with err (rolled back): on a checksum
 * error, name the first of them whose block (or inode) fails it; nothing
 * is named if none does.  Returns err. */
errcode_t xr_damage_result(extref_fs_t xfs, const ext2_ino_t *inos,
			   size_t n, errcode_t err);

/* htree.c, dirlist.c: extref_lookup and extref_dir_list on the
 * ext2_filsys itself. */
errcode_t xr_lookup(ext2_filsys fs, ext2_ino_t dir, const char *name,
		    ext2_ino_t *ino);
errcode_t xr_dir_list(ext2_filsys fs, ext2_ino_t dir, int flags,
		      struct extref_dirlist *list);

/* counts.c: the write-order steps of every operation. */
errcode_t xr_share_ranges(extref_fs_t xfs, const struct xr_map_vec *maps);
errcode_t xr_release_ranges(extref_fs_t xfs, const struct xr_prange_vec *r);
errcode_t xr_tree_room(extref_fs_t xfs, const struct xr_map_vec *maps,
		       size_t more);

/* range_rules.c: the kernel's range rules, in its order. */
struct xr_range {
	__u64	soff, doff;
	__u64	len;		/* bytes to remap once the rules applied */
	__u64	reported;	/* what the kernel reports as done */
};
__u64 xr_max_bytes(ext2_filsys fs);
errcode_t xr_clone_rules(ext2_filsys fs, ext2_ino_t src,
			 const struct ext2_inode *si, ext2_ino_t dst,
			 const struct ext2_inode *di, struct xr_range *r);
errcode_t xr_dedupe_src_rules(const struct ext2_inode *si,
			      struct xr_range *r);
errcode_t xr_dedupe_rules(ext2_filsys fs, ext2_ino_t src,
			  const struct ext2_inode *si, ext2_ino_t dst,
			  const struct ext2_inode *di, struct xr_range *r);
errcode_t xr_falloc_rules(ext2_filsys fs, __u64 off, __u64 len);
errcode_t xr_truncate_rules(ext2_filsys fs, __u64 size);
errcode_t xr_write_rules(ext2_filsys fs, __u64 off, __u64 len);

/* modifiable.c: what every modifying operation checks first. */
errcode_t xr_op_begin(extref_fs_t xfs);
errcode_t xr_check_reg(extref_fs_t xfs, ext2_ino_t ino,
		       struct ext2_inode *inode);
errcode_t xr_open_reg(extref_fs_t xfs, ext2_ino_t ino,
		      struct ext2_inode *inode);

/* inode.c: one inode as the operations read and fill it. */
errcode_t xr_read_inode(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode);
blk64_t xr_size_blocks(ext2_filsys fs, __u64 size);
void xr_set_owner(struct ext2_inode *inode, __u32 uid, __u32 gid);
int xr_file_type(__u16 mode);

/* timestamps.c: an inode written with its times set to now. */
#define XR_TIME_CTIME	0	/* the change time only */
#define XR_TIME_MTIME	1	/* and the modification time */
#define XR_TIME_ATIME	2	/* and the access time */
errcode_t xr_write_inode_times(ext2_filsys fs, ext2_ino_t ino,
			       struct ext2_inode *inode, int which);
/* ino's access, change and modification times now, to the nanosecond
 * (libext2fs's mkdir and symlink set whole seconds). */
errcode_t xr_inode_times_now(ext2_filsys fs, ext2_ino_t ino);
#define XR_TS_ATIME	0
#define XR_TS_MTIME	1
#define XR_TS_CTIME	2
void xr_time_set(ext2_filsys fs, struct ext2_inode_large *in, int which,
		 __s64 sec, __u32 nsec);

/* inode_alloc.c: a new inode near DIR, in use, not linked yet, its
 * access, change and modification times now. */
errcode_t xr_new_inode(ext2_filsys fs, ext2_ino_t dir,
		       struct ext2_inode *inode, int extents, ext2_ino_t *ret);

/* identity.c: who acts (NULL: no identity, nothing checked). */
const struct extref_cred *xr_actor(extref_fs_t xfs);
int xr_capable(const struct extref_cred *c, __u32 cap);
int xr_in_group(const struct extref_cred *c, __u32 gid);
int xr_owner_or_capable(const struct extref_cred *c,
			const struct ext2_inode *inode);

/* perm.c: the kernel's checks for the acting identity (NULL: none). */
#define XR_MAY_EXEC	1
#define XR_MAY_WRITE	2
#define XR_MAY_READ	4
#define XR_CHANGE_WRITE	0	/* pwrite: append-only allows it at EOF */
#define XR_CHANGE_DATA	1	/* truncate, punch, unshare, clone target */
#define XR_CHANGE_DEDUPE 2	/* may_dedupe_file */
#define XR_KILL_WRITE	0	/* file_remove_privs */
#define XR_KILL_CHOWN	1	/* chown's ATTR_KILL_SUID/SGID/PRIV */
errcode_t xr_permission(ext2_filsys fs, const struct extref_cred *c,
			ext2_ino_t ino, const struct ext2_inode *inode,
			int mask);
errcode_t xr_perm_inode(extref_fs_t xfs, ext2_ino_t ino, int mask);
errcode_t xr_perm_parent(extref_fs_t xfs, ext2_ino_t dir);
errcode_t xr_may_create(extref_fs_t xfs, ext2_ino_t dir);
errcode_t xr_may_delete(extref_fs_t xfs, ext2_ino_t dir, ext2_ino_t victim);
errcode_t xr_perm_check_write(extref_fs_t xfs, ext2_ino_t ino,
			      const struct ext2_inode *inode, int kind,
			      __u64 off);
errcode_t xr_perm_check_read(extref_fs_t xfs, ext2_ino_t ino,
			     const struct ext2_inode *inode);
void xr_init_owner(const struct extref_cred *c, const struct ext2_inode *dir,
		   __u16 *mode, __u32 *uid, __u32 *gid);
errcode_t xr_remove_privs(extref_fs_t xfs, ext2_ino_t ino,
			  struct ext2_inode *inode, int why);
errcode_t xr_file_modified(extref_fs_t xfs, ext2_ino_t ino,
			   struct ext2_inode *inode);
errcode_t xr_may_create_name(extref_fs_t xfs, ext2_ino_t dir,
			     const char *name);
errcode_t xr_new_owner(extref_fs_t xfs, ext2_ino_t dir,
		       const struct extref_cred *cred,
		       struct ext2_inode *inode);
errcode_t xr_new_group(extref_fs_t xfs, ext2_ino_t dir, __u32 *gid,
		       int *sgid);
errcode_t xr_perm_remap(extref_fs_t xfs, ext2_ino_t src,
			const struct ext2_inode *sinode, ext2_ino_t dst,
			const struct ext2_inode *dinode, int dedupe);
errcode_t xr_perm_reflink_src(extref_fs_t xfs, const struct extref_cred *c,
			      ext2_ino_t ino, const struct ext2_inode *inode,
			      int preserve);

/* The POSIX ACL xattr as libext2fs hands it out (posix_acl_xattr). */
#define ACL_XATTR_VERSION	0x0002
#define ACL_USER_OBJ		0x01
#define ACL_USER		0x02
#define ACL_GROUP_OBJ		0x04
#define ACL_GROUP		0x08
#define ACL_MASK		0x10
#define ACL_OTHER		0x20
#define ACL_ENTRY_SIZE		8	/* __le16 tag, __le16 perm, __le32 id */

/* acl.c: a default ACL given to what an identity makes. */
errcode_t xr_acl_create_mode(extref_fs_t xfs, ext2_ino_t dir, __u16 *mode,
			     int *inherit);
errcode_t xr_acl_inherit(extref_fs_t xfs, ext2_ino_t dir, ext2_ino_t ino);

/* htree.c */
errcode_t xr_dx_make_indexed(ext2_filsys fs, ext2_ino_t dir);
struct xr_dx_path {
	blk64_t		nblocks;	/* the directory's size, in blocks */
	unsigned	n;		/* 0: no index */
	blk64_t		lblk[4];	/* index blocks from the root, leaf */
};
errcode_t xr_dx_path(ext2_filsys fs, ext2_ino_t dir, const char *name,
		     struct xr_dx_path *p);
/* dirclean.c */
errcode_t xr_dx_clean(ext2_filsys fs, ext2_ino_t dir,
		      const struct xr_dx_path *p);
errcode_t xr_unlink_name(ext2_filsys fs, ext2_ino_t dir, const char *name,
			 ext2_ino_t ino);
/* dirent.c: names in a directory.  xr_add_name: NAME -> ino (of file
 * type ftype), or with ino 0 a new directory (target NULL) or symlink. */
errcode_t xr_name_free(ext2_filsys fs, ext2_ino_t dir, const char *name);
errcode_t xr_add_name(ext2_filsys fs, ext2_ino_t dir,
		      const char *name, ext2_ino_t ino, int ftype,
		      const char *target);
errcode_t xr_link(ext2_filsys fs, ext2_ino_t dir, const char *name,
		  ext2_ino_t ino, int ftype);
errcode_t xr_dir_empty(ext2_filsys fs, ext2_ino_t dir);
errcode_t xr_set_entry(ext2_filsys fs, ext2_ino_t dir, const char *name,
		       ext2_ino_t ino, int ftype);
errcode_t xr_dotdot(ext2_filsys fs, ext2_ino_t dir, ext2_ino_t *parent);
/* project.c */
errcode_t xr_inherited_projid(ext2_filsys fs, ext2_ino_t dir, __u32 *projid);
errcode_t xr_inherit_project(ext2_filsys fs, ext2_ino_t dir, ext2_ino_t ino);
errcode_t xr_project_check(ext2_filsys fs, ext2_ino_t dir, ext2_ino_t ino);

/* inline.c */
errcode_t xr_inline_to_extents(extref_fs_t xfs, ext2_ino_t ino,
			       struct ext2_inode *inode);

/* label.c */
errcode_t xr_label_set(ext2_filsys fs, ext2_ino_t ino, const char *label);

/* reflink_publish.c: the blocks the one commit of a recursive reflink
 * of so many inodes journals at least, and EXTREF_ERR_TXN_TOO_BIG if the
 * journal cannot hold them (blocks: those the copy allocates); after
 * such a refusal, the journal grown to hold the copy (1: run it again). */
blk64_t xr_publish_estimate(extref_fs_t xfs, __u64 inodes);
errcode_t xr_publish_check(extref_fs_t xfs, __u64 inodes, blk64_t blocks);
int xr_publish_grow(extref_fs_t xfs, errcode_t *err, int *tries);

/* reflink_meta.c */
errcode_t xr_preserve_check(ext2_filsys fs, ext2_ino_t src);
errcode_t xr_meta_copy(ext2_filsys fs, ext2_ino_t src, ext2_ino_t dst);

/* nlink.c: link counts.  A name dropped (xr_drop_check first, before
 * anything is written; then the entry removed, then xr_drop_link), a
 * directory's entries changed (times, subdirectory count), the limits. */
errcode_t xr_drop_xattr_block(ext2_filsys fs, ext2_ino_t ino,
			      struct ext2_inode *inode);
errcode_t xr_drop_check(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode);
errcode_t xr_drop_link(extref_fs_t xfs, ext2_ino_t ino,
		       struct ext2_inode *inode, int keep);
errcode_t xr_free_inode(extref_fs_t xfs, ext2_ino_t ino,
			struct ext2_inode *inode);

errcode_t xr_dir_may_grow(ext2_filsys fs, ext2_ino_t dir);
errcode_t xr_dir_changed(ext2_filsys fs, ext2_ino_t dir, int delta);
errcode_t xr_dir_count(ext2_filsys fs, ext2_ino_t dir, int delta);
errcode_t xr_may_link(const struct ext2_inode *inode);

/* orphan_list.c: ext4's orphan list (s_last_orphan, then i_dtime). */
errcode_t xr_orphan_check(ext2_filsys fs);
int xr_orphan_on_list(ext2_filsys fs, ext2_ino_t ino);
errcode_t xr_orphan_add(ext2_filsys fs, ext2_ino_t ino,
			struct ext2_inode *inode);
errcode_t xr_orphan_remove(ext2_filsys fs, ext2_ino_t ino);

/* rw.c */
#define XR_COW_WRITE	0	/* write buf: holes and unwritten get blocks */
#define XR_COW_UNSHARE	1	/* shared blocks only, contents kept */
errcode_t xr_cow_range(extref_fs_t xfs, ext2_ino_t ino,
		       struct ext2_inode *inode, __u64 off, const void *buf,
		       __u64 len, int mode);
errcode_t xr_zero_partial(extref_fs_t xfs, ext2_ino_t ino,
			  struct ext2_inode *inode, __u64 off, __u64 len);

/*
 * quota_limits.c: limits checked for an identity (quota/ keeps usage).
 * Refuse (EXTREF_ERR_DQUOT) when bytes and inodes more for the owner ids
 * would pass a hard limit, or a soft limit whose grace time is over.
 * Only with an identity lacking EXTREF_CAP_SYS_RESOURCE.
 */
errcode_t xr_quota_check(extref_fs_t xfs, const __u32 id[XR_QTYPES],
			 __u64 bytes, __u64 inodes);
/* The same for the inode's owner. */
errcode_t xr_quota_check_ino(extref_fs_t xfs, ext2_ino_t ino, __u64 bytes,
			     __u64 inodes);
/* Before a write or clone onto a range: the blocks of its holes. */
errcode_t xr_quota_check_range(extref_fs_t xfs, ext2_ino_t ino, __u64 off,
			       __u64 len);
/* Before a reflink: each new file's whole i_blocks, to its owner-to-be. */
errcode_t xr_quota_check_reflink(extref_fs_t xfs, ext2_ino_t src,
				 ext2_ino_t dir, int flags,
				 const struct extref_cred *cred);
/*
 * chown: ino (old_inode as it is now) moves to new_uid/new_gid; the limits
 * of the new owner are checked for its whole usage.  The caller writes
 * the inode; the write charges the new owner (the inode-write hook).
 */
errcode_t xr_quota_transfer(extref_fs_t xfs, ext2_ino_t ino,
			    const struct ext2_inode *old_inode,
			    __u32 new_uid, __u32 new_gid);

#endif /* EXTREF_OPS_INT_H */
