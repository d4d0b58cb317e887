/*
 * util.c --- number parsing, size and mode formatting, extent walking and
 * reference-count runs for debugfs.extref.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include "debugfs.h"

int parse_u64(const char *s, __u64 *val)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return 1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return 1;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return 1;
		}
		if (end[1])
			return 1;
		if (v > (~0ULL >> shift))
			return 1;
		v <<= shift;
	}
	*val = v;
	return 0;
}

int parse_num_arg(const struct cmd_args *a, const char *s, const char *what,
		  __u64 *val)
{
	if (parse_u64(s, val))
		return cmd_fail(a, "bad %s: %s", what, s);
	return 0;
}

/* btrfs-progs pretty_size(): base 1024, two decimals. */
void human_size(__u64 bytes, int raw, char *buf, size_t len)
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
	};
	int n = 0;
	__u64 last = bytes, size = bytes;

	if (raw) {
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
		return;
	}
	if (size < 1024) {
		snprintf(buf, len, "%.2f%s", (double)size, units[0]);
		return;
	}
	while (size >= 1024 && n < 6) {
		last = size;
		size /= 1024;
		n++;
	}
	snprintf(buf, len, "%.2f%s", (double)last / 1024.0, units[n]);
}

void mode_string(__u16 mode, char *b)
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFDIR: b[0] = 'd'; break;
	case LINUX_S_IFLNK: b[0] = 'l'; break;
	case LINUX_S_IFCHR: b[0] = 'c'; break;
	case LINUX_S_IFBLK: b[0] = 'b'; break;
	case LINUX_S_IFIFO: b[0] = 'p'; break;
	case LINUX_S_IFSOCK: b[0] = 's'; break;
	case LINUX_S_IFREG: b[0] = '-'; break;
	default: b[0] = '?'; break;
	}
	for (i = 0; i < 9; i++)
		b[1 + i] = (mode & (0400 >> i)) ? rwx[i] : '-';
	if (mode & LINUX_S_ISUID)
		b[3] = (mode & 0100) ? 's' : 'S';
	if (mode & LINUX_S_ISGID)
		b[6] = (mode & 0010) ? 's' : 'S';
	if (mode & LINUX_S_ISVTX)
		b[9] = (mode & 0001) ? 't' : 'T';
	b[10] = 0;
}

const char *inode_type_name(__u16 mode)
{
	switch (mode & LINUX_S_IFMT) {
	case LINUX_S_IFDIR: return "directory";
	case LINUX_S_IFLNK: return "symlink";
	case LINUX_S_IFCHR: return "character special";
	case LINUX_S_IFBLK: return "block special";
	case LINUX_S_IFIFO: return "FIFO";
	case LINUX_S_IFSOCK: return "socket";
	case LINUX_S_IFREG: return "regular";
	default: return "bad type";
	}
}

/* ----- extents ----- */

struct bmap_ctx {
	fext_func	func;
	void		*priv;
	struct fext	cur;
	int		have;
	int		stop;
};

static int bmap_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt,
		   blk64_t ref_blk, int ref_offset, void *priv)
{
	struct bmap_ctx *c = priv;

	(void)fs; (void)ref_blk; (void)ref_offset;
	if (blockcnt < 0)
		return 0;
	if (c->have && c->cur.lblk + c->cur.len == (blk64_t)blockcnt &&
	    c->cur.pblk + c->cur.len == *blocknr) {
		c->cur.len++;
		return 0;
	}
	if (c->have && c->func(&c->cur, c->priv)) {
		c->stop = 1;
		return BLOCK_ABORT;
	}
	c->cur.lblk = blockcnt;
	c->cur.pblk = *blocknr;
	c->cur.len = 1;
	c->cur.unwritten = 0;
	c->have = 1;
	return 0;
}

struct ext_ctx {
	fext_func	func;
	void		*priv;
};

static errcode_t ext_cb(const struct extref_extent *e, void *priv)
{
	struct ext_ctx *c = priv;
	struct fext fe;

	if (!e->len)
		return 0;
	fe.lblk = e->lblk;
	fe.pblk = e->pblk;
	fe.len = e->len;
	fe.unwritten = e->unwritten;
	return c->func(&fe, c->priv) ? EXTREF_ITER_STOP : 0;
}

/* Block-mapped files through libext2fs, extent-mapped ones the library's. */
errcode_t walk_extents(ext2_ino_t ino, struct ext2_inode_large *inode,
		       fext_func func, void *priv)
{
	struct ext_ctx ec = { .func = func, .priv = priv };
	errcode_t err;

	if (inode->i_flags & EXT4_INLINE_DATA_FL)
		return 0;
	if (LINUX_S_ISLNK(inode->i_mode) &&
	    ext2fs_is_fast_symlink((struct ext2_inode *)inode))
		return 0;
	if (!(inode->i_flags & EXT4_EXTENTS_FL)) {
		struct bmap_ctx c;

		memset(&c, 0, sizeof(c));
		c.func = func;
		c.priv = priv;
		if (!ext2fs_inode_has_valid_blocks2(sh.fs,
						    (struct ext2_inode *)inode))
			return 0;
		err = extref_block_iterate(sh.fs, ino,
				       BLOCK_FLAG_READ_ONLY |
				       BLOCK_FLAG_DATA_ONLY,
				       bmap_cb, &c);
		if (!err && c.have && !c.stop)
			func(&c.cur, priv);
		return err;
	}
	err = extref_iterate_extents(sh.xfs, ino, (struct ext2_inode *)inode,
				     0, ext_cb, &ec);
	return err == EXT2_ET_NO_CURRENT_NODE ? 0 : err;
}

/* ----- runs of equal count ----- */

struct runs_ctx {
	run_func	func;
	void		*priv;
	blk64_t		pos;	/* next block not yet reported */
	int		stop;
};

static errcode_t runs_cb(const struct extref_rec *rec, void *priv)
{
	struct runs_ctx *c = priv;

	if (rec->start > c->pos) {
		if (c->func(c->pos, rec->start - c->pos, 1, c->priv)) {
			c->stop = 1;
			return EXTREF_ITER_STOP;
		}
	}
	if (c->func(rec->start, rec->len, rec->count, c->priv)) {
		c->stop = 1;
		return EXTREF_ITER_STOP;
	}
	c->pos = rec->start + rec->len;
	return 0;
}

errcode_t refcount_runs(blk64_t pblk, blk64_t len, run_func func, void *priv)
{
	struct runs_ctx c;
	extref_tree_t tree = sh_tree();
	errcode_t err;

	if (!len)
		return 0;
	if (!tree) {
		func(pblk, len, 0, priv);	/* 0: unknown */
		return 0;
	}
	c.func = func;
	c.priv = priv;
	c.pos = pblk;
	c.stop = 0;
	err = extref_tree_iterate(tree, pblk, len, 1, runs_cb, &c);
	if (err)
		return err;
	if (!c.stop && c.pos < pblk + len)
		func(c.pos, pblk + len - c.pos, 1, priv);
	return 0;
}

/* ----- names from the image, shown escaped ----- */

static int name_byte_plain(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x7f && ch != '\\';
}

void print_name(FILE *f, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char ch = s[i];

		if (name_byte_plain(ch))
			fputc(ch, f);
		else
			fprintf(f, "\\x%02x", ch);
	}
}

/*
 * Four buffers in turn, so one printf can show up to four names; each
 * grows to the longest name it held and lives as long as the program.
 */
const char *escn(const char *s, size_t len)
{
	static char *ring[4];
	static size_t cap[4];
	static unsigned next;
	unsigned k = next++ % 4;
	size_t i, o = 0;

	if (len * 4 + 1 > cap[k]) {
		char *p = realloc(ring[k], len * 4 + 1);

		if (!p)
			return "?";
		ring[k] = p;
		cap[k] = len * 4 + 1;
	}
	for (i = 0; i < len; i++) {
		unsigned char ch = s[i];

		if (name_byte_plain(ch))
			ring[k][o++] = ch;
		else
			o += sprintf(ring[k] + o, "\\x%02x", ch);
	}
	ring[k][o] = 0;
	return ring[k];
}

const char *esc(const char *s)
{
	return s ? escn(s, strlen(s)) : "(null)";
}

int is_dot_entry(const struct ext2_dir_entry *de)
{
	int len = ext2fs_dirent_name_len(de);

	return (len == 1 && de->name[0] == '.') ||
	       (len == 2 && de->name[0] == '.' && de->name[1] == '.');
}
