/*
 * shrink_itable.c --- the inode tables of an image laid out again for
 * the inodes per group a fresh build of what it holds would have
 * (mkfs.extref --convert --shrink, before the cut).
 *
 * resize2fs never changes the inodes per group, and an image made by
 * mke2fs for a larger filesystem has one inode per 4 or 16 KiB of it:
 * after a cut the inode tables can be most of the image, or (a tree of
 * small files) too few inodes are left for the groups that stay.  So,
 * with every inode in use read into memory first:
 *
 *   - the inode numbers: an inode keeps its number when it lies within
 *     the groups that stay (its slot under the new inodes per group);
 *     the others take the lowest free numbers (shrink_renum.c rewrites
 *     the directory entries and checksums that name them);
 *   - the tables: the old ones freed, a new one of the new size for each
 *     group, allocated below the new end for the groups that stay (where
 *     the old ones were, as a rule; without flex_bg, inside the group),
 *     every inode written into its slot with its checksum for its number;
 *   - the inode bitmaps, the descriptors' counts, flags and checksums,
 *     and the superblock's counts, for the caller's close to write.
 *
 * The blocks of a table past its last inode in use are neither zeroed
 * nor written when the descriptors say so (itable_unused, with
 * uninit_bg or metadata_csum): the file's blocks there are punched
 * afterwards (shrink.c), as a fresh build leaves them unwritten.
 *
 * The caller runs this through e2fsprogs' undo io manager: every block
 * is saved before it is overwritten, and e2undo puts the image back
 * after a failure or a kill.
 */
#include <stdlib.h>
#include <string.h>

#include "mkfs.h"
#include "shrink_int.h"

/* Every inode in use (and every reserved one), sorted, with its bytes. */
static errcode_t collect(struct relayout *r)
{
	ext2_filsys fs = r->fs;
	__u32 count = fs->super->s_inodes_count, isz = EXT2_INODE_SIZE(fs->super);
	size_t cap = (size_t)(count - fs->super->s_free_inodes_count) +
		     fs->super->s_first_ino;
	ext2_ino_t ino = 1, next;
	errcode_t err;

	r->old = calloc(cap, sizeof(*r->old));
	r->new = calloc(cap, sizeof(*r->new));
	r->bytes = calloc(cap, isz);
	if (!r->old || !r->new || !r->bytes)
		return EXT2_ET_NO_MEMORY;
	while (ino <= count) {
		if (ino >= fs->super->s_first_ino) {
			if (ext2fs_find_first_set_inode_bitmap2(fs->inode_map,
						ino, count, &next))
				break;
			ino = next;
		}
		if (r->n == cap)
			return EXT2_ET_INODE_ALLOC_FAIL; /* counts lie */
		err = ext2fs_read_inode_full(fs, ino, (struct ext2_inode *)
					     (r->bytes + r->n * isz), isz);
		if (err)
			return err;
		r->old[r->n++] = ino++;
	}
	return 0;
}

/* Numbers under the new layout: kept within limit, else the lowest free. */
static errcode_t number(struct relayout *r, __u32 limit)
{
	ext2_ino_t cur = r->fs->super->s_first_ino;
	size_t k = 0, i;

	for (i = 0; i < r->n; i++) {
		if (r->old[i] <= limit) {
			r->new[i] = r->old[i];
			continue;
		}
		/* the kept numbers are r->old[0..] up to limit, sorted */
		while (k < r->n && r->old[k] <= limit && r->old[k] <= cur) {
			if (r->old[k] == cur)
				cur++;
			k++;
		}
		if (cur > limit)
			return EXT2_ET_INODE_ALLOC_FAIL;
		r->new[i] = cur++;
		r->moved = 1;
	}
	return 0;
}

/* A group's table: the old one freed by the caller, a new one below end. */
static errcode_t place_table(struct relayout *r, dgrp_t g, blk64_t *goal,
			     blk64_t end)
{
	ext2_filsys fs = r->fs;
	blk64_t blk;
	errcode_t err;

	if (end < r->ibpg + 1)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	/* from the goal; then from the start (a run that begins before
	 * end - ibpg + 1 ends below end) */
	err = EXT2_ET_BLOCK_ALLOC_FAIL;
	if (*goal + r->ibpg < end)
		err = ext2fs_get_free_blocks2(fs, *goal, end - r->ibpg + 1,
					      (int)r->ibpg, fs->block_map,
					      &blk);
	if (err == EXT2_ET_BLOCK_ALLOC_FAIL)
		err = ext2fs_get_free_blocks2(fs, 0, end - r->ibpg + 1,
					      (int)r->ibpg, fs->block_map,
					      &blk);
	if (err)
		return err;
	ext2fs_block_alloc_stats_range(fs, blk, r->ibpg, +1);
	ext2fs_inode_table_loc_set(fs, g, blk);
	*goal = blk + r->ibpg;
	return 0;
}

/* Without flex_bg a group's table must lie in the group itself. */
static errcode_t place_in_group(struct relayout *r, dgrp_t g, blk64_t below)
{
	ext2_filsys fs = r->fs;
	blk64_t first = ext2fs_group_first_block2(fs, g);
	blk64_t end = ext2fs_group_last_block2(fs, g) + 1;

	blk64_t blk;
	errcode_t err;

	if (g < r->groups && end > below)
		end = below;
	if (end < first + r->ibpg + 1)
		return EXT2_ET_BLOCK_ALLOC_FAIL;
	/* a run starting before end - ibpg + 1 ends inside the group */
	err = ext2fs_get_free_blocks2(fs, first, end - r->ibpg + 1,
				      (int)r->ibpg, fs->block_map, &blk);
	if (err)
		return err;
	ext2fs_block_alloc_stats_range(fs, blk, r->ibpg, +1);
	ext2fs_inode_table_loc_set(fs, g, blk);
	return 0;
}

static errcode_t new_tables(struct relayout *r, blk64_t below)
{
	ext2_filsys fs = r->fs;
	blk64_t goal = ~0ULL, cut_goal = below, end;
	errcode_t err;
	dgrp_t g;

	for (g = 0; g < fs->group_desc_count; g++) {
		blk64_t t = ext2fs_inode_table_loc(fs, g);

		ext2fs_block_alloc_stats_range(fs, t,
					       fs->inode_blocks_per_group, -1);
		if (t < goal)
			goal = t;
	}
	fs->inode_blocks_per_group = (unsigned int)r->ibpg;
	for (g = 0; g < fs->group_desc_count; g++) {
		if (!ext2fs_has_feature_flex_bg(fs->super)) {
			err = place_in_group(r, g, below);
		} else if (g < r->groups) {
			err = place_table(r, g, &goal, below);
		} else {
			/* a group the cut takes: its table above the new
			 * end (below it, it would hold blocks the cut
			 * needs), else anywhere */
			end = ext2fs_blocks_count(fs->super);
			if (cut_goal < below)
				cut_goal = below;
			err = place_table(r, g, &cut_goal, end);
			if (err == EXT2_ET_BLOCK_ALLOC_FAIL) {
				cut_goal = 0;
				err = place_table(r, g, &cut_goal, end);
			}
		}
		if (err)
			return err;
	}
	return 0;
}

/* The new geometry in the superblock, and an inode bitmap of its size. */
static errcode_t new_geometry(struct relayout *r)
{
	ext2_filsys fs = r->fs;
	errcode_t err;

	fs->super->s_inodes_per_group = r->ipg;
	fs->super->s_inodes_count = r->ipg * fs->group_desc_count;
	fs->super->s_free_inodes_count = fs->super->s_inodes_count -
					 (__u32)r->n;
	ext2fs_free_inode_bitmap(fs->inode_map);
	fs->inode_map = NULL;
	err = ext2fs_allocate_inode_bitmap(fs, "inode bitmap", &fs->inode_map);
	if (err)
		return err;
	for (ext2_ino_t i = 1; i < fs->super->s_first_ino; i++)
		ext2fs_mark_inode_bitmap2(fs->inode_map, i);
	return 0;
}

/* Blocks of group g's table to zero: all, or up to its last inode. */
static blk64_t blocks_to_zero(struct relayout *r, __u32 last)
{
	__u32 ipb = EXT2_INODES_PER_BLOCK(r->fs->super);

	if (!ext2fs_has_group_desc_csum(r->fs))
		return r->ibpg;
	return (last + ipb - 1) / ipb;
}

/* Counts and flags of each group for the inodes now in it. */
static void group_counts(struct relayout *r, __u32 *last, __u32 *used,
			 __u32 *dirs)
{
	ext2_filsys fs = r->fs;
	int csum = ext2fs_has_group_desc_csum(fs);

	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		ext2fs_bg_free_inodes_count_set(fs, g, r->ipg - used[g]);
		ext2fs_bg_used_dirs_count_set(fs, g, dirs[g]);
		ext2fs_bg_itable_unused_set(fs, g, csum ? r->ipg - last[g] : 0);
		ext2fs_bg_flags_clear(fs, g, EXT2_BG_INODE_UNINIT |
				      EXT2_BG_INODE_ZEROED);
		if (csum && !used[g])
			ext2fs_bg_flags_set(fs, g, EXT2_BG_INODE_UNINIT);
		if (blocks_to_zero(r, last[g]) == r->ibpg)
			ext2fs_bg_flags_set(fs, g, EXT2_BG_INODE_ZEROED);
		ext2fs_group_desc_csum_set(fs, g);
	}
}

/* Where the inodes go, per group: the last slot used, inodes, dirs. */
static errcode_t tally(struct relayout *r, __u32 **last, __u32 **used,
		       __u32 **dirs)
{
	dgrp_t n = r->fs->group_desc_count;
	__u32 isz = EXT2_INODE_SIZE(r->fs->super);

	*last = calloc(n, sizeof(**last));
	*used = calloc(n, sizeof(**used));
	*dirs = calloc(n, sizeof(**dirs));
	if (!*last || !*used || !*dirs)
		return EXT2_ET_NO_MEMORY;
	for (size_t i = 0; i < r->n; i++) {
		struct ext2_inode *in = (struct ext2_inode *)(r->bytes + i * isz);
		dgrp_t g = (r->new[i] - 1) / r->ipg;
		__u32 slot = (r->new[i] - 1) % r->ipg + 1;

		if (slot > (*last)[g])
			(*last)[g] = slot;
		(*used)[g]++;
		if (LINUX_S_ISDIR(in->i_mode) && in->i_links_count)
			(*dirs)[g]++;
	}
	return 0;
}

/* Zero what the tables need zeroed, then every inode into its slot. */
static errcode_t write_inodes(struct relayout *r, const __u32 *last,
			      int *wrote)
{
	ext2_filsys fs = r->fs;
	__u32 isz = EXT2_INODE_SIZE(fs->super);
	errcode_t err;

	*wrote = 1;	/* nothing was written before: all in memory */
	for (dgrp_t g = 0; g < fs->group_desc_count; g++) {
		blk64_t z = blocks_to_zero(r, last[g]);

		if (z) {
			err = ext2fs_zero_blocks2(fs,
					ext2fs_inode_table_loc(fs, g),
					(int)z, NULL, NULL);
			if (err)
				return err;
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		err = ext2fs_write_inode_full(fs, r->new[i],
				(struct ext2_inode *)(r->bytes + i * isz), isz);
		if (err)
			return err;
		if (r->new[i] >= fs->super->s_first_ino)
			ext2fs_mark_inode_bitmap2(fs->inode_map, r->new[i]);
		err = shrink_tick();
		if (err)
			return err;
	}
	return 0;
}

errcode_t shrink_itable(ext2_filsys fs, __u32 ipg, dgrp_t groups,
			blk64_t below, int *wrote)
{
	struct relayout r;
	__u32 *last = NULL, *used = NULL, *dirs = NULL;
	errcode_t err;

	memset(&r, 0, sizeof(r));
	r.fs = fs;
	r.ipg = ipg;
	r.groups = groups;
	r.ibpg = ((blk64_t)ipg * EXT2_INODE_SIZE(fs->super) + fs->blocksize -
		  1) / fs->blocksize;
	if ((__u64)ipg * fs->group_desc_count > 0xffffffffULL)
		return EXT2_ET_TOO_MANY_INODES;
	err = ext2fs_read_bitmaps(fs);
	if (!err)
		err = collect(&r);
	if (!err)
		err = number(&r, ipg * groups);
	if (!err && r.moved)
		err = shrink_renum_check(fs, &r);
	if (!err)
		err = ext2fs_flush_icache(fs);
	if (!err)
		err = new_tables(&r, below);
	if (!err)
		err = new_geometry(&r);
	if (!err)
		err = tally(&r, &last, &used, &dirs);
	if (!err)
		err = write_inodes(&r, last, wrote);
	if (!err) {
		group_counts(&r, last, used, dirs);
		err = shrink_renum(&r);
	}
	if (!err) {
		ext2fs_mark_ib_dirty(fs);
		ext2fs_mark_bb_dirty(fs);
		ext2fs_mark_super_dirty(fs);
	}
	free(last);
	free(used);
	free(dirs);
	free(r.old);
	free(r.new);
	free(r.bytes);
	return err;
}
