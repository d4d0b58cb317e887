/*
 * archive_dl.h --- libarchive, loaded when an archive is read.
 *
 * The tools and libextref.so do not link libarchive: it would map some
 * twenty libraries (libxml2, ICU, libstdc++, the compressors) into every
 * process at start, a few milliseconds each time, for the one path that
 * reads an archive.  archive_dl.c opens libarchive.so.13 at the first
 * archive and looks up the functions below; the sources that read an
 * archive include this header after <archive.h> and <archive_entry.h>
 * and call libarchive as usual, each name sent to its looked-up address.
 */
#ifndef ARCHIVE_DL_H
#define ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>
#include <ext2fs/ext2fs.h>

/* The soname looked for (libarchive's ABI 13, from 3.0 on). */
#define XR_ARCHIVE_SONAME "libarchive.so.13"

/* Every libarchive function the build uses, X(name) each. */
#define XR_ARCHIVE_FUNCS(X) \
	X(archive_read_new) X(archive_read_free) \
	X(archive_read_support_filter_all) \
	X(archive_read_support_format_tar) \
	X(archive_read_support_format_gnutar) \
	X(archive_read_support_format_cpio) \
	X(archive_read_open_fd) X(archive_read_next_header) \
	X(archive_read_data_block) X(archive_read_data_skip) \
	X(archive_error_string) \
	X(archive_entry_pathname) X(archive_entry_pathname_utf8) \
	X(archive_entry_hardlink) X(archive_entry_hardlink_utf8) \
	X(archive_entry_symlink) X(archive_entry_symlink_utf8) \
	X(archive_entry_filetype) X(archive_entry_perm) \
	X(archive_entry_uid) X(archive_entry_gid) \
	X(archive_entry_rdevmajor) X(archive_entry_rdevminor) \
	X(archive_entry_size) X(archive_entry_size_is_set) \
	X(archive_entry_mtime) X(archive_entry_mtime_nsec) \
	X(archive_entry_atime) X(archive_entry_atime_nsec) \
	X(archive_entry_atime_is_set) \
	X(archive_entry_ctime) X(archive_entry_ctime_nsec) \
	X(archive_entry_ctime_is_set) \
	X(archive_entry_birthtime) X(archive_entry_birthtime_nsec) \
	X(archive_entry_birthtime_is_set) \
	X(archive_entry_xattr_reset) X(archive_entry_xattr_next) \
	X(archive_entry_acl_reset) X(archive_entry_acl_next)

/* Their addresses, typed by the prototypes of <archive.h>. */
struct xr_archive_api {
#define XR_ARCHIVE_PTR(name) __typeof__(name) *name;
	XR_ARCHIVE_FUNCS(XR_ARCHIVE_PTR)
#undef XR_ARCHIVE_PTR
};
extern struct xr_archive_api xr_archive;

/*
 * Load libarchive (once; later calls return the first answer).  On
 * failure EXTREF_ERR_ARCHIVE_LIB and, when why is not NULL, the
 * loader's message in *why (static; do not free).
 */
errcode_t xr_archive_load(const char **why);

/*
 * populate_archive.c: did the archive end right after the data of e
 * (size bytes, all read), its padding and end records missing, as
 * umoci 0.4.7's layers end (libarchive: "Truncated input file")?
 */
int xr_archive_truncated_after(struct archive *a, struct archive_entry *e,
			       __u64 size);

/* Calls below this point go through the looked-up addresses (not in
 * archive_dl.c, which fills them in). */
#ifndef XR_ARCHIVE_LOADER
#define archive_read_new		(*xr_archive.archive_read_new)
#define archive_read_free		(*xr_archive.archive_read_free)
#define archive_read_support_filter_all \
	(*xr_archive.archive_read_support_filter_all)
#define archive_read_support_format_tar \
	(*xr_archive.archive_read_support_format_tar)
#define archive_read_support_format_gnutar \
	(*xr_archive.archive_read_support_format_gnutar)
#define archive_read_support_format_cpio \
	(*xr_archive.archive_read_support_format_cpio)
#define archive_read_open_fd		(*xr_archive.archive_read_open_fd)
#define archive_read_next_header	(*xr_archive.archive_read_next_header)
#define archive_read_data_block		(*xr_archive.archive_read_data_block)
#define archive_read_data_skip		(*xr_archive.archive_read_data_skip)
#define archive_error_string		(*xr_archive.archive_error_string)
#define archive_entry_pathname		(*xr_archive.archive_entry_pathname)
#define archive_entry_pathname_utf8 \
	(*xr_archive.archive_entry_pathname_utf8)
#define archive_entry_hardlink		(*xr_archive.archive_entry_hardlink)
#define archive_entry_hardlink_utf8 \
	(*xr_archive.archive_entry_hardlink_utf8)
#define archive_entry_symlink		(*xr_archive.archive_entry_symlink)
#define archive_entry_symlink_utf8 \
	(*xr_archive.archive_entry_symlink_utf8)
#define archive_entry_filetype		(*xr_archive.archive_entry_filetype)
#define archive_entry_perm		(*xr_archive.archive_entry_perm)
#define archive_entry_uid		(*xr_archive.archive_entry_uid)
#define archive_entry_gid		(*xr_archive.archive_entry_gid)
#define archive_entry_rdevmajor		(*xr_archive.archive_entry_rdevmajor)
#define archive_entry_rdevminor		(*xr_archive.archive_entry_rdevminor)
#define archive_entry_size		(*xr_archive.archive_entry_size)
#define archive_entry_size_is_set	(*xr_archive.archive_entry_size_is_set)
#define archive_entry_mtime		(*xr_archive.archive_entry_mtime)
#define archive_entry_mtime_nsec	(*xr_archive.archive_entry_mtime_nsec)
#define archive_entry_atime		(*xr_archive.archive_entry_atime)
#define archive_entry_atime_nsec	(*xr_archive.archive_entry_atime_nsec)
#define archive_entry_atime_is_set	(*xr_archive.archive_entry_atime_is_set)
#define archive_entry_ctime		(*xr_archive.archive_entry_ctime)
#define archive_entry_ctime_nsec	(*xr_archive.archive_entry_ctime_nsec)
#define archive_entry_ctime_is_set	(*xr_archive.archive_entry_ctime_is_set)
#define archive_entry_birthtime		(*xr_archive.archive_entry_birthtime)
#define archive_entry_birthtime_nsec \
	(*xr_archive.archive_entry_birthtime_nsec)
#define archive_entry_birthtime_is_set \
	(*xr_archive.archive_entry_birthtime_is_set)
#define archive_entry_xattr_reset	(*xr_archive.archive_entry_xattr_reset)
#define archive_entry_xattr_next	(*xr_archive.archive_entry_xattr_next)
#define archive_entry_acl_reset		(*xr_archive.archive_entry_acl_reset)
#define archive_entry_acl_next		(*xr_archive.archive_entry_acl_next)
#endif /* !XR_ARCHIVE_LOADER */

#endif /* ARCHIVE_DL_H */
