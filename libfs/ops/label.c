/*
 * label.c --- SELinux security labels (security.selinux) of new inodes.
 *
 * A label is a security context string, user:role:type:level.  Where the
 * host has a policy loaded, libselinux's security_check_context decides
 * whether it is valid; elsewhere (a build machine without SELinux, or
 * without libselinux, which is opened at the first check: selinux_dl.c)
 * only its syntax is checked.  It is stored as the kernel and setfiles store
 * it: the string with its terminating NUL.
 */
#include <string.h>
#include "selinux_dl.h"
#include "extref_ops_int.h"

#define LABEL_MAX	4095	/* bytes, without the NUL */

/* One field of a context: non-empty, letters, digits, '_', '.', '-'. */
static const char *label_field(const char *p)
{
	const char *start = p;

	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	       (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' ||
	       *p == '-')
		p++;
	return p == start ? NULL : p;
}

/* user:role:type:level, the level of MLS ranges and categories
 * (s0-s0:c0.c1023) made of fields, ':', ',' and '-'. */
static int label_syntax_ok(const char *label)
{
	const char *p = label;
	int i;

	for (i = 0; i < 3; i++) {
		p = label_field(p);
		if (!p || *p != ':')
			return 0;
		p++;
	}
	for (;;) {
		p = label_field(p);
		if (!p)
			return 0;
		if (!*p)
			return 1;
		if (*p != ':' && *p != ',' && *p != '-')
			return 0;
		p++;
	}
}

errcode_t extref_label_check(const char *label)
{
	size_t i, n;

	if (!label)
		return EXT2_ET_INVALID_ARGUMENT;
	n = strnlen(label, LABEL_MAX + 1);
	if (n == 0 || n > LABEL_MAX)
		return EXTREF_ERR_BAD_LABEL;
	for (i = 0; i < n; i++)
		if ((unsigned char)label[i] <= ' ' ||
		    (unsigned char)label[i] >= 0x7f)
			return EXTREF_ERR_BAD_LABEL;
	/* without libselinux there is no policy to ask */
	if (!xr_selinux_load(NULL) && is_selinux_enabled() > 0)
		return security_check_context(label) < 0 ?
		       EXTREF_ERR_BAD_LABEL : 0;
	return label_syntax_ok(label) ? 0 : EXTREF_ERR_BAD_LABEL;
}

errcode_t xr_label_set(ext2_filsys fs, ext2_ino_t ino, const char *label)
{
	struct ext2_xattr_handle *h = NULL;
	errcode_t err;

	err = ext2fs_xattrs_open(fs, ino, &h);
	if (!err)
		err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattr_set(h, "security.selinux", label,
				       strlen(label) + 1);
	if (h) {
		errcode_t e2 = ext2fs_xattrs_close(&h);

		if (!err)
			err = e2;
	}
	return err;
}
