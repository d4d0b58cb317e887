/*
 * punch.c --- the blocks deduplication frees leave the image file.
 *
 * Freed blocks keep their old bytes in the image file: the host still
 * stores them, and they do not even compress away.  The block bitmap is
 * copied before the work; after it, the runs in use then and free now
 * are listed, and once the filesystem is closed (the frees on disk, so
 * a crash never finds a file mapping a hole) they are punched out with
 * fallocate(PUNCH_HOLE | KEEP_SIZE): the file keeps its size and reads
 * zeros there, and the host gives the space back.  Only blocks this run
 * freed are punched; blocks free before are left as they were.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_int.h"

errcode_t xr_punch_snapshot(ext2_filsys fs, ext2fs_block_bitmap *before)
{
	errcode_t err = ext2fs_read_block_bitmap(fs);

	if (err)
		return err;
	return ext2fs_copy_bitmap(fs->block_map, before);
}

static errcode_t add_run(struct xr_punch_list *l, blk64_t start, blk64_t len)
{
	if (l->n && l->v[l->n - 1].start + l->v[l->n - 1].len == start) {
		l->v[l->n - 1].len += len;
		return 0;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct xr_punch_range *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return EXT2_ET_NO_MEMORY;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n].start = start;
	l->v[l->n].len = len;
	l->n++;
	return 0;
}

/* The runs free now inside [start, end], a run that was in use. */
static errcode_t plan_run(ext2_filsys fs, blk64_t start, blk64_t end,
			  struct xr_punch_list *l)
{
	blk64_t b = start, z, s;
	errcode_t err = 0;

	while (!err && b <= end) {
		if (ext2fs_find_first_zero_block_bitmap2(fs->block_map, b, end,
							 &z))
			break;		/* all still in use */
		if (ext2fs_find_first_set_block_bitmap2(fs->block_map, z, end,
							&s))
			s = end + 1;
		err = add_run(l, z, s - z);
		b = s;
	}
	return err;
}

errcode_t xr_punch_plan(ext2_filsys fs, ext2fs_block_bitmap before,
		     struct xr_punch_list *l)
{
	blk64_t b = fs->super->s_first_data_block, last, s, z;
	errcode_t err = 0;

	last = ext2fs_blocks_count(fs->super) - 1;
	l->blocksize = fs->blocksize;
	while (!err && b <= last) {
		if (ext2fs_find_first_set_block_bitmap2(before, b, last, &s))
			break;
		if (ext2fs_find_first_zero_block_bitmap2(before, s, last, &z))
			z = last + 1;
		err = plan_run(fs, s, z - 1, l);
		b = z;
	}
	ext2fs_free_block_bitmap(before);
	return err;
}

/*
 * Keep only the blocks the image, read back from the disk, has free: a
 * block is punched out only when what is on disk says no file maps it
 * (and nothing at all while the journal still needs recovery: the disk
 * is not final then).
 */
static errcode_t keep_free_on_disk(const char *image, struct xr_punch_list *l)
{
	struct xr_punch_list kept = { .blocksize = l->blocksize };
	ext2_filsys fs;
	errcode_t err;
	size_t i;

	err = ext2fs_open2(image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	if (ext2fs_has_feature_journal_needs_recovery(fs->super))
		l->n = 0;
	err = l->n ? ext2fs_read_block_bitmap(fs) : 0;
	for (i = 0; !err && i < l->n; i++) {
		blk64_t b = l->v[i].start, end = b + l->v[i].len, s;

		while (!err && b < end) {
			for (; b < end && ext2fs_test_block_bitmap2(fs->block_map,
								     b); b++)
				;
			for (s = b; b < end &&
			     !ext2fs_test_block_bitmap2(fs->block_map, b); b++)
				;
			if (b > s)
				err = add_run(&kept, s, b - s);
		}
	}
	ext2fs_free(fs);
	if (err) {
		xr_punch_free(&kept);
		return err;
	}
	xr_punch_free(l);
	*l = kept;
	return 0;
}

errcode_t xr_punch_apply(const char *image, struct xr_punch_list *l,
		      __u64 *bytes)
{
	int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	errcode_t err = 0;
	struct stat st;
	size_t i;
	int fd;

	*bytes = 0;
	if (!l->n)
		return 0;
	fd = open(image, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	if (fsync(fd) < 0)
		err = errno;
	if (!err)
		err = keep_free_on_disk(image, l);
	for (i = 0; !err && i < l->n; i++) {
		off_t off = (off_t)l->v[i].start * l->blocksize;
		off_t len = (off_t)l->v[i].len * l->blocksize;

		if (fallocate(fd, mode, off, len) < 0) {
			if (errno != EOPNOTSUPP && errno != ENOSYS)
				err = errno;
			break;
		}
		*bytes += (__u64)len;
	}
	if (close(fd) < 0 && !err)
		err = errno;
	return err;
}

void xr_punch_free(struct xr_punch_list *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}
