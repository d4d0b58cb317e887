/*
 * fuzz_archive_acl.c --- libFuzzer target: the archive path's metadata,
 * mkfs.extref -d ARCHIVE on an image with 256-byte inodes and user,
 * group and project quota: the entries' extended attributes (pax
 * SCHILY.xattr and LIBARCHIVE.xattr records, in the inode or in a block
 * of their own), their POSIX ACLs (SCHILY.acl.access and .default, made
 * into system.posix_acl_* values), capabilities, and owners charged to
 * the quota files (recomputed, then written at close).  Seeds:
 * fuzz/mkseeds.py's archive_acl corpus.
 */
#include "fz.h"

/* As fuzz_archive.c: a huge read-ahead asked for by a header fails. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "max_allocation_size_mb=512:allocator_may_return_null=1";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_archive_run(data, size, "-N 512 -I 256 -O ^has_journal,quota,"
		       "project", 1);
	return 0;
}
