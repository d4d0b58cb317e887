/*
 * xattr.c --- extended attributes: setxattr, getxattr, listxattr
 * (libext2fs's xattr handle API).
 *
 * Values print as text; bytes that are not printable ASCII, and '\' and
 * '"', are escaped as \ooo (octal).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

void print_escaped(const char *v, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char ch = v[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '\\' && ch != '"')
			putchar(ch);
		else
			printf("\\%03o", ch);
	}
}

static int open_xattrs(struct cmd_args *a, const char *path, ext2_ino_t *ino,
		       struct ext2_xattr_handle **h)
{
	errcode_t err;

	if (resolve_path(a, path, ino))
		return 1;
	err = ext2fs_xattrs_open(sh.fs, *ino, h);
	if (err)
		return cmd_err(a, err, "%s", path);
	err = ext2fs_xattrs_read(*h);
	if (err) {
		ext2fs_xattrs_close(h);
		return cmd_err(a, err, "reading the attributes of %s", path);
	}
	return 0;
}

/* The value of -f HOSTFILE (at most 64 KiB, the xattr limit), malloc'd. */
static int read_value(struct cmd_args *a, const char *host, char **val,
		      size_t *len)
{
	FILE *f = fopen(host, "rb");

	if (!f)
		return cmd_fail(a, "%s: %s", host, strerror(errno));
	*val = malloc(65537);
	*len = *val ? fread(*val, 1, 65537, f) : 0;
	fclose(f);
	if (!*val)
		return cmd_fail(a, "out of memory");
	if (*len > 65536) {
		free(*val);
		return cmd_fail(a, "%s: longer than 64 KiB", host);
	}
	return 0;
}

int impl_setxattr(struct cmd_args *a)
{
	const char *host = a->optarg['f'];
	char *val = NULL;
	size_t len = 0;
	ext2_ino_t ino;
	errcode_t err;

	if ((a->argc == 3) == (host != NULL))
		return cmd_usage(a);
	if (resolve_path(a, a->argv[0], &ino))
		return 1;
	if (host && read_value(a, host, &val, &len))
		return 1;
	err = extref_setxattr(sh.xfs, ino, a->argv[1],
			      host ? val : a->argv[2],
			      host ? len : strlen(a->argv[2]));
	free(val);
	if (err)
		return cmd_err(a, err, "%s: %s", a->argv[0], a->argv[1]);
	return 0;
}

int impl_rmxattr(struct cmd_args *a)
{
	ext2_ino_t ino;
	errcode_t err;

	if (resolve_path(a, a->argv[0], &ino))
		return 1;
	err = extref_removexattr(sh.xfs, ino, a->argv[1]);
	if (err == EXT2_ET_EA_KEY_NOT_FOUND)
		return cmd_fail(a, "%s: %s: no such attribute", a->argv[0],
				a->argv[1]);
	if (err)
		return cmd_err(a, err, "%s: %s", a->argv[0], a->argv[1]);
	return 0;
}

int impl_getxattr(struct cmd_args *a)
{
	struct ext2_xattr_handle *h;
	ext2_ino_t ino;
	errcode_t err;
	void *val = NULL;
	size_t len = 0;
	int ret = 0;

	if (open_xattrs(a, a->argv[0], &ino, &h))
		return 1;
	err = ext2fs_xattr_get(h, a->argv[1], &val, &len);
	if (err == EXT2_ET_EA_KEY_NOT_FOUND) {
		ret = cmd_fail(a, "%s: %s: no such attribute", a->argv[0],
			       a->argv[1]);
	} else if (err) {
		ret = cmd_err(a, err, "%s: %s", a->argv[0], a->argv[1]);
	} else {
		print_escaped(val, len);
		putchar('\n');
		ext2fs_free_mem(&val);
	}
	ext2fs_xattrs_close(&h);
	return ret;
}

static int list_cb(char *name, char *value, size_t value_len, void *priv)
{
	(void)priv;
	printf("%s (%zu) = \"", esc(name), value_len);
	print_escaped(value, value_len);
	printf("\"\n");
	return 0;
}

int impl_listxattr(struct cmd_args *a)
{
	struct ext2_xattr_handle *h;
	ext2_ino_t ino;
	errcode_t err;
	int ret = 0;

	if (open_xattrs(a, a->argv[0], &ino, &h))
		return 1;
	err = ext2fs_xattrs_iterate(h, list_cb, NULL);
	if (err)
		ret = cmd_err(a, err, "%s", a->argv[0]);
	ext2fs_xattrs_close(&h);
	return ret;
}
