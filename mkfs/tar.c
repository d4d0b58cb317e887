/*
 * tar.c --- mkfs.extref -d ARCHIVE: a tar archive (plain or compressed,
 * any format libarchive reads; a regular file or a pipe) becomes the
 * source without the host ever holding what the archive controls.
 *
 * Entries are unpacked as the user running mkfs.extref, root or not,
 * under TMPDIR/mkfs.extref.XXXXXX/root: the outer directory is made by
 * mkdtemp (mode 0700) and nothing in the archive names it.  On the host
 * every directory is 0700, every file 0600; nothing is chowned; device
 * nodes, FIFOs and sockets are empty regular files; no extended
 * attribute or ACL is set.  What the archive says of each entry (type,
 * mode with setuid, setgid and sticky bits, numeric owner, device
 * number, times with nanoseconds, extended attributes, POSIX ACLs) is
 * kept in memory (tar_meta.c), and after mke2fs -d has copied the
 * placeholders it goes into the image's inodes (tar_apply.c, from the
 * walk in source.c).  Names are taken as the archive stores them: pax
 * UTF-8 names are read under a UTF-8 character type whatever the user's
 * locale, other names byte for byte.  The directory goes at exit or on
 * a signal (cleanup.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "mkfs.h"

static char unpack_dir[PATH_MAX];	/* 0700, ours alone */
static char root_dir[PATH_MAX];		/* unpack_dir/root: the source */

/* Make unpack_dir and root_dir, unpack_dir registered for removal. */
static void make_dirs(const char *archive)
{
	const char *tmp = getenv("TMPDIR");
	char cwd[PATH_MAX] = "";
	sigset_t old;
	char *made;
	int e;

	if (!tmp || !*tmp)
		tmp = "/var/tmp";
	/* absolute, so cleanup finds it from any working directory */
	if (tmp[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		fatal("%s: cannot find the working directory: %s", archive,
		      strerror(errno));
	if (snprintf(unpack_dir, sizeof(unpack_dir), "%s%s%s/mkfs.extref.XXXXXX",
		     cwd, *cwd ? "/" : "", tmp) >= (int)sizeof(unpack_dir) - 8)
		fatal("%s: TMPDIR is too long", archive);
	cleanup_block(&old);
	made = mkdtemp(unpack_dir);
	e = errno;
	if (made && cleanup_add_tree(unpack_dir)) {
		rmdir(unpack_dir);
		made = NULL;
		e = ENAMETOOLONG;
	}
	cleanup_unblock(&old);
	if (!made)
		fatal("%s: cannot make a directory to unpack into: %s",
		      archive, strerror(e));
	if (snprintf(root_dir, sizeof(root_dir), "%s/root", unpack_dir) >=
	    (int)sizeof(root_dir) || mkdir(root_dir, 0700) < 0)
		fatal("%s: cannot make %s: %s", archive, root_dir,
		      strerror(errno));
}

/*
 * Normalise an archive path into out: components joined by one "/",
 * no "." component, no leading or trailing "/" ("" for the root).
 * -1 for an absolute path, a ".." component or one too long.
 */
static int normalise(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (in[0] == '/')
		return -1;
	while (*in) {
		size_t n = strcspn(in, "/");

		if (n == 2 && in[0] == '.' && in[1] == '.')
			return -1;
		if (n && !(n == 1 && in[0] == '.')) {
			if (o + !!o + n + 1 > len)
				return -1;
			if (o)
				out[o++] = '/';
			memcpy(out + o, in, n);
			o += n;
		}
		in += n;
		while (*in == '/')
			in++;
	}
	out[o] = 0;
	return 0;
}

/* The entry's name as the archive stores it, or NULL. */
static const char *entry_name(struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e);

	return name ? name : archive_entry_pathname_utf8(e);
}

static const char *entry_link(struct archive_entry *e)
{
	const char *name = archive_entry_hardlink(e);

	return name ? name : archive_entry_hardlink_utf8(e);
}

/* Linux's tags (linux/posix_acl.h) of libarchive's POSIX.1e ones. */
static int acl_tag(int tag)
{
	switch (tag) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ:	return 0x01;
	case ARCHIVE_ENTRY_ACL_USER:		return 0x02;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ:	return 0x04;
	case ARCHIVE_ENTRY_ACL_GROUP:		return 0x08;
	case ARCHIVE_ENTRY_ACL_MASK:		return 0x10;
	case ARCHIVE_ENTRY_ACL_OTHER:		return 0x20;
	}
	return 0;
}

struct acl_ent {
	uint16_t	tag, perm;
	uint32_t	id;
};

static int acl_cmp(const void *a, const void *b)
{
	const struct acl_ent *x = a, *y = b;

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void put_le(unsigned char *p, uint32_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/*
 * The entry's POSIX ACL of type as the xattr Linux reads
 * (system.posix_acl_access or _default: version 2, entries sorted by
 * tag and id); libext2fs stores it in ext4's form.  0 or ENOMEM.
 */
static int add_acl(struct tar_meta *m, struct archive_entry *e, int type,
		   const char *xname)
{
	int n = archive_entry_acl_reset(e, type), t, perm, tag, id, k = 0;
	struct acl_ent *v;
	unsigned char *buf;
	const char *name;
	int rc = ENOMEM;

	if (n <= 0)
		return 0;
	v = calloc((size_t)n, sizeof(*v));
	buf = malloc(4 + 8 * (size_t)n);
	if (!v || !buf)
		goto cleanup;
	while (k < n && archive_entry_acl_next(e, type, &t, &perm, &tag, &id,
					       &name) == ARCHIVE_OK) {
		if (!acl_tag(tag))
			continue;
		v[k].tag = (uint16_t)acl_tag(tag);
		v[k].perm = (uint16_t)(perm & 7);
		v[k].id = (tag == ARCHIVE_ENTRY_ACL_USER ||
			   tag == ARCHIVE_ENTRY_ACL_GROUP) ? (uint32_t)id :
			  0xffffffffU;
		k++;
	}
	qsort(v, (size_t)k, sizeof(*v), acl_cmp);
	put_le(buf, 2, 4);
	for (int i = 0; i < k; i++) {
		put_le(buf + 4 + 8 * i, v[i].tag, 2);
		put_le(buf + 6 + 8 * i, v[i].perm, 2);
		put_le(buf + 8 + 8 * i, v[i].id, 4);
	}
	rc = k ? tar_meta_add_xattr(m, xname, buf, 4 + 8 * (size_t)k) : 0;
cleanup:
	free(v);
	free(buf);
	return rc;
}

/* The xattrs and POSIX ACLs of e into m; 0 or ENOMEM. */
static int add_xattrs(struct tar_meta *m, struct archive_entry *e)
{
	const char *name;
	const void *value;
	size_t len;
	int rc = 0;

	archive_entry_xattr_reset(e);
	while (!rc && archive_entry_xattr_next(e, &name, &value, &len) ==
	       ARCHIVE_OK)
		rc = tar_meta_add_xattr(m, name, value, len);
	if (!rc)
		rc = add_acl(m, e, ARCHIVE_ENTRY_ACL_TYPE_ACCESS,
			     "system.posix_acl_access");
	if (!rc)
		rc = add_acl(m, e, ARCHIVE_ENTRY_ACL_TYPE_DEFAULT,
			     "system.posix_acl_default");
	return rc;
}

static struct timespec entry_time(time_t s, long ns)
{
	struct timespec ts = { .tv_sec = s, .tv_nsec = ns };

	return ts;
}

/* What the archive says of entry e (not a hard link). */
static struct tar_meta *meta_of(struct archive_entry *e, const char *archive,
				const char *name)
{
	struct tar_meta *m = calloc(1, sizeof(*m));
	mode_t type = archive_entry_filetype(e);
	la_int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);

	if (!m)
		fatal("out of memory");
	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK &&
	    type != AE_IFCHR && type != AE_IFBLK && type != AE_IFIFO &&
	    type != AE_IFSOCK)
		fatal("%s: %s: unsupported file type (mode %o)", archive, name,
		      (unsigned int)archive_entry_mode(e));
	if (uid < 0 || uid > UINT32_MAX || gid < 0 || gid > UINT32_MAX)
		fatal("%s: %s: owner %lld:%lld out of range", archive, name,
		      (long long)uid, (long long)gid);
	m->mode = type | (archive_entry_perm(e) & 07777);
	m->uid = (uint32_t)uid;
	m->gid = (uint32_t)gid;
	if (type == AE_IFCHR || type == AE_IFBLK) {
		unsigned long long maj = archive_entry_rdevmajor(e);
		unsigned long long min = archive_entry_rdevminor(e);

		/* what the kernel can encode: 12 bits and 20 bits */
		if (maj >= 1U << 12 || min >= 1U << 20)
			fatal("%s: %s: device number %llu,%llu out of range",
			      archive, name, maj, min);
		m->major = (uint32_t)maj;
		m->minor = (uint32_t)min;
	}
	m->mtime = entry_time(archive_entry_mtime(e),
			      archive_entry_mtime_nsec(e));
	m->atime = archive_entry_atime_is_set(e) ?
		entry_time(archive_entry_atime(e), archive_entry_atime_nsec(e)) :
		m->mtime;
	m->ctime = archive_entry_ctime_is_set(e) ?
		entry_time(archive_entry_ctime(e), archive_entry_ctime_nsec(e)) :
		m->mtime;
	if (add_xattrs(m, e))
		fatal("out of memory");
	return m;
}

/*
 * Turn e into what the host gets: path under the current directory,
 * owner-only mode, a placeholder for a special file, no owner, xattrs,
 * ACLs or flags.
 */
static void host_entry(struct archive_entry *e, const char *path,
		       const char *link)
{
	char buf[PATH_MAX + 2];
	mode_t type = archive_entry_filetype(e);

	snprintf(buf, sizeof(buf), "./%s", path);
	archive_entry_copy_pathname(e, buf);
	if (link) {
		snprintf(buf, sizeof(buf), "./%s", link);
		archive_entry_copy_hardlink(e, buf);
	}
	archive_entry_xattr_clear(e);
	archive_entry_acl_clear(e);
	archive_entry_set_fflags(e, 0, 0);
	archive_entry_copy_mac_metadata(e, NULL, 0);
	if (type == AE_IFDIR) {
		archive_entry_set_perm(e, 0700);
	} else if (type != AE_IFLNK) {
		if (type != AE_IFREG && !link) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, 0);
			archive_entry_set_rdev(e, 0);
		}
		archive_entry_set_perm(e, 0600);
	}
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

/* Record and unpack one entry; exits with one line on error. */
static void unpack_entry(struct archive *in, struct archive *out,
			 struct archive_entry *e, const char *archive)
{
	const char *name = entry_name(e), *link = entry_link(e);
	char path[PATH_MAX], target[PATH_MAX];
	struct tar_meta *m;
	int r;

	if (!name)
		fatal("%s: %s", archive, archive_error_string(in));
	if (normalise(name, path, sizeof(path)))
		fatal("%s: %s: path leaves the archive's root (absolute, "
		      "\"..\" or too long)", archive, name);
	if (link) {
		/* a hard link: to an earlier file of the archive only */
		if (normalise(link, target, sizeof(target)) ||
		    !(m = tar_meta_get(target)) || S_ISDIR(m->mode) || !*path)
			fatal("%s: %s: hard link to %s, which is not an "
			      "earlier file of the archive", archive, name,
			      link);
	} else {
		m = meta_of(e, archive, name);
		if (!*path && !S_ISDIR(m->mode))
			fatal("%s: %s: the archive's root is not a directory",
			      archive, name);
	}
	host_entry(e, path, link ? target : NULL);
	r = archive_write_header(out, e);
	if ((r == ARCHIVE_OK || r == ARCHIVE_WARN) &&
	    archive_entry_size(e) > 0)
		r = copy_data(in, out);
	if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
		r = archive_write_finish_entry(out);
	/* name pointed into e, which host_entry rewrote: path names it */
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		fatal("%s: %s: %s", archive, *path ? path : ".",
		      archive_error_string(out) ? archive_error_string(out) :
		      archive_error_string(in));
	if (tar_meta_put(path, m))
		fatal("out of memory");
}

/* The reader, with names read under a UTF-8 character type. */
static struct archive *open_archive(const char *archive)
{
	struct archive *in = archive_read_new();

	if (!in)
		fatal("out of memory");
	archive_read_support_filter_all(in);
	archive_read_support_format_tar(in);
	archive_read_support_format_gnutar(in);
	if (archive_read_open_filename(in, archive, 65536) != ARCHIVE_OK) {
		char why[256];

		/* freed before exiting: nothing is left to a leak check */
		snprintf(why, sizeof(why), "%s", archive_error_string(in));
		archive_read_free(in);
		fatal("%s: %s", archive, why);
	}
	return in;
}

static struct archive *open_disk(void)
{
	struct archive *out = archive_write_disk_new();

	if (!out)
		fatal("out of memory");
	/* no PERM, OWNER, XATTR, ACL, FFLAGS or TIME: none of it reaches
	 * the host */
	archive_write_disk_set_options(out, ARCHIVE_EXTRACT_SPARSE |
		ARCHIVE_EXTRACT_SECURE_NODOTDOT |
		ARCHIVE_EXTRACT_SECURE_SYMLINKS |
		ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
	return out;
}

static void unpack_all(struct archive *in, struct archive *out,
		       const char *archive)
{
	struct archive_entry *e;
	int r;

	while ((r = archive_read_next_header(in, &e)) == ARCHIVE_OK ||
	       r == ARCHIVE_WARN)
		unpack_entry(in, out, e, archive);
	if (r != ARCHIVE_EOF)
		fatal("%s: %s", archive, archive_error_string(in));
	if (archive_write_close(out) != ARCHIVE_OK)
		fatal("%s: %s", archive, archive_error_string(out));
}

/*
 * A UTF-8 character type for libarchive's name conversions, made once and
 * kept for the process (an unpacking ended by fatal() never frees it).
 */
static locale_t utf8_locale(void)
{
	static const char *const names[] = { "C.UTF-8", "C.utf8",
					     "en_US.UTF-8" };
	static locale_t l = (locale_t)0;

	for (size_t i = 0; !l && i < sizeof(names) / sizeof(names[0]); i++)
		l = newlocale(LC_CTYPE_MASK, names[i], (locale_t)0);
	return l;
}

void tar_unpack(struct mkfs_opts *o)
{
	locale_t utf8 = utf8_locale(), prev = (locale_t)0;
	struct archive *in, *out;
	mode_t mask;
	int cwd;

	make_dirs(o->source);
	if (utf8)
		prev = uselocale(utf8);
	mask = umask(077);		/* read by archive_write_disk_new */
	in = open_archive(o->source);
	out = open_disk();
	/* entries unpack relative to the root directory */
	cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || chdir(root_dir) < 0)
		fatal("%s: cannot enter %s: %s", o->source, root_dir,
		      strerror(errno));
	unpack_all(in, out, o->source);
	if (fchdir(cwd) < 0)
		fatal("cannot return to the working directory: %s",
		      strerror(errno));
	close(cwd);
	archive_read_free(in);
	archive_write_free(out);
	umask(mask);
	if (utf8)
		uselocale(prev);
	o->archive = o->source;
	o->source = root_dir;
}
