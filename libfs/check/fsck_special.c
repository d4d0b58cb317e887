/*
 * fsck_special.c --- blocks of a directory or of a reserved inode (the
 * journal, the quota files, the orphan file) that another inode maps
 * too.  Such a block is metadata, never a share: with shared_blocks set
 * e2fsck says nothing of the cross-link, and recording it as shared
 * would let a write to one go through into the other.  The fix, as for
 * group metadata (0x0102): every regular file that maps the block gets
 * its own copy; the directory or reserved inode keeps it.
 */
#include "extref_fsck_int.h"

/* Whether ino is a directory (the scan noted them in inode order). */
static int is_dir(const struct xr_fsck *c, ext2_ino_t ino)
{
	size_t lo = 0, hi = c->ndirs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->dirs[mid] < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ndirs && c->dirs[lo] == ino;
}

int xr_fsck_special_ino(const struct xr_fsck *c, ext2_ino_t ino)
{
	const struct ext2_super_block *sb = c->fs->super;

	return ino < EXT2_FIRST_INO(sb) || is_dir(c, ino) ||
	       ino == sb->s_usr_quota_inum || ino == sb->s_grp_quota_inum ||
	       ino == sb->s_prj_quota_inum || ino == sb->s_orphan_file_inum;
}

/* [s, e) of mappings i and j, a special inode's and another's. */
static void one(struct xr_fsck *c, size_t i, size_t j, blk64_t s, blk64_t e)
{
	ext2_ino_t a = xr_map_ino(c, i), b = xr_map_ino(c, j);
	ext2_ino_t sp = xr_fsck_special_ino(c, a) ? a : b;
	ext2_ino_t other = sp == a ? b : a;
	char n1[XR_NAME_LEN], n2[XR_NAME_LEN];

	if (xr_problem(c, PR_X_DATA_IS_METADATA,
		       "inode %s maps block %llu, which is also mapped by %s %s",
		       xr_fsck_ino_name(c, other, n1, sizeof(n1)),
		       (unsigned long long)s,
		       is_dir(c, sp) ? "directory" : "reserved inode",
		       xr_fsck_ino_name(c, sp, n2, sizeof(n2))) &&
	    xr_fsck_note_unshare(c, s, e, XR_UNS_KEEP_SPECIAL) && !c->err)
		c->err = EXT2_ET_NO_MEMORY;
}

/*
 * Every pair of mappings of two inodes that overlap where one inode is
 * special; the full run only (the probe keeps no inode numbers: a
 * block mapped twice without a record already sends it to the full run).
 */
void xr_fsck_check_special(struct xr_fsck *c)
{
	size_t i, j;

	if (c->lean)
		return;
	for (i = 0; i < c->nmap && !c->err; i++) {
		blk64_t s = xr_map_pblk(c, i), e = s + xr_map_len(c, i);

		for (j = i + 1; j < c->nmap && xr_map_pblk(c, j) < e; j++) {
			blk64_t js = xr_map_pblk(c, j);
			blk64_t je = js + xr_map_len(c, j);

			if (xr_map_ino(c, i) == xr_map_ino(c, j) ||
			    (!xr_fsck_special_ino(c, xr_map_ino(c, i)) &&
			     !xr_fsck_special_ino(c, xr_map_ino(c, j))))
				continue;
			one(c, i, j, js > s ? js : s, je < e ? je : e);
		}
	}
}

/* Whether a special inode maps a block of [s, e) (0x0102 said so). */
int xr_fsck_range_special(const struct xr_fsck *c, blk64_t s, blk64_t e)
{
	size_t i;

	if (c->lean)
		return 0;
	for (i = xr_fsck_first_map(c, s); i < c->nmap && c->map[i].pblk < e;
	     i++)
		if (c->map[i].pblk + c->map[i].len > s &&
		    xr_fsck_special_ino(c, c->map[i].ino))
			return 1;
	return 0;
}
