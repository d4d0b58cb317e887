/*
 * fz.h --- what the libFuzzer targets in fuzz/ share: the image an input
 * describes, written to a memory file, and the library's start-up.
 *
 * An image input is either a whole image (raw: ext4's magic at byte
 * 1080), or a sparse image, little endian:
 *
 *   u8  flags     FZ_FIX_CSUMS: recompute the checksums of the blocks
 *                 that start with a tree magic (header, node, free
 *                 node), so that damage inside them gets past the crc;
 *   u8  log_bs    block size 1024 << (log_bs % 3);
 *   u16 arg16     \
 *   u32 nblocks    | image size in blocks, clamped to 64 .. FZ_MAX_BLOCKS
 *   u32 arg0       | arguments of the operation a target runs
 *   u32 arg1      /  (which file, offsets, lengths)
 *   then records: u32 block number, then one block of bytes (a short
 *   last record is padded with zeros; numbers past the end are skipped).
 *
 * Blocks not in a record are zero.  A small image (fuzz/mkseeds.py makes
 * them: 1 KiB blocks, no journal, mostly without metadata_csum so that
 * libext2fs does not stop every damaged inode or descriptor at its
 * checksum) has a few dozen non-zero blocks, so nearly every mutation
 * libFuzzer makes lands in metadata: a far better yield than mutating a
 * whole image of mostly zeros, and an input still stands alone (a crash
 * reproduces from its file, nothing else).
 */
#ifndef FZ_H
#define FZ_H

#include <stddef.h>
#include <stdint.h>
#include "extref.h"

#define FZ_FIX_CSUMS	0x01
#define FZ_HDR_SIZE	16
#define FZ_MAX_BLOCKS	16384

struct fz_image {
	char		path[64];	/* /proc/self/fd/N of the memory file */
	unsigned int	bs;
	uint32_t	nblocks;
	uint16_t	arg16;
	uint32_t	arg0, arg1;
};

/* Error tables, stdout to /dev/null (the targets print much): once. */
void fz_init(void);
/*
 * Write the image the input describes into the memory file (the same
 * file, emptied, every call).  Returns 0, or -1 when the input is too
 * short to describe one.
 */
int fz_image_load(const uint8_t *data, size_t size, struct fz_image *img);
/*
 * fz_init and fz_image_load, then the image opened read-write by
 * libext2fs (not the library: the journal targets replay it themselves);
 * NULL when the input is not used.
 */
ext2_filsys fz_start_ext2(const uint8_t *data, size_t size,
			  struct fz_image *img);
/* Copy the file at path into the memory file (the shell's fixed image). */
int fz_image_copy(const char *path, struct fz_image *img);
/* With FUZZ_VERBOSE set, "fuzz: what: error" on stderr (seeds' checks). */
void fz_report(const char *what, errcode_t err);
/* A file beside the target's executable: ../seeds/NAME. */
int fz_seed_path(const char *name, char *buf, size_t len);

/* ----- fz_archive.c: the archive targets ----- */

/*
 * Populate a fresh copy of an empty image (made once by mke2fs with
 * mke2fs_opts added) from the archive data holds; with recompute_quota,
 * recompute the quota usage after it (as mkfs.extref -d does); close.
 */
void fz_archive_run(const uint8_t *data, size_t size,
		    const char *mke2fs_opts, int recompute_quota);

/* ----- fz_ops.c: the modifying targets ----- */

/* The files and directories fuzz/mkseeds.py puts in its images. */
extern const char *const fz_files[];
extern const unsigned int fz_nfiles;
extern const char *const fz_dirs[];
extern const unsigned int fz_ndirs;

/* fz_init, fz_image_load and fz_open_rw in one; NULL: input not used. */
extref_fs_t fz_start(const uint8_t *data, size_t size, struct fz_image *img);
/* A file, or a directory other than the root, chosen by sel. */
const char *fz_pick_path(unsigned int sel, int *is_dir);
/* Open read-write with the tree (fz_ops.c says how); NULL if not. */
extref_fs_t fz_open_rw(const char *path);
/* Inode of an absolute path, 0 when it does not resolve. */
ext2_ino_t fz_lookup(extref_fs_t xfs, const char *path);

#endif /* FZ_H */
