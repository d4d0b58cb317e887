/*
 * fz_image.c --- the image of a fuzz input, in a memory file that the
 * library opens by path (/proc/self/fd/N) through libext2fs's unix I/O
 * manager, as it opens any image.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <et/com_err.h>
#include "fz.h"

static int mem_fd = -1;

void fz_init(void)
{
	static int done;
	int null;

	if (done)
		return;
	done = 1;
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	/* The shell prints every listing: keep libFuzzer's stderr only. */
	null = open("/dev/null", O_WRONLY);
	if (null >= 0) {
		dup2(null, STDOUT_FILENO);
		close(null);
	}
}

static int mem_file(struct fz_image *img)
{
	if (mem_fd < 0) {
		mem_fd = memfd_create("extref-fuzz", MFD_CLOEXEC);
		if (mem_fd < 0) {
			perror("memfd_create");
			abort();	/* the machine, not the input */
		}
	}
	snprintf(img->path, sizeof(img->path), "/proc/self/fd/%d", mem_fd);
	/* Emptied first: no block of the previous input survives. */
	if (ftruncate(mem_fd, 0) < 0) {
		perror("ftruncate");
		abort();
	}
	return mem_fd;
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

/* The tree's checksum seed, as FORMAT.md says, from the superblock. */
static uint32_t tree_seed(int fd)
{
	struct ext2_super_block sb;

	if (pread(fd, &sb, sizeof(sb), 1024) != (ssize_t)sizeof(sb))
		return 0;
	if (sb.s_feature_incompat & EXT4_FEATURE_INCOMPAT_CSUM_SEED)
		return sb.s_checksum_seed;
	return ext2fs_crc32c_le(~0U, sb.s_uuid, sizeof(sb.s_uuid));
}

/* Recompute the crc of a block of the tree's format, else leave it. */
static void fix_tree_csum(uint8_t *b, unsigned int bs, uint32_t seed)
{
	static const uint8_t zero[4];
	uint32_t magic = le32(b), crc;

	if (magic == EXTREF_HDR_MAGIC) {
		put_le32(b + EXTREF_HDR_CSUM_OFFSET,
			 ext2fs_crc32c_le(seed, b, EXTREF_HDR_CSUM_OFFSET));
	} else if (magic == EXTREF_NODE_MAGIC || magic == EXTREF_FREE_MAGIC) {
		crc = ext2fs_crc32c_le(seed, b, EXTREF_NODE_CSUM_OFFSET);
		crc = ext2fs_crc32c_le(crc, zero, sizeof(zero));
		crc = ext2fs_crc32c_le(crc, b + EXTREF_NODE_CSUM_OFFSET + 4,
				       bs - EXTREF_NODE_CSUM_OFFSET - 4);
		put_le32(b + EXTREF_NODE_CSUM_OFFSET, crc);
	}
}

/* The superblock's own crc, when metadata_csum asks for one. */
static void fix_super_csum(int fd)
{
	struct ext2_super_block sb;
	size_t off = offsetof(struct ext2_super_block, s_checksum);

	if (pread(fd, &sb, sizeof(sb), 1024) != (ssize_t)sizeof(sb))
		return;
	if (!(sb.s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_METADATA_CSUM))
		return;
	sb.s_checksum = ext2fs_crc32c_le(~0U, (unsigned char *)&sb, off);
	if (pwrite(fd, &sb, sizeof(sb), 1024) != (ssize_t)sizeof(sb))
		abort();
}

static int load_raw(const uint8_t *data, size_t size, struct fz_image *img)
{
	int fd = mem_file(img);

	if (pwrite(fd, data, size, 0) != (ssize_t)size) {
		perror("pwrite");
		abort();
	}
	img->bs = 1024;
	img->nblocks = size / 1024;
	img->arg16 = 0;
	img->arg0 = img->arg1 = 0;
	return 0;
}

static int load_sparse(const uint8_t *data, size_t size, struct fz_image *img)
{
	uint8_t *blk = NULL;
	size_t pos, n;
	uint32_t blkno, seed = 0;
	int fd, fix = data[0] & FZ_FIX_CSUMS, pass, ret;

	img->bs = 1024U << (data[1] % 3);
	img->arg16 = data[2] | data[3] << 8;
	img->nblocks = le32(data + 4);
	if (img->nblocks < 64)
		img->nblocks = 64;
	if (img->nblocks > FZ_MAX_BLOCKS)
		img->nblocks = FZ_MAX_BLOCKS;
	img->arg0 = le32(data + 8);
	img->arg1 = le32(data + 12);
	fd = mem_file(img);
	if (ftruncate(fd, (off_t)img->nblocks * img->bs) < 0) {
		perror("ftruncate");
		abort();
	}
	blk = malloc(img->bs);
	if (!blk)
		abort();
	/* Two passes when fixing: the seed comes from the superblock,
	 * which any record may hold. */
	for (pass = 0; pass < 1 + !!fix; pass++) {
		if (pass)
			seed = tree_seed(fd);
		for (pos = FZ_HDR_SIZE; pos + 4 < size; pos += 4 + n) {
			blkno = le32(data + pos);
			n = size - pos - 4 < img->bs ? size - pos - 4 : img->bs;
			if (blkno >= img->nblocks)
				continue;
			memset(blk, 0, img->bs);
			memcpy(blk, data + pos + 4, n);
			if (pass)
				fix_tree_csum(blk, img->bs, seed);
			if (pwrite(fd, blk, img->bs, (off_t)blkno * img->bs) !=
			    (ssize_t)img->bs) {
				perror("pwrite");
				abort();
			}
		}
	}
	if (fix)
		fix_super_csum(fd);
	ret = 0;
	free(blk);
	return ret;
}

int fz_image_load(const uint8_t *data, size_t size, struct fz_image *img)
{
	if (size >= 2048 && data[1080] == 0x53 && data[1081] == 0xef)
		return load_raw(data, size, img);
	if (size < FZ_HDR_SIZE)
		return -1;
	return load_sparse(data, size, img);
}

/*
 * The journal targets' start: the input made an image (fz_image_load),
 * opened read-write by libext2fs itself, below the library's open (which
 * would replay the journal first); NULL when the input is not used.
 */
ext2_filsys fz_start_ext2(const uint8_t *data, size_t size,
			  struct fz_image *img)
{
	ext2_filsys fs;

	fz_init();
	if (fz_image_load(data, size, img))
		return NULL;
	if (ext2fs_open2(img->path, NULL, EXT2_FLAG_RW | EXT2_FLAG_64BITS, 0,
			 0, unix_io_manager, &fs))
		return NULL;
	return fs;
}

int fz_image_copy(const char *path, struct fz_image *img)
{
	static uint8_t *copy;
	static size_t copy_len;
	int fd;

	if (!copy) {
		FILE *f = fopen(path, "rb");
		long len;

		if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 ||
		    fseek(f, 0, SEEK_SET))
			goto fail;
		copy = malloc(len);
		if (!copy || fread(copy, 1, len, f) != (size_t)len)
			goto fail;
		copy_len = len;
		fclose(f);
	}
	fd = mem_file(img);
	if (pwrite(fd, copy, copy_len, 0) != (ssize_t)copy_len)
		abort();
	img->bs = 1024;
	img->nblocks = copy_len / 1024;
	return 0;
fail:
	fprintf(stderr, "fuzz: cannot read the image %s: %s\n", path,
		strerror(errno));
	exit(2);
}

void fz_report(const char *what, errcode_t err)
{
	static int verbose = -1;

	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "fuzz: %s: %s\n", what,
			err ? error_message(err) : "ok");
}

int fz_seed_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if ((size_t)snprintf(buf, len, "%s/../seeds/%s", exe, name) >= len)
		return -1;
	return 0;
}
