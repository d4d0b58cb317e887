/*
 * usage.c --- extref_image_usage: what an image holds, read from it.
 *
 * Read from the finished image, not from the steps that made it, so it
 * says what is there however it got there: the data blocks the regular
 * files map (holes and inline data not counted; a block counted once per
 * file), the distinct blocks among them (a shared block once), and the
 * filesystem's blocks.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "build_int.h"

struct tally {
	ext2fs_block_bitmap	seen;
	__u64			file_blocks;	/* mapped, per file */
	__u64			stored_blocks;	/* distinct */
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

errcode_t extref_image_usage(const char *image, struct extref_image_usage *u)
{
	struct tally t;
	struct stat st;
	ext2_filsys fs;
	errcode_t err;

	memset(&t, 0, sizeof(t));
	memset(u, 0, sizeof(*u));
	err = ext2fs_open2(image, NULL, EXT2_FLAG_64BITS, 0, 0,
			   unix_io_manager, &fs);
	if (err)
		return err;
	err = tally_files(fs, &t);
	if (!err && stat(image, &st) < 0)
		err = errno;
	if (!err) {
		u->host_bytes = S_ISREG(st.st_mode) ?
				(long long)st.st_blocks * 512 : -1;
		u->file_blocks = t.file_blocks;
		u->stored_blocks = t.stored_blocks;
		u->blocks = ext2fs_blocks_count(fs->super);
		u->blocksize = fs->blocksize;
	}
	ext2fs_close_free(&fs);
	return err;
}
