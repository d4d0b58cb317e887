/*
 * identity.c --- who acts: the identity an operation is checked for
 * (extref_set_identity, held in the handle), the caller's own
 * credentials, and the questions every check asks of an identity (its
 * capabilities, its groups, ownership).  NULL stands for no identity:
 * nothing is checked (perm.c).
 */
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "extref_ops_int.h"
#include "txn/xr_handle.h"

/* The identity lives in the handle (txn/xr_handle.h), a copy of the
 * caller's, freed with the handle. */
errcode_t extref_set_identity(extref_fs_t xfs, const struct extref_cred *cred)
{
	struct extref_cred **slot = xr_fs_identp(xfs);
	errcode_t err;

	if (cred && cred->ngroups > EXTREF_NGROUPS_MAX)
		return EXT2_ET_INVALID_ARGUMENT;
	if (!cred) {
		ext2fs_free_mem(slot);
		return 0;
	}
	if (!*slot) {
		err = ext2fs_get_mem(sizeof(**slot), slot);
		if (err)
			return err;
	}
	**slot = *cred;
	return 0;
}

const struct extref_cred *extref_identity(extref_fs_t xfs)
{
	return *xr_fs_identp(xfs);
}

const struct extref_cred *xr_actor(extref_fs_t xfs)
{
	return xr_perm_held(xfs) ? NULL : extref_identity(xfs);
}

int xr_capable(const struct extref_cred *c, __u32 cap)
{
	return !c || (c->caps & cap);
}

int xr_in_group(const struct extref_cred *c, __u32 gid)
{
	__u32 i;

	if (!c || c->gid == gid)
		return 1;
	for (i = 0; i < c->ngroups && i < EXTREF_NGROUPS_MAX; i++)
		if (c->groups[i] == gid)
			return 1;
	return 0;
}

int xr_owner_or_capable(const struct extref_cred *c,
			const struct ext2_inode *inode)
{
	return !c || c->uid == inode_uid(*inode) ||
	       xr_capable(c, EXTREF_CAP_FOWNER);
}

void extref_cred_current(struct extref_cred *cred)
{
	mode_t m = umask(022);
	int n;
	gid_t g[EXTREF_NGROUPS_MAX];

	umask(m);
	memset(cred, 0, sizeof(*cred));
	cred->uid = getuid();
	cred->gid = getgid();
	cred->umask = m;
	n = getgroups(EXTREF_NGROUPS_MAX, g);
	for (int i = 0; i < n; i++)
		cred->groups[cred->ngroups++] = g[i];
	cred->caps = cred->uid == 0 ? EXTREF_CAP_ALL : 0;
}
