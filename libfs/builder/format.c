/*
 * format.c --- extref_build_format: the empty reference-count tree added
 * to the filesystem mke2fs has just made.
 *
 * Opened again after mke2fs, the image is written in a few blocks, but
 * libext2fs and the tree's code flush (fsync) four times on the way: the
 * tree's header between two flushes, the superblock between two more.
 * That order is what keeps an existing image consistent through a crash;
 * a new one is not an image until its build has finished (a crash
 * before leaves an image to make again), so here the channel writes
 * straight to the file (no cache) and its flush does nothing, and the
 * image is flushed once when it is complete (xr_build_sync).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "build_int.h"

static struct struct_io_manager nosync_manager;

/* Nothing is held (the channel's cache is off): nothing to write. */
static errcode_t no_flush(io_channel io)
{
	(void)io;
	return 0;
}

static void nosync_attach(ext2_filsys fs)
{
	nosync_manager = *fs->io->manager;
	nosync_manager.flush = no_flush;
	fs->io->manager = &nosync_manager;
}

errcode_t xr_build_sync(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	errcode_t err = 0;

	if (fd < 0)
		return errno;
	if (fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

void xr_build_clock(ext2_filsys fs, const struct extref_build_opts *o)
{
	if (o && (o->flags & EXTREF_BUILD_EPOCH))
		fs->now = (time_t)o->epoch;
}

static void collect(ext2_filsys fs, struct extref_image_info *s)
{
	struct ext2_super_block *sb = fs->super;

	s->blocks = ext2fs_blocks_count(sb);
	s->blocksize = fs->blocksize;
	s->inodes = sb->s_inodes_count;
	s->inode_size = EXT2_INODE_SIZE(sb);
	s->journal = ext2fs_has_feature_journal(sb);
	memcpy(s->uuid, sb->s_uuid, sizeof(s->uuid));
	memset(s->label, 0, sizeof(s->label));
	memcpy(s->label, sb->s_volume_name, EXT2_LABEL_LEN);
}

/* -t, -T, -o: mke2fs.conf's types choose the features. */
static errcode_t usable(ext2_filsys fs)
{
	if (!ext2fs_has_feature_extents(fs->super))
		return EXTREF_ERR_NO_EXTENTS;
	if (ext2fs_has_feature_bigalloc(fs->super))
		return EXTREF_ERR_BIGALLOC;
	return 0;
}

/* The tree, with only the bitmap its block comes from (lean.c);
 * declined, extref_format reads them all. */
static errcode_t add_tree(ext2_filsys fs)
{
	struct xr_lean lean;
	errcode_t err;

	xr_lean_begin(fs, &lean);
	err = extref_format(fs);
	if (!err)
		err = xr_lean_end(fs, &lean);
	xr_lean_free(&lean);
	return err;
}

errcode_t extref_build_format(const char *image,
			      const struct extref_build_opts *o,
			      struct extref_image_info *info, int *step)
{
	ext2_filsys fs = NULL;
	struct extref_image_info s;
	int dummy;
	errcode_t err;

	if (!step)
		step = &dummy;
	*step = EXTREF_STEP_OPEN;
	/* no cache, no flush until the end */
	err = ext2fs_open2(image, "cache=off", EXT2_FLAG_RW | EXT2_FLAG_64BITS,
			   0, 0, unix_io_manager, &fs);
	if (err)
		return err;
	err = usable(fs);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	nosync_attach(fs);
	xr_build_clock(fs, o);
	/* A new filesystem's bitmaps are a few runs: extents, not a flat
	 * bit array of every block (32 MiB at 1 TiB, most of the time). */
	fs->default_bitmap_type = EXT2FS_BMAP64_RBTREE;
	*step = EXTREF_STEP_WORK;
	err = add_tree(fs);
	if (err) {
		ext2fs_free(fs);
		return err;
	}
	collect(fs, &s);
	*step = EXTREF_STEP_WRITE;
	err = ext2fs_close_free(&fs);
	if (!err)
		err = xr_build_sync(image);
	if (!err && info)
		*info = s;
	return err;
}
