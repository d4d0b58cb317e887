/*
 * fuzz_replay.c --- libFuzzer target: the journal's replay on logs whose
 * checksums verify.  The input is an image (fz.h; seeds: "journal",
 * images whose journals hold transactions written by stock debugfs).
 * Before the replay, in a journal with checksum v3, every record of its
 * log from s_start (the journal superblock, descriptor tails, tag
 * checksums over the copies, revoke tails, commit blocks) gets the
 * checksum it should have (a logged copy of the superblock too, with
 * metadata_csum), so that a mutation of a block number, a tag
 * flag, an r_count or a logged superblock reaches the replay's own checks
 * instead of stopping at a checksum, as FZ_FIX_CSUMS does for tree
 * blocks.  arg0 bit 0: replay as a read-only view does
 * (XR_JRECOVER_SAME_LAYOUT).
 *
 * Oracle beyond the sanitizers: a replay that succeeds leaves an image
 * libext2fs opens (the image opened before it); a failed one leaves the
 * image byte for byte as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fz.h"
#include "journal/journal_int.h"

struct jfix {
	ext2_filsys	fs;
	ext2_ino_t	ino;
	unsigned	bs;
	__u32		incompat, seed, maxlen, first;
	unsigned char	*blk, *copy;
};

static errcode_t jio(struct jfix *f, __u32 jblk, void *buf, int write)
{
	blk64_t pblk = 0;
	errcode_t err;

	if (jblk >= f->maxlen)
		return EXT2_ET_INVALID_ARGUMENT;
	err = ext2fs_bmap2(f->fs, f->ino, NULL, NULL, 0, jblk, NULL, &pblk);
	if (!err && (!pblk || pblk >= ext2fs_blocks_count(f->fs->super)))
		err = EXT2_ET_BAD_BLOCK_NUM;
	if (err)
		return err;
	return write ? io_channel_write_blk64(f->fs->io, pblk, 1, buf)
		     : io_channel_read_blk64(f->fs->io, pblk, 1, buf);
}

static __u32 next(const struct jfix *f, __u32 jblk)
{
	return jblk + 1 >= f->maxlen ? f->first : jblk + 1;
}

/* A logged superblock's own checksum, so that its fields reach the
 * replay's validation. */
static void fix_super_copy(struct jfix *f, blk64_t fsblk)
{
	struct ext2_super_block *sb;

	if (fsblk != SUPERBLOCK_OFFSET / f->bs)
		return;
	sb = (struct ext2_super_block *)(f->copy + SUPERBLOCK_OFFSET % f->bs);
	if (sb->s_magic == EXT2_SUPER_MAGIC &&
	    ext2fs_has_feature_metadata_csum(sb))
		sb->s_checksum = ext2fs_cpu_to_le32(ext2fs_crc32c_le(~0U,
			(unsigned char *)sb,
			offsetof(struct ext2_super_block, s_checksum)));
}

/* A descriptor's tags get their copies' checksums, then its tail. */
static __u32 fix_desc(struct jfix *f, __u32 pos, __u32 tid)
{
	unsigned tb = xr_jtag_bytes(f->incompat);
	unsigned off = sizeof(struct jbd2_disk_header), flags = 0;
	__u32 desc = pos;

	while (off + tb <= f->bs - 4 && !(flags & JBD2_FLAG_LAST_TAG)) {
		unsigned char *t = f->blk + off;

		flags = xr_be32(t + 4) & 0xffff;
		pos = next(f, pos);
		if (jio(f, pos, f->copy, 0))
			break;
		fix_super_copy(f, xr_be32(t) | (blk64_t)xr_be32(t + 8) << 32);
		(void)jio(f, pos, f->copy, 1);
		xr_put_be32(t + 12, xr_jtag_csum(f->seed, tid, f->copy,
						 f->bs));
		off += tb + (flags & JBD2_FLAG_SAME_UUID ? 0 : JBD2_UUID_BYTES);
	}
	xr_put_be32(f->blk + f->bs - 4,
		    xr_jblock_csum(f->seed, f->blk, f->bs, f->bs - 4));
	(void)jio(f, desc, f->blk, 1);
	return next(f, pos);
}

static void fix_log(struct jfix *f, __u32 pos, __u32 tid)
{
	unsigned n;
	unsigned off = offsetof(struct jbd2_disk_commit, h_chksum);

	for (n = 0; n < f->maxlen && !jio(f, pos, f->blk, 0); n++) {
		if (xr_be32(f->blk) != JBD2_MAGIC || xr_be32(f->blk + 8) != tid)
			return;
		switch (xr_be32(f->blk + 4)) {
		case JBD2_DESCRIPTOR_BLOCK:
			pos = fix_desc(f, pos, tid);
			continue;
		case JBD2_REVOKE_BLOCK:
			xr_put_be32(f->blk + f->bs - 4, xr_jblock_csum(f->seed,
				    f->blk, f->bs, f->bs - 4));
			break;
		case JBD2_COMMIT_BLOCK:
			xr_put_be32(f->blk + off, xr_jblock_csum(f->seed,
				    f->blk, f->bs, off));
			tid++;
			break;
		default:
			return;
		}
		(void)jio(f, pos, f->blk, 1);
		pos = next(f, pos);
	}
}

/* A journal with checksum v3: its superblock's checksum, then the log's.
 * (Without checksums nothing stops a mutation; v2 is left as it is.) */
static void fix_journal(ext2_filsys fs)
{
	struct jfix f = { .fs = fs, .bs = fs->blocksize, .maxlen = 1 };
	unsigned char *raw;
	__u32 start, seq;

	f.ino = fs->super->s_journal_inum;
	if (!ext2fs_has_feature_journal(fs->super) || !f.ino)
		return;
	f.blk = calloc(2, f.bs);
	if (!f.blk || jio(&f, 0, f.blk, 0) || xr_be32(f.blk) != JBD2_MAGIC)
		goto out;
	f.copy = f.blk + f.bs;
	raw = f.blk;
	f.incompat = xr_be32(raw + 0x28);
	if (!(f.incompat & JBD2_FEATURE_INCOMPAT_CSUM_V3))
		goto out;
	xr_put_be32(raw + 0xfc, xr_jsb_csum(raw));
	f.maxlen = xr_be32(raw + 0x10);
	f.first = xr_be32(raw + 0x14);
	seq = xr_be32(raw + 0x18);
	start = xr_be32(raw + 0x1c);
	f.seed = ext2fs_crc32c_le(~0U, raw + 0x30, JBD2_UUID_BYTES);
	f.maxlen = f.maxlen > 1 ? f.maxlen : 1;
	if (jio(&f, 0, raw, 1))
		goto out;
	if (start && f.first && f.first < f.maxlen && start >= f.first &&
	    start < f.maxlen)
		fix_log(&f, start, seq);
	(void)io_channel_flush(fs->io);
out:
	free(f.blk);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;

	if (!fp)
		return NULL;
	if (!fseek(fp, 0, SEEK_END) && (n = ftell(fp)) > 0 &&
	    !fseek(fp, 0, SEEK_SET) && (buf = malloc(n)) &&
	    fread(buf, 1, n, fp) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	*len = buf ? (size_t)n : 0;
	fclose(fp);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_image img;
	unsigned char *before, *after;
	size_t nb, na;
	ext2_filsys fs = fz_start_ext2(data, size, &img);
	errcode_t err;
	unsigned nt;

	if (!fs)
		return 0;
	fix_journal(fs);
	before = slurp(img.path, &nb);
	err = xr_journal_recover(fs, fs->io, img.arg0 & 1 ?
				 XR_JRECOVER_SAME_LAYOUT : 0, &nt);
	fz_report("recover", err);
	ext2fs_free(fs);
	if (!err && nt) {
		err = ext2fs_open2(img.path, NULL, EXT2_FLAG_64BITS, 0, 0,
				   unix_io_manager, &fs);
		if (err) {
			fprintf(stderr, "replayed image does not open: %s\n",
				error_message(err));
			abort();
		}
		ext2fs_free(fs);
	} else if (err && before) {
		after = slurp(img.path, &na);
		if (after && (na != nb || memcmp(before, after, nb))) {
			fprintf(stderr, "a failed replay wrote: %s\n",
				error_message(err));
			abort();
		}
		free(after);
	}
	free(before);
	return 0;
}
