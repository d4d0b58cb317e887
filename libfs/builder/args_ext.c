/*
 * args_ext.c --- a build's -E and -O arguments, checked.
 *
 * Both are checked completely before anything touches the image, so that
 * a bad option leaves an existing file as it was.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <e2p/e2p.h>
#include <uuid/uuid.h>

#include "extref.h"
#include "args_int.h"

/* Append item to a comma-separated list held in *list (malloc'd). */
static errcode_t list_append(char **list, const char *item, char *why,
			     size_t len)
{
	size_t old = *list ? strlen(*list) : 0;
	char *p = realloc(*list, old + strlen(item) + 2);

	if (!p)
		return xr_args_why(why, len, EXT2_ET_NO_MEMORY,
				   "out of memory");
	if (old)
		p[old++] = ',';
	strcpy(p + old, item);
	*list = p;
	return 0;
}

static int all_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

/* quotatype=TYPE[:TYPE...], TYPE usrquota, grpquota or prjquota (mke2fs). */
static errcode_t check_quotatype(const char *val, char *why, size_t len)
{
	const char *p = val;

	if (!val || !*val)
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
				   "invalid quotatype '' (usrquota, grpquota "
				   "or prjquota, separated by ':')");
	while (*p) {
		size_t n = strcspn(p, ":");

		if (!(n == 8 && (!strncmp(p, "usrquota", 8) ||
				 !strncmp(p, "grpquota", 8) ||
				 !strncmp(p, "prjquota", 8))))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
				"invalid quotatype '%s' (usrquota, grpquota or "
				"prjquota, separated by ':')", val);
		p += n;
		if (*p == ':' && *++p == 0)
			return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
					   "invalid quotatype '%s'", val);
	}
	return 0;
}

/* Extended options mke2fs takes that a build passes on unchecked
 * (mke2fs checks their values): NULL-ended. */
static const char *const pass_ext[] = {
	"stride", "stripe_width", "stripe-width", "resize",
	"packed_meta_blocks", "num_backup_sb", "test_fs", "discard",
	"nodiscard", "lazy_journal_init", "assume_storage_prezeroed",
	"mmp_update_interval", "encoding", "encoding_flags",
	"orphan_file_size", "no_copy_xattrs", NULL
};

/* Refused, with the reason. */
static const struct {
	const char	*key, *why;
} refused_ext[] = {
	{ "offset", "the extref tools open an image from its first byte "
		    "(put the filesystem in a partition, or a loop device "
		    "with --offset)" },
	{ "android_sparse", "the extref tools read and write a plain "
			    "image" },
};

static int is_key(const char *opt, size_t klen, const char *key)
{
	return strlen(key) == klen && !strncmp(opt, key, klen);
}

/* root_owner[=UID:GID]: bare, the caller's own uid and gid, as mke2fs. */
static errcode_t check_owner(const char *val, char *why, size_t len)
{
	const char *colon = val ? strchr(val, ':') : NULL;

	if (val && (!colon || !all_digits(val, colon - val) ||
		    !all_digits(colon + 1, strlen(colon + 1))))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
				   "invalid root_owner '%s' (must be "
				   "UID:GID)", val);
	return 0;
}

/* The keys the build checks itself; -1: not one of them. */
static errcode_t check_own(struct extref_build_args *a, const char *opt,
			   size_t klen, const char *val, char *why, size_t len)
{
	uuid_t u;

	if (is_key(opt, klen, "hash_seed")) {
		if (!val || uuid_parse(val, u))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
					   "invalid hash_seed '%s' (must be a "
					   "UUID)", val ? val : "");
	} else if (is_key(opt, klen, "root_owner")) {
		a->root_owner = 1;
		return check_owner(val, why, len);
	} else if (is_key(opt, klen, "lazy_itable_init")) {
		if (val && strcmp(val, "0") && strcmp(val, "1"))
			return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
					   "invalid lazy_itable_init '%s' "
					   "(must be 0 or 1)", val);
	} else if (is_key(opt, klen, "no_copy_xattrs")) {
		a->no_xattrs = 1;	/* the build's, as mke2fs's -d */
	} else if (is_key(opt, klen, "quotatype")) {
		return check_quotatype(val, why, len);
	} else {
		return -1;
	}
	return 0;
}

static errcode_t check_one_ext(struct extref_build_args *a, const char *opt,
			       char *why, size_t len)
{
	const char *val = strchr(opt, '=');
	size_t klen = val ? (size_t)(val - opt) : strlen(opt);
	errcode_t err;

	if (val)
		val++;
	for (size_t i = 0; i < sizeof(refused_ext) / sizeof(refused_ext[0]);
	     i++)
		if (is_key(opt, klen, refused_ext[i].key))
			return xr_args_why(why, len,
				EXTREF_ERR_BUILD_UNSUPPORTED, "extended option "
				"'%.*s' is not supported: %s", (int)klen, opt,
				refused_ext[i].why);
	err = check_own(a, opt, klen, val, why, len);
	if (err != (errcode_t)-1)
		return err;
	for (size_t i = 0; pass_ext[i]; i++)
		if (is_key(opt, klen, pass_ext[i]))
			return 0;
	return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG, "unknown extended "
			   "option '%.*s' (see mkfs.extref(8): those of "
			   "mke2fs(8) but offset and android_sparse)",
			   (int)klen, opt);
}

/* Each item of arg (split at any of seps) checked, then appended. */
static errcode_t each(struct extref_build_args *a, const char *arg,
		      const char *seps, char **list,
		      errcode_t (*check)(struct extref_build_args *,
					 const char *, char *, size_t),
		      char *why, size_t len)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	errcode_t err = 0;

	if (!copy)
		return xr_args_why(why, len, EXT2_ET_NO_MEMORY,
				   "out of memory");
	for (tok = strtok_r(copy, seps, &save); tok && !err;
	     tok = strtok_r(NULL, seps, &save)) {
		err = check(a, tok, why, len);
		if (!err)
			err = list_append(list, tok, why, len);
	}
	free(copy);
	return err;
}

errcode_t xr_args_ext(struct extref_build_args *a, const char *arg,
		      char *why, size_t len)
{
	return each(a, arg, ",", &a->ext_opts, check_one_ext, why, len);
}

static int same(const char *a, const char *b)
{
	return !strcasecmp(a, b);
}

static errcode_t check_one_feature(struct extref_build_args *a,
				   const char *tok, char *why, size_t len)
{
	int clear = 0, compat;
	unsigned int mask;
	const char *name = tok;

	(void)a;
	if (*name == '^' || *name == '-') {
		clear = 1;
		name++;
	} else if (*name == '+') {
		name++;
	}
	if (same(name, "none") || same(name, "clear"))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				   "feature list '%s' would turn off extent, "
				   "which the extref toolkit requires", tok);
	if (clear && (same(name, "extent") || same(name, "extents")))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				   "feature '%s' is not supported: the extref "
				   "toolkit requires extents", tok);
	if (e2p_string2feature((char *)name, &compat, &mask))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
				   "unknown feature '%s'", name);
	if (!clear && same(name, "bigalloc"))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				   "feature '%s' is not supported by the "
				   "extref toolkit yet", name);
	if (!clear && same(name, "shared_blocks"))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_UNSUPPORTED,
				   "feature 'shared_blocks' is set by "
				   "mkfs.extref itself; do not give it with -O");
	return 0;
}

/* e2p separates features with commas or white space. */
errcode_t xr_args_features(struct extref_build_args *a, const char *arg,
			   char *why, size_t len)
{
	return each(a, arg, ", \t\n", &a->features, check_one_feature, why,
		    len);
}
