/*
 * populate_archive.c --- an archive into the image, entry by entry,
 * through libarchive (tar in every flavour, pax, cpio; any compression
 * it knows; a file or a pipe, read once, front to back).  Nothing is
 * unpacked on the host and nothing needs root: each entry becomes its
 * inode directly, with the type, mode (setuid, setgid, sticky), numeric
 * owner, device number, times with nanoseconds, extended attributes and
 * POSIX ACLs the archive records (populate_acl.c: ids kept, the mode
 * the access ACL gives).  Names are taken as the archive
 * stores them: pax UTF-8 names are read under a UTF-8 character type
 * whatever the caller's locale, other names byte for byte.
 *
 * Paths are normalised (no "." component, no "//", no trailing "/"; ""
 * is the root) and refused when absolute or with a ".." component: an
 * entry can only land inside the image, under the directory the earlier
 * entries made there (a symlink is never followed).  Directories the
 * archive implies without listing them are 0755 and root's, as is the
 * root when the archive has no "./"; a directory listed again takes the
 * later metadata; a non-directory met again is replaced by the later
 * entry (populate_replace.c), as unpacking would replace it; a directory
 * is never replaced by a non-directory.  A hard link names an earlier
 * non-directory of the archive (not itself); one that carries data
 * (cpio's last link) gives it to the inode.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <locale.h>
#include <string.h>
#include "archive_dl.h"
#include "populate_layers.h"

/*
 * Normalise an archive path into out: components joined by one "/",
 * no "." component, no leading or trailing "/" ("" for the root).
 * -1 for an absolute path, a ".." component or one too long.
 */
int xr_pop_normalise(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (in[0] == '/')
		return -1;
	while (*in) {
		size_t n = strcspn(in, "/");

		if (n == 2 && in[0] == '.' && in[1] == '.')
			return -1;
		if (n > NAME_MAX)
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

static const char *entry_symlink(struct archive_entry *e)
{
	const char *name = archive_entry_symlink(e);

	return name ? name : archive_entry_symlink_utf8(e);
}

static struct timespec ts(time_t s, long ns)
{
	struct timespec t = { .tv_sec = s, .tv_nsec = ns };

	return t;
}

/* A directory nobody describes: 0755, root's, made now. */
static void implied_dir(const struct xr_pop *p, struct xr_pop_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->mode = LINUX_S_IFDIR | 0755;
	m->atime = m->mtime = m->ctime = ts(xr_now(p->fs), 0);
}

/* What the archive says of entry e (not a hard link). */
errcode_t xr_pop_archive_meta(struct archive_entry *e, struct xr_pop_meta *m)
{
	mode_t type = archive_entry_filetype(e);
	la_int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);

	memset(m, 0, sizeof(*m));
	if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK &&
	    type != AE_IFCHR && type != AE_IFBLK && type != AE_IFIFO &&
	    type != AE_IFSOCK)
		return EXTREF_ERR_ARCHIVE_TYPE;
	/* -1 is chown's "no owner", not one ext4 can hold */
	if (uid < 0 || uid >= UINT32_MAX || gid < 0 || gid >= UINT32_MAX)
		return EXTREF_ERR_ARCHIVE_RANGE;
	m->mode = (__u16)(type | (archive_entry_perm(e) & 07777));
	m->uid = (__u32)uid;
	m->gid = (__u32)gid;
	if (type == AE_IFCHR || type == AE_IFBLK) {
		unsigned long long maj = archive_entry_rdevmajor(e);
		unsigned long long min = archive_entry_rdevminor(e);

		/* what the kernel can encode: 12 bits and 20 bits */
		if (maj >= 1U << 12 || min >= 1U << 20)
			return EXTREF_ERR_ARCHIVE_RANGE;
		m->major = (__u32)maj;
		m->minor = (__u32)min;
	}
	m->mtime = ts(archive_entry_mtime(e), archive_entry_mtime_nsec(e));
	m->atime = archive_entry_atime_is_set(e) ?
		ts(archive_entry_atime(e), archive_entry_atime_nsec(e)) :
		m->mtime;
	m->ctime = archive_entry_ctime_is_set(e) ?
		ts(archive_entry_ctime(e), archive_entry_ctime_nsec(e)) :
		m->mtime;
	m->has_crtime = archive_entry_birthtime_is_set(e);
	if (m->has_crtime)
		m->crtime = ts(archive_entry_birthtime(e),
			       archive_entry_birthtime_nsec(e));
	return 0;
}

/*
 * The extended attributes and ACLs of e into r->xa; m's mode from the
 * ACL.  A default ACL is kept on a directory only, as libarchive's own
 * extraction and GNU tar do (the kernel refuses one on anything else).
 */
static errcode_t read_xattrs(struct rd *r, struct archive_entry *e,
			     struct xr_pop_meta *m)
{
	const char *name;
	const void *value;
	char why[160];
	size_t len;
	errcode_t err = 0;
	int dir = archive_entry_filetype(e) == AE_IFDIR;

	xr_pop_xattrs_reset(&r->xa);
	archive_entry_xattr_reset(e);
	while (!err && archive_entry_xattr_next(e, &name, &value, &len) ==
	       ARCHIVE_OK)
		if (dir || strcmp(name, "system.posix_acl_default"))
			err = xr_pop_xattrs_add(&r->xa, name, value, len);
	if (!err)
		err = xr_pop_archive_acls(e, &r->xa, r->acl, dir, &m->mode,
					  why, sizeof(why));
	if (err == EXTREF_ERR_ARCHIVE_ACL)
		xr_pop_fail(r->p, r->path, why);
	return err;
}

/*
 * Does the archive end right after the data of e (size bytes, all read),
 * without the padding to a 512-byte record and the two empty records
 * that end a tar?  umoci 0.4.7's layers do (Go's archive/tar and umoci
 * unpack read them); libarchive calls the missing padding a truncated
 * input.  Taken as the end of an OCI layer only (its digest verified).
 */
static int truncated_input(struct archive *a)
{
	const char *why = archive_error_string(a);

	return why && !strncmp(why, "Truncated input file", 20);
}

int xr_archive_truncated_after(struct archive *a, struct archive_entry *e,
			       __u64 size)
{
	return truncated_input(a) && archive_entry_size_is_set(e) &&
	       (__u64)archive_entry_size(e) == size;
}

static int trailer_missing(struct rd *r, struct archive_entry *e,
			   __u64 size)
{
	return r->oci && xr_archive_truncated_after(r->a, e, size);
}

static errcode_t archive_err(struct rd *r)
{
	xr_pop_fail(r->p, r->path, archive_error_string(r->a));
	return EXTREF_ERR_ARCHIVE;
}

/*
 * The directory holding path (len bytes of r->path's buffer), made with
 * its own parents when the archive did not list it.
 */
static errcode_t dir_of(struct rd *r, const char *path, size_t len,
			ext2_ino_t *dir)
{
	struct xr_pop_meta m;
	ext2_ino_t parent;
	const char *slash;
	int is_dir = 0;
	errcode_t err = 0;

	if (!len) {
		*dir = EXT2_ROOT_INO;
		return 0;
	}
	*dir = xr_pop_table_get(&r->paths, path, len, &is_dir);
	if (!*dir && r->layer)		/* a lower layer's */
		err = xr_layer_find(r, path, len, dir, &is_dir);
	if (err || *dir)
		return err ? err : is_dir ? 0 : EXT2_ET_NO_DIRECTORY;
	slash = memrchr(path, '/', len);
	err = dir_of(r, path, slash ? (size_t)(slash - path) : 0, &parent);
	if (err)
		return err;
	slash = slash ? slash + 1 : path;
	memcpy(r->name, slash, len - (slash - path));
	r->name[len - (slash - path)] = 0;
	implied_dir(r->p, &m);
	err = xr_pop_mkdir(r->p, parent, r->name, &m, dir);
	if (!err)
		err = xr_pop_table_put(&r->paths, path, len, *dir, 1);
	return err;
}

/* r->path's directory and its last component in r->name. */
static errcode_t parent_of(struct rd *r, ext2_ino_t *dir)
{
	char *slash = strrchr(r->path, '/');
	const char *base = slash ? slash + 1 : r->path;
	errcode_t err;

	err = dir_of(r, r->path, slash ? (size_t)(slash - r->path) : 0, dir);
	strcpy(r->name, base);
	return err;
}

/* The entry's data into d (sparse entries keep their holes). */
static errcode_t put_data(struct rd *r, struct archive_entry *e,
			  struct xr_pop_data *d)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	int ar;
	errcode_t err = 0;

	while (!err && (ar = archive_read_data_block(r->a, &buf, &size,
						     &off)) == ARCHIVE_OK)
		err = xr_pop_data_put(d, (__u64)off, buf, size);
	if (!err && ar != ARCHIVE_EOF && trailer_missing(r, e, d->size))
		r->ended = 1;
	else if (!err && ar != ARCHIVE_EOF)
		err = archive_err(r);
	if (!err && archive_entry_size_is_set(e) &&
	    (__u64)archive_entry_size(e) > d->size)
		d->size = (__u64)archive_entry_size(e);
	return err;
}

static errcode_t make_file(struct rd *r, struct archive_entry *e,
			   const struct xr_pop_meta *m, ext2_ino_t dir,
			   ext2_ino_t *ino)
{
	struct xr_pop_data d;
	errcode_t err = xr_pop_file_begin(r->p, m, dir, &d);

	if (err)
		return err;
	*ino = d.ino;
	err = put_data(r, e, &d);
	if (!err)
		return xr_pop_file_end(&d, dir, r->name);
	xr_pop_data_abort(&d);
	return err;
}

/*
 * r->path (r->name in dir) met again: a directory is refused (it may
 * hold entries), a non-directory replaced by what comes now, as
 * unpacking the archive would replace it.
 */
static errcode_t replace(struct rd *r, ext2_ino_t dir)
{
	int is_dir = 0;
	ext2_ino_t old = xr_pop_table_get(&r->paths, r->path, strlen(r->path),
					  &is_dir);

	if (!old)
		return 0;
	if (is_dir)
		return EXTREF_ERR_SOURCE_DUP;
	return xr_pop_remove(r->p, dir, r->name, old);
}

/* A hard link; with data, the data goes to the (empty) file. */
static errcode_t make_link(struct rd *r, struct archive_entry *e,
			   const char *link)
{
	struct xr_pop *p = r->p;
	struct xr_pop_data d;
	ext2_ino_t ino, dir;
	int is_dir = 1;
	errcode_t err;

	if (xr_pop_normalise(link, r->target, sizeof(r->target)) || !*r->path ||
	    !strcmp(r->path, r->target))
		return EXTREF_ERR_ARCHIVE_LINK;
	/* the name gone from the layers below first: the target is
	 * looked up in what stays */
	err = xr_layer_replace(r, 0, &ino);
	if (err)
		return err;
	ino = xr_pop_table_get(&r->paths, r->target, strlen(r->target),
			       &is_dir);
	if (!ino && r->layer) {		/* a file of a lower layer */
		err = xr_layer_find(r, r->target, strlen(r->target), &ino,
				    &is_dir);
		if (err)
			return err;
	}
	if (!ino || is_dir)
		return EXTREF_ERR_ARCHIVE_LINK;
	err = parent_of(r, &dir);
	if (!err)
		err = replace(r, dir);
	if (!err && archive_entry_size_is_set(e) && archive_entry_size(e) > 0) {
		err = ext2fs_read_inode_full(p->fs, ino,
					     (struct ext2_inode *)p->in,
					     p->isz);
		if (!err && (!LINUX_S_ISREG(p->in->i_mode) ||
			     EXT2_I_SIZE(p->in)))
			err = EXTREF_ERR_ARCHIVE_LINK;
		if (!err)
			err = xr_pop_data_begin(p, ino, p->in, &d);
		if (!err) {
			err = put_data(r, e, &d);
			if (!err)
				err = xr_pop_file_end(&d, dir, NULL);
			else
				xr_pop_data_abort(&d);
		}
	}
	if (!err)
		err = xr_pop_hardlink(p, dir, r->name, ino);
	if (!err)
		err = xr_pop_table_put(&r->paths, r->path, strlen(r->path),
				       ino, 0);
	return err;
}

/* A directory listed again, or the root: the later metadata. */
static errcode_t redo_dir(struct rd *r, ext2_ino_t ino,
			  const struct xr_pop_meta *m)
{
	int owner = ino != EXT2_ROOT_INO ||
		    !(r->p->req->flags & EXTREF_POP_KEEP_ROOT_OWNER);
	errcode_t err = xr_pop_set_meta(r->p, ino, m, owner, 1);

	return err ? err : xr_pop_set_xattrs(r->p, ino, &r->xa);
}

static errcode_t make_new(struct rd *r, struct archive_entry *e,
			  const struct xr_pop_meta *m)
{
	const char *target;
	ext2_ino_t dir, ino = 0;
	errcode_t err = parent_of(r, &dir);

	if (!err)
		err = replace(r, dir);
	if (err)
		return err;
	switch (m->mode & LINUX_S_IFMT) {
	case LINUX_S_IFDIR:
		err = xr_pop_mkdir(r->p, dir, r->name, m, &ino);
		break;
	case LINUX_S_IFREG:
		err = make_file(r, e, m, dir, &ino);
		break;
	case LINUX_S_IFLNK:
		target = entry_symlink(e);
		err = target ? xr_pop_symlink(r->p, dir, r->name, m, target,
					      &ino) : archive_err(r);
		break;
	default:
		err = xr_pop_special(r->p, dir, r->name, m, &ino);
	}
	if (!err)
		err = xr_pop_set_xattrs(r->p, ino, &r->xa);
	if (!err)
		err = xr_pop_table_put(&r->paths, r->path, strlen(r->path),
				       ino, LINUX_S_ISDIR(m->mode));
	return err;
}

static errcode_t one_entry(struct rd *r, struct archive_entry *e)
{
	const char *name = entry_name(e), *link = entry_link(e), *why;
	struct xr_pop_meta m;
	ext2_ino_t ino;
	int is_dir = 0;
	errcode_t err;

	if (!name)
		return archive_err(r);
	/* an OCI layer's names are relative to the image's root, with or
	 * without a leading "/" (umoci writes "/" for the root) */
	while (r->oci && *name == '/')
		name++;
	while (r->oci && link && *link == '/')
		link++;
	if (xr_pop_normalise(name, r->path, sizeof(r->path))) {
		snprintf(r->path, sizeof(r->path), "%s", name);
		return EXTREF_ERR_ARCHIVE_PATH;
	}
	if ((why = xr_path_why(r->path, r->oci))) {
		xr_pop_fail(r->p, r->path, why);
		return EXTREF_ERR_SOURCE_BAD_NAME;
	}
	if (r->oci && xr_layer_is_whiteout(r->path))
		return xr_layer_whiteout(r);
	if (link)
		return make_link(r, e, link);
	err = xr_pop_archive_meta(e, &m);
	if (!err)
		err = read_xattrs(r, e, &m);
	if (err)
		return err;
	if (!*r->path)
		return LINUX_S_ISDIR(m.mode) ?
			redo_dir(r, EXT2_ROOT_INO, &m) :
			EXTREF_ERR_ARCHIVE_ROOT;
	ino = xr_pop_table_get(&r->paths, r->path, strlen(r->path), &is_dir);
	if (ino && is_dir)
		return LINUX_S_ISDIR(m.mode) ? redo_dir(r, ino, &m) :
			EXTREF_ERR_SOURCE_DUP;
	/* a lower layer's: a directory stays for a directory, else goes */
	if (!ino && r->layer) {
		err = xr_layer_replace(r, LINUX_S_ISDIR(m.mode), &ino);
		if (!err && ino)
			return redo_dir(r, ino, &m);
	}
	return err ? err : make_new(r, e, &m);
}

/* A UTF-8 character type for libarchive's names, made once. */
static locale_t utf8_locale(void)
{
	static const char *const names[] = { "C.UTF-8", "C.utf8",
					     "en_US.UTF-8" };
	static locale_t l = (locale_t)0;

	for (size_t i = 0; !l && i < sizeof(names) / sizeof(names[0]); i++)
		l = newlocale(LC_CTYPE_MASK, names[i], (locale_t)0);
	return l;
}

static struct archive *open_reader(void)
{
	struct archive *a = archive_read_new();

	if (!a)
		return NULL;
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	archive_read_support_format_cpio(a);
	return a;
}

static errcode_t read_all(struct rd *r)
{
	struct archive_entry *e;
	struct xr_pop_meta m;
	errcode_t err;
	int ar = ARCHIVE_EOF;

	/* the root, until a "./" entry says otherwise (a later layer
	 * keeps what the layers below gave it) */
	implied_dir(r->p, &m);
	xr_pop_xattrs_reset(&r->xa);
	err = r->layer ? 0 : redo_dir(r, EXT2_ROOT_INO, &m);
	while (!err && !r->ended &&
	       ((ar = archive_read_next_header(r->a, &e)) == ARCHIVE_OK ||
		ar == ARCHIVE_WARN)) {
		err = one_entry(r, e);
		if (err)
			xr_pop_fail(r->p, r->path, NULL);
	}
	if (!err && !r->ended && ar != ARCHIVE_EOF) {
		r->path[0] = 0;
		err = archive_err(r);
	}
	return err;
}

errcode_t xr_pop_read_archive(struct xr_pop *p, int fd)
{
	return xr_pop_read_layer(p, fd, 0, 0);
}

errcode_t xr_pop_read_layer(struct xr_pop *p, int fd, unsigned int layer,
			    int oci)
{
	locale_t utf8 = utf8_locale(), prev = (locale_t)0;
	const char *why = NULL;
	struct rd *r;
	errcode_t err = xr_archive_load(&why);

	if (err) {
		xr_pop_fail(p, "", why);
		return err;
	}
	err = ext2fs_get_memzero(sizeof(*r), &r);
	if (err)
		return err;
	r->p = p;
	r->layer = layer;
	r->oci = oci;
	if (utf8)
		prev = uselocale(utf8);
	r->a = open_reader();
	if (!r->a)
		err = EXT2_ET_NO_MEMORY;
	else if (archive_read_open_fd(r->a, fd, 65536) != ARCHIVE_OK)
		err = archive_err(r);
	if (!err)
		err = read_all(r);
	if (r->a)
		archive_read_free(r->a);
	if (utf8)
		uselocale(prev);
	xr_pop_table_free(&r->paths);
	xr_pop_table_free(&r->lower);
	ext2fs_free_mem(&r->xa.v);
	ext2fs_free_mem(&r->acl[0]);
	ext2fs_free_mem(&r->acl[1]);
	ext2fs_free_mem(&r);
	return err;
}

errcode_t extref_archive_measure(int fd, __u64 *entries, __u64 *bytes,
				 char **why)
{
	locale_t utf8, prev = (locale_t)0;
	const char *lib_why = NULL;
	struct archive *a;
	struct archive_entry *e;
	errcode_t err = xr_archive_load(&lib_why);
	int ar = ARCHIVE_FATAL;

	*entries = *bytes = 0;
	*why = NULL;
	if (err) {
		*why = strdup(lib_why);
		return err;
	}
	utf8 = utf8_locale();
	a = open_reader();
	if (!a)
		return EXT2_ET_NO_MEMORY;
	if (utf8)
		prev = uselocale(utf8);
	if (archive_read_open_fd(a, fd, 65536) == ARCHIVE_OK)
		while ((ar = archive_read_next_header(a, &e)) == ARCHIVE_OK ||
		       ar == ARCHIVE_WARN) {
			__u64 sz = archive_entry_size_is_set(e) ?
				(__u64)archive_entry_size(e) : 0;

			(*entries)++;
			*bytes += archive_entry_filetype(e) == AE_IFREG ?
				(sz + 4095) / 4096 * 4096 : 4096;
			if (archive_read_data_skip(a) != ARCHIVE_OK)
				break;
		}
	if (ar != ARCHIVE_EOF) {
		const char *s = archive_error_string(a);

		err = EXTREF_ERR_ARCHIVE;
		if (s)
			*why = strdup(s);
	}
	archive_read_free(a);
	if (utf8)
		uselocale(prev);
	return err;
}

/* A regular entry's data into the measure (its holes skipped). */
static errcode_t measure_data(struct archive *a, struct archive_entry *e,
			      struct xr_measure *m, int *ended)
{
	__u64 got = 0;
	__u64 size = archive_entry_size_is_set(e) ?
		(__u64)archive_entry_size(e) : 0;
	const void *buf;
	size_t len;
	la_int64_t off;
	errcode_t err = 0;
	int ar;

	xr_measure_file_begin(m);
	if (m->mode == EXTREF_DEDUPE_NONE) {	/* no need to read */
		m->nblocks = (size + m->bs - 1) / m->bs;
		m->s->data_blocks += m->nblocks;
		return xr_measure_file_end(m, size);
	}
	while (!err && (ar = archive_read_data_block(a, &buf, &len, &off)) ==
	       ARCHIVE_OK) {
		err = xr_measure_put(m, (__u64)off, buf, len);
		got = (__u64)off + len;
	}
	if (!err && ar != ARCHIVE_EOF && xr_archive_truncated_after(a, e, got))
		*ended = 1;	/* the measure takes it; the build decides */
	else if (!err && ar != ARCHIVE_EOF)
		err = EXTREF_ERR_ARCHIVE;
	if (!err)
		err = xr_measure_file_end(m, size);
	return err;
}

/* What an entry other than a file's data costs: its name in its
 * directory, a directory's block, a slow symlink's, an xattr block. */
static void measure_meta(struct archive_entry *e, struct xr_measure *m,
			 __u64 *dirent_bytes)
{
	const char *path = archive_entry_pathname(e), *base, *sl;
	const char *name;
	const void *value;
	size_t vlen, xa = 0;

	base = path ? strrchr(path, '/') : NULL;
	base = base ? base + 1 : path ? path : "";
	*dirent_bytes += (8 + strlen(base) + 3) & ~3UL;
	if (archive_entry_filetype(e) == AE_IFDIR) {
		m->s->meta_blocks++;
		m->s->dir_blocks++;
	}
	sl = archive_entry_symlink(e);
	if (archive_entry_filetype(e) == AE_IFLNK && sl && strlen(sl) >= 60)
		m->s->meta_blocks++;
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &value, &vlen) ==
	       ARCHIVE_OK)
		xa += 16 + strlen(name) + vlen;
	if (xa > 96)
		m->s->meta_blocks++;
}

/*
 * The directories an entry implies without the archive listing them (its
 * parents not seen yet): an inode, a block and a name in its parent
 * each, as dir_of makes them.  dirs holds every directory seen; path is
 * a PATH_MAX buffer.
 */
static errcode_t measure_implied(struct archive_entry *e,
				 struct xr_pop_table *dirs, char *path,
				 struct xr_measure *m, __u64 *dirent_bytes)
{
	const char *name = entry_name(e), *slash;
	size_t len;
	errcode_t err = 0;

	if (!name || xr_pop_normalise(name, path, PATH_MAX))
		return 0;		/* refused when populated */
	len = strlen(path);
	if (archive_entry_filetype(e) == AE_IFDIR &&
	    (err = xr_pop_table_put(dirs, path, len, 1, 1)))
		return err;
	while (!err && (slash = memrchr(path, '/', len))) {
		len = slash - path;
		if (xr_pop_table_get(dirs, path, len, NULL))
			break;
		err = xr_pop_table_put(dirs, path, len, 1, 1);
		slash = memrchr(path, '/', len);
		*dirent_bytes += (8 + len - (slash ? slash + 1 - path : 0) +
				  3) & ~3UL;
		m->s->entries++;
		m->s->meta_blocks++;
	}
	return err;
}

errcode_t extref_archive_measure2(int fd, unsigned int blocksize, int mode,
				  extref_progress_func progress, void *priv,
				  struct extref_source_size *s, char **why)
{
	locale_t utf8 = utf8_locale(), prev = (locale_t)0;
	const char *lib_why = NULL;
	struct archive *a = NULL;
	struct archive_entry *e;
	struct xr_measure m;
	struct xr_pop_table dirs = { NULL, 0, 0 };
	char *path = NULL;
	__u64 dirent_bytes = 24;
	errcode_t err;
	int ar = ARCHIVE_FATAL, ended = 0;

	*why = NULL;
	err = xr_measure_begin(&m, s, blocksize, mode);
	if (!err)
		err = ext2fs_get_mem(PATH_MAX, &path);
	if (err) {
		xr_measure_end(&m);
		return err;
	}
	err = xr_archive_load(&lib_why);
	if (err) {
		*why = lib_why ? strdup(lib_why) : NULL;
		xr_measure_end(&m);
		ext2fs_free_mem(&path);
		return err;
	}
	a = open_reader();
	if (!a)
		err = EXT2_ET_NO_MEMORY;
	if (!err && utf8)
		prev = uselocale(utf8);
	if (!err && archive_read_open_fd(a, fd, 65536) == ARCHIVE_OK)
		while (!err && !ended &&
		       ((ar = archive_read_next_header(a, &e)) == ARCHIVE_OK ||
			ar == ARCHIVE_WARN)) {
			s->entries++;
			measure_meta(e, &m, &dirent_bytes);
			err = measure_implied(e, &dirs, path, &m,
					      &dirent_bytes);
			if (!err && archive_entry_filetype(e) == AE_IFREG &&
			    !archive_entry_hardlink(e))
				err = measure_data(a, e, &m, &ended);
			if (progress)
				progress("reading the source",
					 s->data_blocks * blocksize, 0, priv);
		}
	/* the same when the data went unread (no dedupe): the measure
	 * takes what it read, the build decides */
	if (!err && !ended && ar != ARCHIVE_EOF && !truncated_input(a))
		err = EXTREF_ERR_ARCHIVE;
	if (err == EXTREF_ERR_ARCHIVE && archive_error_string(a))
		*why = strdup(archive_error_string(a));
	/* the directories' entries, half full once hashed */
	s->meta_blocks += dirent_bytes / (blocksize - 12) * 3 / 2;
	s->dir_blocks += dirent_bytes / (blocksize - 12) * 3 / 2;
	s->entries++;			/* the root */
	xr_measure_end(&m);
	xr_pop_table_free(&dirs);
	ext2fs_free_mem(&path);
	if (a)
		archive_read_free(a);
	if (utf8 && prev)
		uselocale(prev);
	return err;
}
