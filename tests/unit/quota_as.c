/*
 * quota_as.c --- one operation through the library with an identity set
 * (extref_set_identity), for the quota limit tests until the shell has
 * an --as option.
 *
 * usage: quota_as IMAGE UID GID CAPS OP ARGS...
 *   OP: pwrite PATH OFF LEN | unshare PATH | clone SRC SOFF DST DOFF LEN
 *       | reflink SRC DIR NAME | reflink_p SRC DIR NAME | create DIR NAME
 *       | mkdir DIR NAME
 *       | chown PATH UID GID
 * CAPS: 0, or a list holding "resource" for CAP_SYS_RESOURCE and
 * "chown" for CAP_CHOWN.  Paths are absolute.
 * Exit 0 on success, 3 on EDQUOT (EXTREF_ERR_DQUOT), 1 on another error
 * (message on stderr), 2 on usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "extref_ops.h"
#include "quota/xr_quota.h"
#include "ops/extref_ops_int.h"

static errcode_t ino_of(extref_fs_t xfs, const char *path, ext2_ino_t *ino)
{
	return ext2fs_namei(extref_fs_ext2(xfs), EXT2_ROOT_INO, EXT2_ROOT_INO,
			    path, ino);
}

static __u64 num(const char *s)
{
	return strtoull(s, NULL, 0);
}

static errcode_t do_chown(extref_fs_t xfs, ext2_ino_t ino, __u32 uid,
			  __u32 gid)
{
	ext2_filsys fs = extref_fs_ext2(xfs);
	struct ext2_inode in;
	errcode_t err = ext2fs_read_inode(fs, ino, &in);

	if (!err)
		err = xr_quota_transfer(xfs, ino, &in, uid, gid);
	if (err)
		return err;
	in.i_uid = uid & 0xffff;
	ext2fs_set_i_uid_high(in, uid >> 16);
	in.i_gid = gid & 0xffff;
	ext2fs_set_i_gid_high(in, gid >> 16);
	err = ext2fs_write_inode(fs, ino, &in);
	return err ? err : xr_quota_flush(fs);
}

static errcode_t run(extref_fs_t xfs, const struct extref_cred *c, int n,
		     char **v)
{
	ext2_ino_t a, b, ino;
	__u64 done;
	errcode_t err;

	if (n == 4 && !strcmp(v[0], "pwrite")) {
		__u64 len = num(v[3]);
		char *buf = malloc(len ? len : 1);

		if (!buf)
			return EXT2_ET_NO_MEMORY;
		memset(buf, 0x5a, len);
		err = ino_of(xfs, v[1], &a);
		if (!err)	/* one call: refused whole or done whole */
			err = extref_pwrite(xfs, a, num(v[2]), buf, len);
		free(buf);
		return err;
	}
	if (n == 2 && !strcmp(v[0], "unshare")) {
		struct ext2_inode in;

		/* The whole file (a length of 0 is EINVAL, as fallocate). */
		err = ino_of(xfs, v[1], &a);
		if (!err)
			err = ext2fs_read_inode(extref_fs_ext2(xfs), a, &in);
		return err ? err : extref_unshare(xfs, a, 0, EXT2_I_SIZE(&in));
	}
	if (n == 6 && !strcmp(v[0], "clone")) {
		err = ino_of(xfs, v[1], &a);
		if (!err)
			err = ino_of(xfs, v[3], &b);
		return err ? err : extref_clone_range(xfs, a, num(v[2]), b,
						      num(v[4]), num(v[5]),
						      &done);
	}
	if (n == 4 && !strncmp(v[0], "reflink", 7)) {
		err = ino_of(xfs, v[1], &a);
		if (!err)
			err = ino_of(xfs, v[2], &b);
		return err ? err : extref_reflink(xfs, a, b, v[3],
				strcmp(v[0], "reflink_p") ? 0 :
				EXTREF_REFLINK_PRESERVE, c, &ino);
	}
	if (n == 3 && !strcmp(v[0], "create")) {
		err = ino_of(xfs, v[1], &a);
		return err ? err : extref_create_file(xfs, a, v[2], 0644, c,
						      &ino);
	}
	if (n == 3 && !strcmp(v[0], "mkdir")) {
		err = ino_of(xfs, v[1], &a);
		return err ? err : extref_mkdir(xfs, a, v[2], &ino);
	}
	if (n == 4 && !strcmp(v[0], "chown")) {
		err = ino_of(xfs, v[1], &a);
		return err ? err : do_chown(xfs, a, num(v[2]), num(v[3]));
	}
	return EXT2_ET_INVALID_ARGUMENT;
}

int main(int argc, char **argv)
{
	struct extref_cred c;
	extref_fs_t xfs;
	errcode_t err, err2;

	if (argc < 7) {
		fprintf(stderr, "usage: quota_as IMAGE UID GID CAPS OP ARGS...\n");
		return 2;
	}
	memset(&c, 0, sizeof(c));
	c.uid = num(argv[2]);
	c.gid = num(argv[3]);
	c.umask = 022;
	c.caps = (strstr(argv[4], "resource") ? EXTREF_CAP_SYS_RESOURCE : 0) |
		 (strstr(argv[4], "chown") ? EXTREF_CAP_CHOWN : 0);
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, NULL);
	if (err) {
		fprintf(stderr, "quota_as: %s: %s\n", argv[1],
			error_message(err));
		return 1;
	}
	err = extref_set_identity(xfs, &c);
	if (!err)
		err = run(xfs, &c, argc - 5, argv + 5);
	err2 = extref_fs_close(xfs);
	if (!err)
		err = err2;
	if (err) {
		fprintf(stderr, "quota_as: %s: %s\n", argv[5],
			error_message(err));
		return err == EXTREF_ERR_DQUOT ? 3 : 1;
	}
	return 0;
}
