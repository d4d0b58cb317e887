/*
 * inspect.c --- read-only inspection: stats, ls, cd, pwd, stat, cat, dump.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <e2p/e2p.h>
#include "debugfs.h"

/* ----- stats ----- */

static void print_features(struct ext2_super_block *sb)
{
	__u32 *masks[3] = { &sb->s_feature_compat, &sb->s_feature_incompat,
			    &sb->s_feature_ro_compat };
	int t, bit, any = 0;

	printf("Filesystem features:     ");
	for (t = 0; t < 3; t++)
		for (bit = 0; bit < 32; bit++)
			if (*masks[t] & (1U << bit)) {
				printf(" %s", e2p_feature2string(t, 1U << bit));
				any = 1;
			}
	if (!any)
		printf(" (none)");
	printf("\n");
}

int impl_stats(struct cmd_args *a)
{
	struct ext2_super_block *sb = sh.fs->super;
	struct extref_tree_stats st;
	extref_tree_t tree = sh_tree();
	char label[EXT2_LABEL_LEN + 1];
	errcode_t err;

	memcpy(label, sb->s_volume_name, EXT2_LABEL_LEN);
	label[EXT2_LABEL_LEN] = 0;
	printf("Image:                    %s (%s%s)\n", esc(sh.image),
	       sh.rw ? "read-write" : "read-only",
	       sh.nocsum ? ", checksums not verified" : "");
	printf("Filesystem volume name:   %s\n",
	       label[0] ? esc(label) : "<none>");
	printf("Filesystem UUID:          %s\n", e2p_uuid2str(sb->s_uuid));
	print_features(sb);
	printf("Block size:               %u\n", sh.fs->blocksize);
	printf("Block count:              %llu\n",
	       (unsigned long long)ext2fs_blocks_count(sb));
	printf("Free blocks:              %llu\n",
	       (unsigned long long)ext2fs_free_blocks_count(sb));
	printf("Inode count:              %u\n", sb->s_inodes_count);
	printf("Free inodes:              %u\n", sb->s_free_inodes_count);
	printf("Inode size:               %u\n", EXT2_INODE_SIZE(sb));
	printf("First data block:         %u\n", sb->s_first_data_block);
	printf("Block groups:             %u\n", sh.fs->group_desc_count);
	printf("Reference-count tree (inode %d):\n", EXTREF_INO);
	if (!tree) {
		printf("  not loaded:             %s\n",
		       error_message(sh.tree_err ? sh.tree_err
					     : EXTREF_ERR_NO_TREE));
		return 0;
	}
	err = extref_tree_get_stats(tree, &st);
	if (err)
		return cmd_err(a, err, "reading the tree's statistics");
	printf("  Records:                %llu\n", (unsigned long long)st.records);
	printf("  Depth:                  %u\n", st.depth);
	printf("  Nodes:                  %u\n", st.nodes);
	printf("  Leaves:                 %u\n", st.leaves);
	printf("  Free nodes:             %u\n", st.free_nodes);
	printf("  File blocks:            %u\n", st.file_blocks);
	printf("  Entries per node:       %u\n", st.capacity);
	printf("  Generation:             %llu\n",
	       (unsigned long long)st.generation);
	return 0;
}

/* ----- ls ----- */

struct ls_ctx {
	int	longfmt;
	int	parsable;
};

static void ls_long(ext2_ino_t ino, const char *name, int namelen)
{
	struct ext2_inode_large inode;
	char mode[12], date[32];

	memset(&inode, 0, sizeof(inode));
	if (ext2fs_read_inode_full(sh.fs, ino, (struct ext2_inode *)&inode,
				   sizeof(inode))) {
		printf("%7u  %-10s  %3s  %5s  %5s  %10s  %17s  %s\n", ino,
		       "?", "?", "?", "?", "?", "?", escn(name, namelen));
		return;
	}
	mode_string(inode.i_mode, mode);
	ls_date(&inode, date, sizeof(date));
	printf("%7u  %s  %3u  %5u  %5u  %10llu  %s  %s\n", ino, mode,
	       inode.i_links_count, inode_uid(inode), inode_gid(inode),
	       (unsigned long long)EXT2_I_SIZE(&inode), date,
	       escn(name, namelen));
}

static int ls_cb(struct ext2_dir_entry *de, int offset, int blocksize,
		 char *buf, void *priv)
{
	struct ls_ctx *c = priv;
	int len = ext2fs_dirent_name_len(de);

	(void)offset; (void)blocksize; (void)buf;
	if (!de->inode)
		return 0;
	if (c->parsable)
		ls_parsable(de->inode, de->name, len);
	else if (c->longfmt)
		ls_long(de->inode, de->name, len);
	else
		printf("%s\n", escn(de->name, len));
	return 0;
}

int impl_ls(struct cmd_args *a)
{
	const char *path = a->argc ? a->argv[0] : "";
	struct ext2_inode_large inode;
	struct ls_ctx c;
	ext2_ino_t ino;
	errcode_t err;

	if (resolve_path(a, path, &ino) || read_inode(a, ino, &inode))
		return 1;
	/* listing a directory reads it */
	err = LINUX_S_ISDIR(inode.i_mode) ?
		extref_access(sh.xfs, ino, EXTREF_MAY_READ) : 0;
	if (err)
		return cmd_err(a, err, "%s", path);
	c.longfmt = a->opts['l'];
	c.parsable = a->opts['p'];
	if (!LINUX_S_ISDIR(inode.i_mode)) {
		if (c.parsable) {
			const char *base = strrchr(path, '/');

			base = base ? base + 1 : path;
			ls_parsable(ino, base, strlen(base));
		} else if (c.longfmt)
			ls_long(ino, path, strlen(path));
		else
			printf("%s\n", esc(path));
		return 0;
	}
	err = ext2fs_dir_iterate(sh.fs, ino, 0, NULL, ls_cb, &c);
	if (err)
		return cmd_err(a, err, "%s", path);
	if (c.parsable)
		printf("\n");	/* stock debugfs ends its listing so */
	return 0;
}

/* ----- cd, pwd ----- */

int impl_cd(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	ext2_ino_t ino;
	errcode_t err;

	/* cd follows a symlink to a directory, as a shell does. */
	if (a->argv[0][0] == '<') {
		if (resolve_path(a, a->argv[0], &ino))
			return 1;
	} else {
		err = extref_namei(sh.xfs, EXT2_ROOT_INO, sh.cwd,
				   a->argv[0], EXTREF_NAMEI_FOLLOW, &ino);
		/* chdir needs search permission on the directory itself */
		if (!err && sh.have_ident)
			err = extref_namei(sh.xfs, EXT2_ROOT_INO, ino, ".", 0,
					   &ino);
		if (err)
			return cmd_err(a, err, "%s", a->argv[0]);
	}
	if (read_inode(a, ino, &inode))
		return 1;
	if (!LINUX_S_ISDIR(inode.i_mode))
		return cmd_fail(a, "%s: Not a directory", a->argv[0]);
	sh.cwd = ino;
	return 0;
}

int impl_pwd(struct cmd_args *a)
{
	char *name = NULL;
	errcode_t err;

	err = ext2fs_get_pathname(sh.fs, sh.cwd, 0, &name);
	if (err)
		return cmd_err(a, err, "inode %u", sh.cwd);
	printf("%s\n", esc(name));
	ext2fs_free_mem(&name);
	return 0;
}

/* ----- stat ----- */

static void print_time(const char *label, __u32 secs, __u32 extra, int has_extra)
{
	time_t t = (__s32)secs;
	char buf[64];
	struct tm tm;

	if (has_extra)
		t += (time_t)(extra & EXT4_EPOCH_MASK) << 32;
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
	if (has_extra)
		printf("%s 0x%08x:%08x -- %s\n", label, secs, extra, buf);
	else
		printf("%s 0x%08x -- %s\n", label, secs, buf);
}

struct stat_ctx {
	struct fext	ext;
	int		extents;
};

static int stat_run_cb(blk64_t pblk, blk64_t len, __u32 count, void *priv)
{
	struct stat_ctx *c = priv;
	blk64_t lblk = c->ext.lblk + (pblk - c->ext.pblk);
	char cnt[16];

	if (count)
		snprintf(cnt, sizeof(cnt), "%u", count);
	else
		strcpy(cnt, "?");
	printf("  lblk %llu-%llu  pblk %llu-%llu  len %llu  refcount %s%s\n",
	       (unsigned long long)lblk, (unsigned long long)(lblk + len - 1),
	       (unsigned long long)pblk, (unsigned long long)(pblk + len - 1),
	       (unsigned long long)len, cnt,
	       c->ext.unwritten ? " [unwritten]" : "");
	return 0;
}

static int stat_ext_cb(const struct fext *e, void *priv)
{
	struct stat_ctx *c = priv;

	c->ext = *e;
	c->extents++;
	return refcount_runs(e->pblk, e->len, stat_run_cb, c) ? 1 : 0;
}

int impl_stat(struct cmd_args *a)
{
	struct ext2_inode_large inode;
	struct stat_ctx c;
	ext2_ino_t ino;
	errcode_t err;
	int big;

	if (resolve_path(a, a->argv[0], &ino) || read_inode(a, ino, &inode))
		return 1;
	big = EXT2_INODE_SIZE(sh.fs->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	      inode.i_extra_isize >= 24;
	printf("Inode: %u   Type: %s   Mode: %04o   Flags: 0x%x\n", ino,
	       inode_type_name(inode.i_mode), inode.i_mode & 07777,
	       inode.i_flags);
	printf("Generation: %u   Version: 0x%08x\n", inode.i_generation,
	       inode.osd1.linux1.l_i_version);
	printf("User: %5u   Group: %5u   Size: %llu\n", inode_uid(inode),
	       inode_gid(inode), (unsigned long long)EXT2_I_SIZE(&inode));
	printf("Links: %u   Blockcount: %llu\n", inode.i_links_count,
	       (unsigned long long)ext2fs_get_stat_i_blocks(sh.fs,
					(struct ext2_inode *)&inode));
	printf("File ACL: %llu\n",
	       (unsigned long long)ext2fs_file_acl_block(sh.fs,
					(struct ext2_inode *)&inode));
	print_time(" ctime:", inode.i_ctime, inode.i_ctime_extra, big);
	print_time(" atime:", inode.i_atime, inode.i_atime_extra, big);
	print_time(" mtime:", inode.i_mtime, inode.i_mtime_extra, big);
	if (big)
		print_time("crtime:", inode.i_crtime, inode.i_crtime_extra, 1);
	if (inode.i_dtime)
		print_time(" dtime:", inode.i_dtime, 0, 0);
	stat_extra(ino, &inode);
	if (LINUX_S_ISLNK(inode.i_mode) &&
	    ext2fs_is_fast_symlink((struct ext2_inode *)&inode)) {
		size_t max = sizeof(inode.i_block);

		if (EXT2_I_SIZE(&inode) < max)
			max = EXT2_I_SIZE(&inode);
		printf("Fast link dest: \"%s\"\n",
		       escn((char *)inode.i_block,
			    strnlen((char *)inode.i_block, max)));
		return 0;
	}
	if (inode.i_flags & EXT4_INLINE_DATA_FL) {
		printf("Inline data\n");
		return 0;
	}
	printf("%s:\n", (inode.i_flags & EXT4_EXTENTS_FL) ? "EXTENTS" : "BLOCKS");
	memset(&c, 0, sizeof(c));
	err = walk_extents(ino, &inode, stat_ext_cb, &c);
	if (err)
		return cmd_err(a, err, "walking the extents of inode %u", ino);
	if (!c.extents)
		printf("  (none)\n");
	return 0;
}

/* ----- cat, dump ----- */

/*
 * Resolve PATH to a regular file and open it for reading: before any
 * host file is opened, so a missing path or a directory leaves it as it
 * was.  Other types are refused: a fast symlink's or a device's i_block
 * holds no block numbers.
 */
static int open_source(struct cmd_args *a, const char *path,
		       ext2_file_t *file)
{
	struct ext2_inode_large inode;
	ext2_ino_t ino;
	errcode_t err;

	if (resolve_path(a, path, &ino) || read_inode(a, ino, &inode))
		return 1;
	err = extref_access(sh.xfs, ino, EXTREF_MAY_READ);
	if (err)
		return cmd_err(a, err, "%s", path);
	if (LINUX_S_ISDIR(inode.i_mode))
		return cmd_fail(a, "%s: %s", path,
				error_message(EXTREF_ERR_IS_DIR));
	if (!LINUX_S_ISREG(inode.i_mode))
		return cmd_fail(a, "%s: %s", path,
				error_message(EXTREF_ERR_NOT_REG));
	err = ext2fs_file_open2(sh.fs, ino, (struct ext2_inode *)&inode, 0,
				file);
	if (err)
		return cmd_err(a, err, "%s", path);
	return 0;
}

/* Copy the open file to out; closes the file. */
static int copy_out(struct cmd_args *a, const char *path, ext2_file_t file,
		    FILE *out, const char *outname)
{
	errcode_t err;
	char *buf = malloc(65536);
	unsigned int got;
	int ret = 0;

	if (!buf)
		ret = cmd_fail(a, "out of memory");
	while (!ret) {
		err = ext2fs_file_read(file, buf, 65536, &got);
		if (err) {
			ret = cmd_err(a, err, "reading %s", path);
			break;
		}
		if (!got)
			break;
		if (fwrite(buf, 1, got, out) != got)
			ret = cmd_fail(a, "%s: %s", outname, strerror(errno));
	}
	err = ext2fs_file_close(file);
	if (err && !ret)
		ret = cmd_err(a, err, "closing %s", path);
	free(buf);
	return ret;
}

int impl_cat(struct cmd_args *a)
{
	ext2_file_t file;
	int ret;

	if (open_source(a, a->argv[0], &file))
		return 1;
	ret = copy_out(a, a->argv[0], file, stdout, "stdout");
	fflush(stdout);
	return ret;
}

/*
 * dump -p: the image file's owner, mode (no set-id bit without
 * --same-permissions) and times on the host file; --xattrs: its
 * extended attributes.
 */
static int dump_meta(struct cmd_args *a, FILE *out, struct host_meta *hm)
{
	struct ext2_inode_large inode;
	ext2_ino_t ino;

	if (fflush(out))
		return cmd_fail(a, "%s: %s", a->argv[1], strerror(errno));
	if (resolve_path(a, a->argv[0], &ino) || read_inode(a, ino, &inode))
		return 1;
	set_host_meta(a, hm, ino, &inode, fileno(out), a->argv[1]);
	host_meta_report(a, hm);
	return 0;
}

int impl_dump(struct cmd_args *a)
{
	struct host_meta hm;
	ext2_file_t file;
	FILE *out;
	int ret;

	if (open_source(a, a->argv[0], &file))
		return 1;
	out = fopen(a->argv[1], "wb");
	if (!out) {
		ext2fs_file_close(file);
		return cmd_fail(a, "%s: %s", a->argv[1], strerror(errno));
	}
	ret = copy_out(a, a->argv[0], file, out, a->argv[1]);
	host_meta_init(&hm, a, 0);
	if (!ret && hm.flags)
		ret = dump_meta(a, out, &hm);
	if (fclose(out) && !ret)
		ret = cmd_fail(a, "%s: %s", a->argv[1], strerror(errno));
	return ret;
}
