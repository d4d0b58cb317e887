/*
 * label_lookup.c --- file_contexts lookups (extref_labels_open), through
 * libselinux, opened at the first use (selinux_dl.c).
 */
#include <errno.h>
#include "selinux_dl.h"
#include "extref_ops_int.h"

struct extref_labels {
	struct selabel_handle	*h;
};

errcode_t extref_labels_open(const char *file, extref_labels_t *ret,
			     const char **why)
{
	struct selinux_opt opt = { SELABEL_OPT_PATH, file };
	struct extref_labels *l;
	errcode_t err = xr_selinux_load(why);

	if (err)
		return err;
	err = ext2fs_get_memzero(sizeof(*l), &l);
	if (err)
		return err;
	errno = 0;
	l->h = selabel_open(SELABEL_CTX_FILE, &opt, 1);
	if (!l->h) {
		err = errno ? (errcode_t)errno : EINVAL;
		ext2fs_free_mem(&l);
		return err;
	}
	*ret = l;
	return 0;
}

errcode_t extref_labels_lookup(extref_labels_t l, const char *path,
			       __u16 mode, char **ctx)
{
	char *c;

	*ctx = NULL;
	if (selabel_lookup(l->h, &c, path, mode) < 0)
		return errno == ENOENT ? 0 : (errcode_t)(errno ? errno : EINVAL);
	*ctx = c;
	return 0;
}

void extref_labels_free_ctx(char *ctx)
{
	if (ctx)
		freecon(ctx);
}

void extref_labels_close(extref_labels_t l)
{
	if (!l)
		return;
	selabel_close(l->h);
	ext2fs_free_mem(&l);
}
