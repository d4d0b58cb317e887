/*
 * tar_apply.c --- an archive entry's metadata goes into its inode.
 *
 * mke2fs -d copied the host's placeholders (tar.c): owner-only modes,
 * the unpacking user as owner, no extended attributes of the archive,
 * and empty regular files for devices, FIFOs and sockets.  Here each
 * inode gets the archive's extended attributes (and only those), its
 * mode with the special bits, its owner, and a placeholder its real
 * type: the extents (or inline-data) flag cleared and i_block zeroed,
 * as e2fsck wants a special inode, and a device number encoded as the
 * kernel does (old 8:8 form in i_block[0] when both parts fit, else
 * the new form in i_block[1]).  The directory entries' file types are
 * set to match.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mkfs.h"

int tar_file_type(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:	return EXT2_FT_REG_FILE;
	case S_IFDIR:	return EXT2_FT_DIR;
	case S_IFLNK:	return EXT2_FT_SYMLINK;
	case S_IFCHR:	return EXT2_FT_CHRDEV;
	case S_IFBLK:	return EXT2_FT_BLKDEV;
	case S_IFIFO:	return EXT2_FT_FIFO;
	case S_IFSOCK:	return EXT2_FT_SOCK;
	}
	return EXT2_FT_UNKNOWN;
}

static int is_special(mode_t mode)
{
	return S_ISCHR(mode) || S_ISBLK(mode) || S_ISFIFO(mode) ||
	       S_ISSOCK(mode);
}

struct names {
	char	**v;
	size_t	n;
};

static int collect(char *name, char *value, size_t len, void *data)
{
	struct names *nl = data;
	char **v = realloc(nl->v, (nl->n + 1) * sizeof(*v));

	(void)value; (void)len;
	if (!v)
		return XATTR_ABORT;
	nl->v = v;
	v[nl->n] = strdup(name);
	if (!v[nl->n])
		return XATTR_ABORT;
	nl->n++;
	return 0;
}

/*
 * Remove every extended attribute of ino but an inline file's data
 * (system.data, unless drop_data), then set meta's.
 */
static errcode_t replace_xattrs(ext2_filsys fs, ext2_ino_t ino,
				const struct tar_meta *m, int drop_data)
{
	struct ext2_xattr_handle *h = NULL;
	struct names nl = { NULL, 0 };
	errcode_t err;
	size_t i;

	if (!ext2fs_has_feature_xattr(fs->super))
		return m->n_xattr ? EXT2_ET_MISSING_EA_FEATURE : 0;
	err = ext2fs_xattrs_open(fs, ino, &h);
	if (!err)
		err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, collect, &nl);
	for (i = 0; !err && i < nl.n; i++)
		if (drop_data || strcmp(nl.v[i], "system.data"))
			err = ext2fs_xattr_remove(h, nl.v[i]);
	for (i = 0; !err && i < m->n_xattr; i++)
		err = ext2fs_xattr_set(h, m->xattr[i].name, m->xattr[i].value,
				       m->xattr[i].len);
	for (i = 0; i < nl.n; i++)
		free(nl.v[i]);
	free(nl.v);
	if (h) {
		errcode_t e2 = ext2fs_xattrs_close(&h);

		if (!err)
			err = e2;
	}
	return err;
}

/* A device number in i_block, as the kernel's ext4 encodes it. */
static void set_rdev(struct ext2_inode_large *in, uint32_t maj, uint32_t min)
{
	if (maj < 256 && min < 256)
		in->i_block[0] = maj << 8 | min;
	else
		in->i_block[1] = (min & 0xff) | maj << 8 | (min & ~0xffU) << 12;
}

errcode_t tar_apply(ext2_filsys fs, ext2_ino_t ino,
		    struct ext2_inode_large *in, const struct tar_meta *m,
		    int set_owner)
{
	int isz = EXT2_INODE_SIZE(fs->super), convert;
	struct ext2_inode *ip = (struct ext2_inode *)in;
	mode_t cur;
	errcode_t err;

	err = ext2fs_read_inode_full(fs, ino, ip, isz);
	if (err)
		return err;
	cur = in->i_mode & S_IFMT;
	/* a placeholder: an empty regular file for a special one */
	convert = is_special(m->mode) && cur == S_IFREG;
	if (convert ? EXT2_I_SIZE(in) != 0 : cur != (m->mode & S_IFMT))
		return EXT2_ET_INVALID_ARGUMENT;
	err = replace_xattrs(fs, ino, m, convert);
	if (!err)	/* the attributes may have changed the inode */
		err = ext2fs_read_inode_full(fs, ino, ip, isz);
	if (err)
		return err;
	if (is_special(m->mode)) {
		in->i_flags &= ~(EXT4_EXTENTS_FL | EXT4_INLINE_DATA_FL);
		memset(in->i_block, 0, sizeof(in->i_block));
		if (S_ISCHR(m->mode) || S_ISBLK(m->mode))
			set_rdev(in, m->major, m->minor);
	}
	in->i_mode = (__u16)m->mode;
	if (set_owner) {
		in->i_uid = (__u16)m->uid;
		in->osd2.linux2.l_i_uid_high = (__u16)(m->uid >> 16);
		in->i_gid = (__u16)m->gid;
		in->osd2.linux2.l_i_gid_high = (__u16)(m->gid >> 16);
	}
	return 0;
}

struct fix_ctx {
	const ext2_ino_t	*inos;
	const int		*fts;
	size_t			n;
};

static int fix_dirent(ext2_ino_t dir, int entry, struct ext2_dir_entry *d,
		      int offset, int blocksize, char *buf, void *priv)
{
	struct fix_ctx *c = priv;
	int changed = 0;
	size_t i;

	(void)dir; (void)entry; (void)offset; (void)blocksize; (void)buf;
	for (i = 0; i < c->n; i++) {
		if (d->inode != c->inos[i] ||
		    ext2fs_dirent_file_type(d) == c->fts[i])
			continue;
		ext2fs_dirent_set_file_type(d, c->fts[i]);
		changed = DIRENT_CHANGED;
	}
	return changed;
}

errcode_t tar_fix_dirents(ext2_filsys fs, ext2_ino_t dir,
			  const ext2_ino_t *inos, const int *fts, size_t n)
{
	struct fix_ctx c = { inos, fts, n };

	return ext2fs_dir_iterate2(fs, dir, 0, NULL, fix_dirent, &c);
}
