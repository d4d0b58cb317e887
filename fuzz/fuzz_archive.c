/*
 * fuzz_archive.c --- libFuzzer target: mkfs.extref -d ARCHIVE's reading
 * of the archive, the library's populate path (extref_populate_archive,
 * libfs/build/populate_archive.c: tar, pax, cpio through libarchive,
 * plain or compressed), writing into a small empty image.
 *
 * The input is the archive, handed over in a memory file as mkfs hands
 * over the archive's descriptor.  The image is made once with the stock
 * mke2fs (1 KiB blocks, no journal, 8 MiB) and copied into the memory
 * file of fz_image_copy every run; whatever the archive holds, the
 * populate must return (an error or not) without a crash, a leak or
 * undefined behaviour, and the image must close.  Nothing is unpacked
 * on the host.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fz.h"
#include "extref_ops.h"

static char empty[64];		/* the template image */

/*
 * libarchive sizes its read-ahead from the header it reads (a cpio
 * name of 0xAAAAAAAA bytes asks for 2.7 GiB before finding the input
 * short): such a request fails here (NULL, which libarchive reports as
 * an error) rather than counting as libFuzzer's out-of-memory, which
 * would stop every run at the first such header.  Options given in
 * ASAN_OPTIONS still apply over this.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "max_allocation_size_mb=512:allocator_may_return_null=1";
}

static void remove_empty(void)
{
	unlink(empty);
}

static void init(void)
{
	char cmd[256];
	int fd;

	fz_init();
	if (empty[0])
		return;
	snprintf(empty, sizeof(empty), "/dev/shm/extref-fuzz-archive.XXXXXX");
	fd = mkstemp(empty);
	if (fd < 0) {
		snprintf(empty, sizeof(empty), "/tmp/extref-fuzz-archive.XXXXXX");
		fd = mkstemp(empty);
	}
	if (fd < 0)
		abort();
	close(fd);
	atexit(remove_empty);
	snprintf(cmd, sizeof(cmd), "mke2fs -q -F -t ext4 -b 1024 -N 512 "
		 "-O ^has_journal -E lazy_itable_init=1 %s 8M >/dev/null 2>&1",
		 empty);
	if (system(cmd))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct extref_populate p;
	struct fz_image img;
	extref_fs_t xfs;
	errcode_t err;
	int fd;

	init();
	fz_image_copy(empty, &img);
	fd = memfd_create("archive", MFD_CLOEXEC);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	err = extref_fs_open(img.path, EXTREF_OPEN_RW | EXTREF_OPEN_NO_TREE,
			     &xfs, NULL);
	if (err)
		abort();	/* the template, not the input */
	memset(&p, 0, sizeof(p));
	err = extref_populate_archive(xfs, fd, &p);
	fz_report("populate", err);
	if (!err)
		err = extref_fs_close(xfs);
	else
		extref_fs_abort(xfs);
	extref_populate_free(&p);
	close(fd);
	return 0;
}
