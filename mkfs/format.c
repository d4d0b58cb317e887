/*
 * format.c --- add the empty reference-count tree to the new filesystem.
 */
#include <stdio.h>
#include <string.h>

#include <et/com_err.h>
#include <ext2fs/ext2fs.h>
#include <uuid/uuid.h>

#include "extref.h"
#include "mkfs.h"

struct summary {
	unsigned long long	blocks;
	unsigned int		blocksize;
	unsigned int		inodes;
	unsigned int		inode_size;
	unsigned int		journal;
	char			uuid[37];
	char			label[EXT2_LABEL_LEN + 1];
};

static void collect(ext2_filsys fs, struct summary *s)
{
	struct ext2_super_block *sb = fs->super;

	s->blocks = ext2fs_blocks_count(sb);
	s->blocksize = fs->blocksize;
	s->inodes = sb->s_inodes_count;
	s->inode_size = EXT2_INODE_SIZE(sb);
	s->journal = ext2fs_has_feature_journal(sb);
	uuid_unparse(sb->s_uuid, s->uuid);
	memset(s->label, 0, sizeof(s->label));
	memcpy(s->label, sb->s_volume_name, EXT2_LABEL_LEN);
}

static void print_summary(const char *image, const struct summary *s)
{
	unsigned long long bytes = s->blocks * s->blocksize;

	printf("%s: made an extref filesystem on %s\n", prog, image);
	printf("  size:                 %llu bytes (%.1f MiB), %llu blocks "
	       "of %u bytes\n", bytes, bytes / 1048576.0, s->blocks,
	       s->blocksize);
	printf("  inodes:               %u of %u bytes\n", s->inodes,
	       s->inode_size);
	if (s->label[0])
		printf("  label:                %s\n", s->label);
	printf("  UUID:                 %s\n", s->uuid);
	printf("  journal:              %s\n", s->journal ? "yes" : "no");
	printf("  reference-count tree: empty, in inode %d\n", EXTREF_INO);
}

int format_image(const struct mkfs_opts *o, const struct mkfs_target *t)
{
	ext2_filsys fs = NULL;
	struct summary s;
	struct lean lean;
	errcode_t err;

	(void)t;
	/* no cache, no flush until the end (nosync.c) */
	err = ext2fs_open2(o->image, "cache=off",
			   EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err) {
		com_err(prog, err, "while opening %s", o->image);
		return -1;
	}
	/* -t, -T, -o: mke2fs.conf's types choose the features */
	if (!ext2fs_has_feature_extents(fs->super)) {
		error_line("%s: mke2fs made a filesystem without extents "
			   "(from the types of its mke2fs.conf, -t or -T), "
			   "which the extref toolkit requires (-O extent)",
			   o->image);
		ext2fs_free(fs);
		return -1;
	}
	if (ext2fs_has_feature_bigalloc(fs->super)) {
		error_line("%s: mke2fs made a bigalloc filesystem (from the "
			   "types of its mke2fs.conf, -t or -T), which the "
			   "extref toolkit does not support", o->image);
		ext2fs_free(fs);
		return -1;
	}
	nosync_attach(fs);
	if (o->have_epoch)
		fs->now = (time_t)o->epoch;
	/* A new filesystem's bitmaps are a few runs: extents, not a flat
	 * bit array of every block (32 MiB at 1 TiB, most of the time). */
	fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
	/* Only the bitmap the tree's block comes from (lean.c); declined,
	 * extref_format reads them all. */
	lean_begin(fs, &lean);
	err = extref_format(fs);
	if (!err)
		err = lean_end(fs, &lean);
	lean_free(&lean);
	if (err) {
		com_err(prog, err, "while creating the reference-count tree "
			"on %s", o->image);
		ext2fs_free(fs);
		return -1;
	}
	collect(fs, &s);
	err = ext2fs_close_free(&fs);
	if (!err)
		err = sync_image(o->image);
	if (err) {
		com_err(prog, err, "while writing %s", o->image);
		return -1;
	}
	/* a build (-d) has only begun: its summary comes at the end */
	if (!o->quiet && !o->source)
		print_summary(o->image, &s);
	return 0;
}
