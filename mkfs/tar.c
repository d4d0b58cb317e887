/*
 * tar.c --- mkfs.extref -d ARCHIVE: a tar archive (plain or compressed,
 * any format libarchive reads) is unpacked into a private directory with
 * everything it records (owners, modes, times, extended attributes, ACLs,
 * devices, hard links), which then is the source; the directory goes at
 * exit.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include <archive.h>
#include <archive_entry.h>

#include "mkfs.h"

static char unpack_dir[4096];

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	remove(path);
	return 0;
}

static void remove_unpacked(void)
{
	if (unpack_dir[0])
		nftw(unpack_dir, remove_entry, 64, FTW_DEPTH | FTW_PHYS);
}

static int copy_data(struct archive *in, struct archive *out)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	int r;

	while ((r = archive_read_data_block(in, &buf, &size, &off)) ==
	       ARCHIVE_OK)
		if (archive_write_data_block(out, buf, size, off) != ARCHIVE_OK)
			return ARCHIVE_FATAL;
	return r == ARCHIVE_EOF ? ARCHIVE_OK : r;
}

/*
 * Unpack the archive o->source and make the unpacked directory the
 * source.  One clear line naming the archive on any error.
 */
void tar_unpack(struct mkfs_opts *o)
{
	const char *tmp = getenv("TMPDIR");
	struct archive *in = archive_read_new(), *out = archive_write_disk_new();
	struct archive_entry *e;
	int r = ARCHIVE_OK, cwd;

	snprintf(unpack_dir, sizeof(unpack_dir), "%s/mkfs.extref.XXXXXX",
		 tmp && *tmp ? tmp : "/var/tmp");
	if (!in || !out || !mkdtemp(unpack_dir))
		fatal("%s: cannot make a directory to unpack into: %s",
		      o->source, strerror(errno));
	atexit(remove_unpacked);
	archive_read_support_filter_all(in);
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME |
		ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER |
		ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_ACL |
		ARCHIVE_EXTRACT_SPARSE | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
		ARCHIVE_EXTRACT_SECURE_SYMLINKS |
		ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	archive_write_disk_set_standard_lookup(out);
	if (archive_read_open_filename(in, o->source, 65536) != ARCHIVE_OK)
		fatal("%s: %s", o->source, archive_error_string(in));
	/* Entries unpack relative to the directory, checked by libarchive
	 * for ".." and absolute paths. */
	cwd = open(".", O_RDONLY | O_DIRECTORY);
	if (cwd < 0 || chdir(unpack_dir) < 0)
		fatal("%s: cannot enter %s: %s", o->source, unpack_dir,
		      strerror(errno));
	while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		r = archive_write_header(out, e);
		if (r == ARCHIVE_OK && archive_entry_size(e) > 0)
			r = copy_data(in, out);
		if (r == ARCHIVE_OK)
			r = archive_write_finish_entry(out);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			fatal("%s: %s: %s", o->source,
			      archive_entry_pathname(e),
			      archive_error_string(out) ?
			      archive_error_string(out) :
			      archive_error_string(in));
	}
	if (r != ARCHIVE_EOF)
		fatal("%s: %s", o->source, archive_error_string(in));
	/* Directory times and modes are set at close, relative paths: still
	 * inside the unpack directory. */
	if (archive_write_close(out) != ARCHIVE_OK)
		fatal("%s: %s", o->source, archive_error_string(out));
	if (fchdir(cwd) < 0)
		fatal("cannot return to the working directory: %s",
		      strerror(errno));
	close(cwd);
	archive_read_free(in);
	archive_write_free(out);
	o->archive = o->source;
	o->source = unpack_dir;
}
