/*
 * update_prescan.c --- a layer's names and sizes checked before the
 * update changes anything.  An entry refused half-way through a layer
 * is rolled back, but the blocks the entries before it wrote (free
 * again, yet written) would leave the image changed; so a layer that
 * can be read twice (a regular file) is read once for its headers
 * first, with the rules every entry meets when it is applied
 * (xr_path_why, xr_pop_size_check).  A pipe is checked as it is read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "archive_dl.h"
#include "update_int.h"

static errcode_t one_header(struct xr_upd *up, struct archive_entry *e,
			    char *path)
{
	const char *name = archive_entry_pathname(e), *why;

	if (!name)
		return 0;		/* the apply pass reports it */
	while (*name == '/')
		name++;
	if (xr_pop_normalise(name, path, PATH_MAX)) {
		xr_pop_fail(&up->p, name, NULL);
		return EXTREF_ERR_ARCHIVE_PATH;
	}
	if ((why = xr_path_why(path, 1))) {
		xr_pop_fail(&up->p, path, why);
		return EXTREF_ERR_SOURCE_BAD_NAME;
	}
	if (archive_entry_filetype(e) == AE_IFREG &&
	    archive_entry_size_is_set(e) && archive_entry_size(e) > 0 &&
	    xr_pop_size_check(&up->p, (__u64)archive_entry_size(e))) {
		xr_pop_fail(&up->p, path, NULL);
		return EXTREF_ERR_FILE_TOO_BIG;
	}
	return 0;
}

static errcode_t scan(struct xr_upd *up, struct archive *a, int fd)
{
	struct archive_entry *e;
	char path[PATH_MAX];
	errcode_t err = 0;
	int ar;

	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK)
		return 0;
	while (!err && ((ar = archive_read_next_header(a, &e)) ==
			ARCHIVE_OK || ar == ARCHIVE_WARN))
		err = one_header(up, e, path);
	return err;		/* a damaged layer: the apply pass says so */
}

errcode_t xr_upd_layer_prescan(struct xr_upd *up, int fd)
{
	off_t at = lseek(fd, 0, SEEK_CUR);
	struct archive *a;
	struct stat st;
	errcode_t err;

	if (at < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (!(a = archive_read_new()))
		return EXT2_ET_NO_MEMORY;
	err = scan(up, a, fd);
	archive_read_free(a);
	if (lseek(fd, at, SEEK_SET) != at && !err)
		err = errno ? (errcode_t)errno : EXT2_ET_LLSEEK_FAILED;
	return err;
}
