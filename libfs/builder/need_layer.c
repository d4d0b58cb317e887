/*
 * need_layer.c --- an archive read for the dry run as update_layer.c
 * applies it (one more OCI layer at the image's root), entry by entry,
 * against the image as the entries before it left it.  A directory the
 * image has at the path is kept; a regular file goes to need_file.c
 * (kept when the image's file of one link at the path holds its bytes,
 * read from the archive as it streams: nothing staged); a symlink or a
 * device is made anew (a slow symlink, target of 60 bytes or more, a
 * block too); anything not kept is a new inode, with an entry in its
 * directory when the name is new there (a name replaced leaves its
 * room to the new one).  A hard link is an entry only; the directories
 * a path lacks are made.  Whiteouts and opaque directories take
 * nothing, but the names they remove are gone for the entries after.
 *
 * What the layer did so far is a table of its paths, looked at before
 * the image: the inode (the image's, or a stand-in) and its kind, or
 * gone.  The bytes of entries each directory gains are summed, and
 * counted in blocks (need_dir.c) at the end.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <string.h>
#include "archive_dl.h"
#include "need_int.h"

#define WH		".wh."
#define WH_OPAQUE	".wh..wh..opq"

enum {
	NL_DIR = 1,
	NL_REG = 2,		/* a regular file the update may keep */
	NL_OWN = 4,		/* an entry of the layer */
	NL_OPAQUE = 8,		/* the image's entries in it are gone */
	NL_GONE = 16		/* removed by a whiteout */
};

/* What is at a path: its inode (0: nothing), its NL_* kind. */
struct at {
	ext2_ino_t	ino;
	int		flags;
};

/* A directory that gains entries: their bytes. */
struct gain {
	ext2_ino_t	dir;
	__u64		bytes;
};

struct nl {
	struct xr_need		*nd;
	struct archive		*a;
	struct archive_entry	*e;
	struct xr_pop_table	paths;	/* path -> inode, NL_* */
	struct xr_pop_table	dirs;	/* directory -> its gain, + 1 */
	struct gain		*gain;
	size_t			ngain, cap;
	const char		*blk;	/* the entry's data block */
	size_t			blen;	/* its bytes not yet read */
	__u64			boff;	/* where they go in the file */
	__u64			at;	/* the next byte read */
	__u64			end;	/* the data's end so far */
	int			eof;	/* the entry's data all read */
	int			ended;	/* the tar's trailer missing */
	char			path[PATH_MAX];
	char			target[PATH_MAX];
	char			name[NAME_MAX + 1];
};

/* dir gains bytes more of entries (0: a new directory, counted). */
static errcode_t gain(struct nl *l, ext2_ino_t dir, __u64 bytes)
{
	ext2_ino_t slot = xr_pop_table_get(&l->dirs, &dir, sizeof(dir),
					   NULL);
	errcode_t err;

	if (!slot) {
		if (l->ngain == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 256;

			err = ext2fs_resize_mem(l->cap * sizeof(*l->gain),
						cap * sizeof(*l->gain),
						&l->gain);
			if (err)
				return err;
			l->cap = cap;
		}
		l->gain[l->ngain] = (struct gain){ dir, 0 };
		slot = (ext2_ino_t)++l->ngain;
		err = xr_pop_table_put(&l->dirs, &dir, sizeof(dir), slot, 0);
		if (err)
			return err;
	}
	l->gain[slot - 1].bytes += bytes;
	return 0;
}

static errcode_t entry_in(struct nl *l, ext2_ino_t dir, const char *name)
{
	return gain(l, dir, xr_need_dirent_len(strlen(name)));
}

static errcode_t put(struct nl *l, const char *path, size_t len,
		     const struct at *at)
{
	return xr_pop_table_put(&l->paths, path, len, at->ino, at->flags);
}

/* The root, as the layer left it. */
static void root(struct nl *l, struct at *at)
{
	at->flags = 0;
	at->ino = xr_pop_table_get(&l->paths, "", 0, &at->flags);
	if (!at->flags)
		*at = (struct at){ EXT2_ROOT_INO, NL_DIR };
}

/* What is at path[0..len), name in the directory at parent. */
static errcode_t step(struct nl *l, const struct at *parent,
		      const char *path, size_t len, const char *name,
		      struct at *at)
{
	ext2_filsys fs = l->nd->up.fs;
	struct ext2_inode in;
	int flags = 0;
	ext2_ino_t ino = xr_pop_table_get(&l->paths, path, len, &flags);
	errcode_t err;

	*at = (struct at){ 0, 0 };
	if (flags) {			/* the layer's doing */
		if (!(flags & NL_GONE))
			*at = (struct at){ ino, flags & ~NL_OWN };
		return 0;
	}
	if (!parent->ino || parent->ino > fs->super->s_inodes_count ||
	    (parent->flags & NL_OPAQUE))
		return 0;		/* a new or emptied directory */
	err = xr_lookup(fs, parent->ino, name, &at->ino);
	if (err == EXT2_ET_FILE_NOT_FOUND) {
		at->ino = 0;
		return 0;
	}
	if (!err)
		err = ext2fs_read_inode(fs, at->ino, &in);
	if (!err && LINUX_S_ISDIR(in.i_mode))
		at->flags = NL_DIR;
	else if (!err && LINUX_S_ISREG(in.i_mode) && in.i_links_count == 1)
		at->flags = NL_REG;
	return err;
}

/* A directory the update makes (its blocks counted at the end). */
static errcode_t made_dir(struct nl *l, struct at *at)
{
	l->nd->inodes++;
	*at = (struct at){ xr_need_fake_ino(l->nd), NL_DIR };
	return gain(l, at->ino, 0);
}

/* One made as a new name in dir. */
static errcode_t new_dir(struct nl *l, ext2_ino_t dir, const char *name,
			 struct at *at)
{
	errcode_t err = entry_in(l, dir, name);

	return err ? err : made_dir(l, at);
}

/*
 * What is at path[0..len) (normalised); with make, the directories
 * missing on the way made, as update_layer.c's find makes them.
 */
static errcode_t find(struct nl *l, const char *path, size_t len, int make,
		      struct at *at)
{
	size_t pos = 0, n;
	struct at child;
	errcode_t err = 0;

	root(l, at);
	while (pos < len && !err) {
		if (!at->ino || !(at->flags & NL_DIR)) {
			*at = (struct at){ 0, 0 };
			return make ? EXT2_ET_NO_DIRECTORY : 0;
		}
		n = strcspn(path + pos, "/");
		if (n > len - pos)
			n = len - pos;
		memcpy(l->name, path + pos, n);
		l->name[n] = 0;
		err = step(l, at, path, pos + n, l->name, &child);
		if (!err && !child.ino && make) {
			err = new_dir(l, at->ino, l->name, &child);
			if (!err)
				err = put(l, path, pos + n, &child);
		}
		*at = child;
		pos += n + 1;
	}
	return err;
}

/* ".wh..wh..opq" in the directory path[0..len). */
static errcode_t opaque(struct nl *l, size_t len)
{
	struct at dir;
	errcode_t err = find(l, l->path, len, 0, &dir);

	if (err || !dir.ino || !(dir.flags & NL_DIR))
		return err;
	dir.flags |= NL_OPAQUE;
	return put(l, l->path, len, &dir);
}

static int is_own(struct nl *l, const char *path)
{
	int flags = 0;

	xr_pop_table_get(&l->paths, path, strlen(path), &flags);
	return (flags & NL_OWN) != 0;
}

static errcode_t whiteout(struct nl *l, const char *base)
{
	size_t dlen = base == l->path ? 0 : (size_t)(base - l->path - 1);
	struct at gone = { 0, NL_GONE };

	if (!strcmp(base, WH_OPAQUE))
		return opaque(l, dlen);
	if (!strncmp(base, WH WH, 8) || !base[4])
		return 0;			/* aufs's own */
	if (!dlen && !strcmp(base + 4, "lost+found"))
		return 0;			/* the update keeps it */
	memcpy(l->target, l->path, dlen);
	l->target[dlen] = '/';
	strcpy(l->target + dlen + !!dlen, base + 4);
	if (is_own(l, l->target))
		return 0;
	return put(l, l->target, strlen(l->target), &gone);
}

/* The data block in hand: its bytes left, where they go; a new one
 * read when it is used up (0 at the entry's end). */
static errcode_t next_block(struct nl *l)
{
	const void *buf;
	la_int64_t off;
	int ar;

	if (l->eof)
		return 0;
	ar = archive_read_data_block(l->a, &buf, &l->blen, &off);
	l->blk = buf;
	l->boff = off < 0 ? 0 : (__u64)off;
	if (ar == ARCHIVE_OK) {
		if (l->boff + l->blen > l->end)
			l->end = l->boff + l->blen;
		return 0;
	}
	l->blen = 0;
	l->eof = 1;
	if (ar == ARCHIVE_EOF)
		return 0;
	/* as update_layer.c's stage: the layer ends here, or is damaged */
	if (archive_entry_size_is_set(l->e) &&
	    (__u64)archive_entry_size(l->e) > l->end)
		l->end = (__u64)archive_entry_size(l->e);
	if (!xr_archive_truncated_after(l->a, l->e, l->end))
		return EXTREF_ERR_ARCHIVE;
	l->ended = 1;
	return 0;
}

/* The entry's data from its start on (need_file.c reads it once, in
 * order), a hole between two blocks zeros, as update_layer.c stages
 * it. */
static errcode_t data(void *priv, char *buf, size_t len, __u64 off,
		      size_t *got)
{
	struct nl *l = priv;
	size_t n;
	errcode_t err = 0;

	(void)off;			/* l->at: the next byte */
	*got = 0;
	while (!err && *got < len) {
		if (!l->blen) {
			if (l->eof)
				break;
			err = next_block(l);
			continue;
		}
		n = len - *got;
		if (l->at < l->boff) {		/* a hole */
			if (n > l->boff - l->at)
				n = (size_t)(l->boff - l->at);
			memset(buf + *got, 0, n);
		} else {
			if (n > l->blen)
				n = l->blen;
			memcpy(buf + *got, l->blk, n);
			l->blk += n;
			l->blen -= n;
			l->boff += n;
		}
		*got += n;
		l->at += n;
	}
	return err;
}

/* The rest of the entry's data read (to its end, or the archive's). */
static errcode_t drain(struct nl *l)
{
	errcode_t err = 0;

	while (!err && !l->eof) {
		l->blen = 0;
		err = next_block(l);
	}
	return err;
}

static errcode_t reg_file(struct nl *l, const struct at *old,
			  struct at *made)
{
	struct xr_need_src src = { data, l };
	__u64 size = archive_entry_size_is_set(l->e) &&
		archive_entry_size(l->e) > 0 ?
		(__u64)archive_entry_size(l->e) : 0;
	errcode_t err;

	l->blen = 0;
	l->at = l->end = 0;
	l->eof = 0;
	err = xr_need_file(l->nd, &src, size,
			   (old->flags & NL_REG) ? old->ino : 0, &made->ino);
	made->flags = NL_REG;
	return err ? err : drain(l);
}

/* A hard link to link: an entry, no inode. */
static errcode_t hardlink(struct nl *l, const char *link,
			  const struct at *old, struct at *made)
{
	errcode_t err;

	while (*link == '/')
		link++;
	if (xr_pop_normalise(link, l->target, sizeof(l->target)) ||
	    !strcmp(l->target, l->path))
		return EXTREF_ERR_ARCHIVE_LINK;
	err = find(l, l->target, strlen(l->target), 0, made);
	if (!err && (!made->ino || (made->flags & NL_DIR)))
		err = EXTREF_ERR_ARCHIVE_LINK;
	made->flags = 0;		/* of two links: not kept */
	if (!err && made->ino != old->ino && (old->flags & NL_DIR))
		err = EXTREF_ERR_ARCHIVE_LINK;
	return err;
}

static errcode_t make(struct nl *l, const struct at *old, struct at *made)
{
	struct xr_need *nd = l->nd;
	const char *target;

	switch (archive_entry_filetype(l->e)) {
	case AE_IFDIR:
		if (!(old->flags & NL_DIR))
			return made_dir(l, made);
		*made = *old;
		return 0;
	case AE_IFREG:
		return reg_file(l, old, made);
	case AE_IFLNK:
		target = archive_entry_symlink(l->e);
		if (!target)
			return EXTREF_ERR_ARCHIVE;
		if (strlen(target) >= 60)
			nd->other++;
		break;
	default:
		break;
	}
	nd->inodes++;
	*made = (struct at){ xr_need_fake_ino(nd), 0 };
	return 0;
}

static errcode_t one(struct nl *l)
{
	const char *name = archive_entry_pathname(l->e), *link, *base;
	size_t dlen;
	struct at dir, old, made;
	errcode_t err;

	if (!name)
		return EXTREF_ERR_ARCHIVE;
	while (*name == '/')
		name++;
	if (xr_pop_normalise(name, l->path, sizeof(l->path)))
		return EXTREF_ERR_ARCHIVE_PATH;
	if (xr_path_why(l->path, 1))
		return EXTREF_ERR_SOURCE_BAD_NAME;
	base = strrchr(l->path, '/');
	base = base ? base + 1 : l->path;
	if (!strncmp(base, WH, 4))
		return whiteout(l, base);
	dlen = base == l->path ? 0 : (size_t)(base - l->path - 1);
	err = find(l, l->path, dlen, 1, &dir);
	if (!err && !(dir.flags & NL_DIR))
		err = EXT2_ET_NO_DIRECTORY;
	if (err)
		return err;
	if (!*base)			/* the root: its metadata only */
		return archive_entry_filetype(l->e) == AE_IFDIR ? 0 :
			EXTREF_ERR_ARCHIVE_ROOT;
	err = step(l, &dir, l->path, strlen(l->path), base, &old);
	link = archive_entry_hardlink(l->e);
	if (!err)
		err = link ? hardlink(l, link, &old, &made) :
			make(l, &old, &made);
	if (!err && !old.ino)		/* a new name: an entry */
		err = entry_in(l, dir.ino, base);
	if (err)
		return err;
	made.flags |= NL_OWN;
	return put(l, l->path, strlen(l->path), &made);
}

static errcode_t open_layer(struct nl *l, int fd)
{
	const char *why = NULL;
	errcode_t err = xr_archive_load(&why);

	if (err)
		return err;
	l->a = archive_read_new();
	if (!l->a)
		return EXT2_ET_NO_MEMORY;
	archive_read_support_filter_all(l->a);
	archive_read_support_format_tar(l->a);
	archive_read_support_format_gnutar(l->a);
	if (archive_read_open_fd(l->a, fd, 65536) != ARCHIVE_OK)
		return EXTREF_ERR_ARCHIVE;
	return 0;
}

errcode_t xr_need_layer(struct xr_need *nd, int fd)
{
	struct nl *l;
	size_t i;
	int ar = ARCHIVE_EOF;
	errcode_t err = ext2fs_get_memzero(sizeof(*l), &l);

	if (err)
		return err;
	l->nd = nd;
	err = open_layer(l, fd);
	while (!err && !l->ended &&
	       ((ar = archive_read_next_header(l->a, &l->e)) == ARCHIVE_OK ||
		ar == ARCHIVE_WARN))
		err = one(l);
	if (!err && !l->ended && ar != ARCHIVE_EOF)
		err = EXTREF_ERR_ARCHIVE;
	for (i = 0; !err && i < l->ngain; i++)
		nd->dir_blocks += xr_need_dir_blocks(nd, l->gain[i].dir,
						     l->gain[i].bytes);
	if (l->a)
		archive_read_free(l->a);
	xr_pop_table_free(&l->paths);
	xr_pop_table_free(&l->dirs);
	ext2fs_free_mem(&l->gain);
	ext2fs_free_mem(&l);
	return err;
}
