/*
 * fuzz_journal.c --- libFuzzer target: the journal module on a damaged
 * image's journal: open it (the superblock's checks, the inode's block
 * map), walk the log as logdump does, then replay it as a tool opening
 * the image would; with arg0 bit 0, commit one transaction afterwards
 * (a block and a revoke record chosen by arg1) and checkpoint it.
 * Seeds (fuzz/mkseeds.py, "journal") carry transactions written by
 * stock debugfs, so mutations land in descriptors, tags, revoke and
 * commit blocks.
 */
#include <stdlib.h>
#include <string.h>
#include "fz.h"
#include "journal/xr_journal.h"

static errcode_t count_rec(const struct extref_jrec *r, void *priv)
{
	++*(unsigned *)priv;
	(void)r;
	return 0;
}

static void walk(ext2_filsys fs)
{
	struct xr_journal *j;
	unsigned n = 0;

	if (xr_journal_open(fs, fs->io, &j))
		return;
	fz_report("walk", xr_journal_walk(j, count_rec, &n));
	(void)xr_journal_capacity(j, 3);
	xr_journal_close(j);
}

static void commit_one(ext2_filsys fs, const struct fz_image *img)
{
	struct xr_journal *j;
	struct xr_jblock b;
	blk64_t revoke;
	void *buf;

	if (xr_journal_open(fs, fs->io, &j))
		return;
	buf = calloc(1, fs->blocksize);
	b.blk = img->arg1 % ext2fs_blocks_count(fs->super);
	b.data = buf;
	revoke = (b.blk + 1) % ext2fs_blocks_count(fs->super);
	if (buf && !xr_journal_commit(j, &b, 1, &revoke, 1))
		fz_report("checkpoint", xr_journal_checkpoint_done(j));
	free(buf);
	xr_journal_close(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	ext2_filsys fs = fz_start_ext2(data, size, &img);
	unsigned nt;

	if (!fs)
		return 0;
	walk(fs);
	fz_report("recover", xr_journal_recover(fs, fs->io, 0, &nt));
	if (img.arg0 & 1)
		commit_one(fs, &img);
	ext2fs_free(fs);
	return 0;
}
