/*
 * summary.c --- what a build holds, in MiB, at the end of the run.
 *
 * Read from the finished image, not from the steps that made it, so it
 * says what is there however it got there:
 *   file data    the data blocks the regular files map (holes and
 *                inline data not counted; a block counted once per file)
 *   stored data  the distinct blocks among them (a shared block once)
 *   saved        file data less stored data
 *   image size   the filesystem's blocks
 *   allocated on the host  st_blocks * 512 of the image file (a hole
 *                costs nothing), for a regular file only
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <et/com_err.h>

#include "extref.h"
#include "mkfs.h"

struct tally {
	ext2fs_block_bitmap	seen;
	uint64_t		file_blocks;	/* mapped, per file */
	uint64_t		stored_blocks;	/* distinct */
};

static int count_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t bcnt,
		       blk64_t ref_blk, int ref_offset, void *priv)
{
	struct tally *t = priv;

	(void)fs; (void)bcnt; (void)ref_blk; (void)ref_offset;
	t->file_blocks++;
	if (!ext2fs_fast_test_block_bitmap2(t->seen, *blocknr)) {
		ext2fs_fast_mark_block_bitmap2(t->seen, *blocknr);
		t->stored_blocks++;
	}
	return 0;
}

static int is_counted(ext2_filsys fs, ext2_ino_t ino,
		      const struct ext2_inode *in)
{
	return ino >= EXT2_FIRST_INO(fs->super) && in->i_links_count &&
	       !in->i_dtime && LINUX_S_ISREG(in->i_mode) &&
	       !(in->i_flags & EXT4_INLINE_DATA_FL);
}

static errcode_t tally_files(ext2_filsys fs, struct tally *t)
{
	ext2_inode_scan scan = NULL;
	struct ext2_inode in;
	ext2_ino_t ino;
	errcode_t err;

	err = ext2fs_allocate_block_bitmap(fs, "summary", &t->seen);
	if (!err)
		err = ext2fs_open_inode_scan(fs, 0, &scan);
	while (!err) {
		err = ext2fs_get_next_inode(scan, &ino, &in);
		if (err || !ino)
			break;
		if (is_counted(fs, ino, &in))
			err = extref_block_iterate(fs, ino,
					       BLOCK_FLAG_DATA_ONLY |
					       BLOCK_FLAG_READ_ONLY,
					       count_block, t);
	}
	if (scan)
		ext2fs_close_inode_scan(scan);
	if (t->seen)
		ext2fs_free_block_bitmap(t->seen);
	return err;
}

static double mib(uint64_t bytes)
{
	return bytes / 1048576.0;
}

static void print(const struct mkfs_opts *o, ext2_filsys fs,
		  const struct tally *t, const struct stat *st)
{
	uint64_t file = t->file_blocks * fs->blocksize;
	uint64_t stored = t->stored_blocks * fs->blocksize;
	uint64_t size = ext2fs_blocks_count(fs->super) * fs->blocksize;

	printf("%s: %s\n", prog, o->image);
	printf("  file data:             %10.1f MiB (%llu blocks)\n",
	       mib(file), (unsigned long long)t->file_blocks);
	printf("  stored data:           %10.1f MiB (%llu blocks)\n",
	       mib(stored), (unsigned long long)t->stored_blocks);
	printf("  saved:                 %10.1f MiB\n", mib(file - stored));
	printf("  image size:            %10.1f MiB (%u-byte blocks)\n",
	       mib(size), fs->blocksize);
	if (S_ISREG(st->st_mode))
		printf("  allocated on the host: %10.1f MiB\n",
		       mib((uint64_t)st->st_blocks * 512));
}

int summary_print(const struct mkfs_opts *o)
{
	struct tally t;
	ext2_filsys fs;
	struct stat st;
	errcode_t err;

	memset(&t, 0, sizeof(t));
	err = ext2fs_open2(o->image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err) {
		error_line("%s: %s while reading the summary", o->image,
			   error_message(err));
		return 1;
	}
	err = tally_files(fs, &t);
	if (!err && stat(o->image, &st) < 0)
		err = errno;
	if (!err)
		print(o, fs, &t, &st);
	else
		error_line("%s: %s while reading the summary", o->image,
			   error_message(err));
	ext2fs_close_free(&fs);
	return err ? 1 : 0;
}
