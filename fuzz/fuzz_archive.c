/*
 * fuzz_archive.c --- libFuzzer target: mkfs.extref -d ARCHIVE's reading
 * of the archive, the library's populate path (extref_populate_archive,
 * libfs/builder/populate_archive.c: tar, pax, cpio through libarchive,
 * plain or compressed), writing into a small empty image.
 *
 * The input is the archive (fz_archive.c).  The image is made once with
 * the stock mke2fs (1 KiB blocks, no journal, 8 MiB); whatever the
 * archive holds, the populate must return (an error or not) without a
 * crash, a leak or undefined behaviour, and the image must close.
 * Nothing is unpacked on the host.
 */
#include "fz.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_archive_run(data, size, "-N 512 -O ^has_journal", 0);
	return 0;
}
