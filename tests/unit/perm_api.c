/*
 * perm_api.c --- the permission model through the library's calls:
 * extref_set_identity, extref_namei, extref_chmod, extref_chown,
 * extref_setxattr, extref_removexattr and a write, with and without an
 * identity.
 *
 * usage: perm_api IMAGE
 *   IMAGE holds /d (0700, root), /d/f (0644, root) and /g (0644, uid
 *   1000, gid 1000), made by tests/test_perm.py.
 *
 * Exit 0 when every call returns what the kernel's rules say; 1 with
 * "perm_api: CHECK: got ERROR" lines on stderr otherwise; 2 on usage.
 */
#include <stdio.h>
#include <string.h>
#include "extref_ops.h"

static int failures;

static void expect(const char *what, errcode_t got, errcode_t want)
{
	if (got == want)
		return;
	fprintf(stderr, "perm_api: %s: got %s (%ld), want %s (%ld)\n", what,
		got ? error_message(got) : "success", (long)got,
		want ? error_message(want) : "success", (long)want);
	failures++;
}

static void as_alice(extref_fs_t xfs, ext2_ino_t d, ext2_ino_t f,
		     ext2_ino_t g)
{
	struct extref_cred c;
	ext2_ino_t ino;

	memset(&c, 0, sizeof(c));
	c.ngroups = EXTREF_NGROUPS_MAX + 1;
	expect("set_identity, too many groups", extref_set_identity(xfs, &c),
	       EXT2_ET_INVALID_ARGUMENT);
	c.ngroups = 0;
	c.uid = c.gid = 1000;
	c.umask = 022;
	expect("set_identity", extref_set_identity(xfs, &c), 0);
	expect("identity is set", extref_identity(xfs) ? 0 : 1, 0);
	expect("namei through a 0700 directory",
	       extref_namei(xfs, EXT2_ROOT_INO, EXT2_ROOT_INO, "/d/f", 0,
			    &ino), EXTREF_ERR_ACCESS);
	expect("namei /g", extref_namei(xfs, EXT2_ROOT_INO, EXT2_ROOT_INO,
					"/g", 0, &ino), 0);
	expect("namei /g is g", ino == g ? 0 : 1, 0);
	expect("chmod of root's directory", extref_chmod(xfs, d, 0777),
	       EXTREF_ERR_PERM);
	expect("chmod of her file", extref_chmod(xfs, g, 0600), 0);
	expect("chown to root", extref_chown(xfs, g, 0, EXTREF_ID_UNCHANGED),
	       EXTREF_ERR_PERM);
	expect("chown to herself", extref_chown(xfs, g, 1000, 1000), 0);
	expect("setxattr user.a", extref_setxattr(xfs, g, "user.a", "v", 1),
	       0);
	expect("removexattr user.a", extref_removexattr(xfs, g, "user.a"), 0);
	expect("removexattr absent", extref_removexattr(xfs, g, "user.a"),
	       EXT2_ET_EA_KEY_NOT_FOUND);
	expect("setxattr trusted.a", extref_setxattr(xfs, g, "trusted.a", "v",
						     1), EXTREF_ERR_PERM);
	expect("pwrite of root's 0644 file", extref_pwrite(xfs, f, 0, "x", 1),
	       EXTREF_ERR_ACCESS);
	c.caps = EXTREF_CAP_DAC_OVERRIDE;
	expect("set_identity with dac_override", extref_set_identity(xfs, &c),
	       0);
	expect("pwrite with dac_override", extref_pwrite(xfs, f, 0, "x", 1),
	       0);
}

int main(int argc, char **argv)
{
	extref_fs_t xfs;
	ext2_ino_t d, f, g;
	errcode_t err;

	if (argc != 2) {
		fprintf(stderr, "usage: perm_api IMAGE\n");
		return 2;
	}
	add_error_table(&et_ext2_error_table);
	add_error_table(&et_xref_error_table);
	err = extref_fs_open(argv[1], EXTREF_OPEN_RW, &xfs, NULL);
	if (err) {
		fprintf(stderr, "perm_api: %s: %s\n", argv[1],
			error_message(err));
		return 1;
	}
	expect("no identity by default", extref_identity(xfs) ? 1 : 0, 0);
	expect("namei /d", extref_namei(xfs, EXT2_ROOT_INO, EXT2_ROOT_INO,
					"/d", 0, &d), 0);
	expect("namei /d/f", extref_namei(xfs, EXT2_ROOT_INO, EXT2_ROOT_INO,
					  "/d/f", 0, &f), 0);
	expect("namei /g", extref_namei(xfs, EXT2_ROOT_INO, EXT2_ROOT_INO,
					"/g", 0, &g), 0);
	if (!failures)
		as_alice(xfs, d, f, g);
	expect("set_identity NULL", extref_set_identity(xfs, NULL), 0);
	expect("pwrite without an identity", extref_pwrite(xfs, f, 1, "y", 1),
	       0);
	err = extref_fs_close(xfs);
	expect("close", err, 0);
	return failures ? 1 : 0;
}
