/*
 * fuzz_quota.c --- libFuzzer target: the quota files of a damaged image
 * with the quota feature (libfs/quota/: the v2 trees of user, group and
 * project quota, read, charged and written back).  Every type's entry
 * for one id is read and every type iterated; one id's limits are set;
 * a file is reflinked as that id (so the charge meets its limits) or,
 * when arg1's top bit is set, the usage is recomputed from all inodes;
 * the image is then closed, which writes the files.
 *
 * arg0 is the id, arg16 picks the file, arg1 the limits and the type.
 */
#include <string.h>
#include "fz.h"
#include "extref_ops.h"

static errcode_t count_id(int type, __u32 id, const struct extref_quota *q,
			  void *priv)
{
	(void)type; (void)id; (void)q;
	++*(unsigned int *)priv;
	return 0;
}

static void read_all(extref_fs_t xfs, __u32 id)
{
	struct extref_quota q;
	unsigned int n = 0;
	int type;

	for (type = EXTREF_QUOTA_USER; type <= EXTREF_QUOTA_PROJECT; type++) {
		fz_report("quota_get", extref_quota_get(xfs, type, id, &q));
		fz_report("quota_iterate",
			  extref_quota_iterate(xfs, type, count_id, &n));
	}
}

/* Limits from arg1: space in KiB, inodes, and the type. */
static void set_limits(extref_fs_t xfs, __u32 id, uint32_t arg1)
{
	struct extref_quota q;

	memset(&q, 0, sizeof(q));
	q.bsoft = (__u64)(arg1 & 0xff) << 10;
	q.bhard = (__u64)((arg1 >> 8) & 0xff) << 10;
	q.isoft = (arg1 >> 16) & 0xf;
	q.ihard = (arg1 >> 20) & 0xf;
	fz_report("quota_set", extref_quota_set(xfs, (arg1 >> 24) % 3, id,
						&q));
}

/* A reflink made as id: charged to id, refused past its limits. */
static void charge(extref_fs_t xfs, const struct fz_image *img)
{
	struct extref_cred cred;
	ext2_ino_t src, ino;

	memset(&cred, 0, sizeof(cred));
	cred.uid = cred.gid = img->arg0;
	cred.umask = 022;
	/* past the permissions of /, not past the limits */
	cred.caps = EXTREF_CAP_DAC_OVERRIDE | EXTREF_CAP_DAC_READ_SEARCH;
	src = fz_lookup(xfs, fz_files[img->arg16 % fz_nfiles]);
	if (!src || extref_set_identity(xfs, &cred))
		return;
	fz_report("reflink", extref_reflink(xfs, src, EXT2_ROOT_INO,
					    "fuzz-copy", 0, NULL, &ino));
	extref_set_identity(xfs, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	extref_fs_t xfs;

	xfs = fz_start(data, size, &img);
	if (!xfs)
		return 0;
	read_all(xfs, img.arg0);
	set_limits(xfs, img.arg0, img.arg1);
	if (img.arg1 & 0x80000000u)
		fz_report("quota_recompute", extref_quota_recompute(xfs));
	else
		charge(xfs, &img);
	read_all(xfs, img.arg0);
	fz_report("close", extref_fs_close(xfs));
	return 0;
}
