/*
 * options.c --- check the -E and -O arguments of mkfs.extref.
 *
 * Both are checked completely before anything touches the image, so that
 * a bad option leaves an existing file as it was.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <e2p/e2p.h>
#include <uuid/uuid.h>

#include "mkfs.h"

/* Append item to a comma-separated list held in *list (malloc'd). */
static void list_append(char **list, const char *item)
{
	size_t old = *list ? strlen(*list) : 0;
	char *p = realloc(*list, old + strlen(item) + 2);

	if (!p)
		fatal("out of memory");
	if (old)
		p[old++] = ',';
	strcpy(p + old, item);
	*list = p;
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
static void check_quotatype(const char *val)
{
	const char *p = val;

	if (!val || !*val)
		fatal("invalid quotatype '' (usrquota, grpquota or prjquota, "
		      "separated by ':')");
	while (*p) {
		size_t n = strcspn(p, ":");

		if (!(n == 8 && (!strncmp(p, "usrquota", 8) ||
				 !strncmp(p, "grpquota", 8) ||
				 !strncmp(p, "prjquota", 8))))
			fatal("invalid quotatype '%s' (usrquota, grpquota or "
			      "prjquota, separated by ':')", val);
		p += n;
		if (*p == ':' && *++p == 0)
			fatal("invalid quotatype '%s'", val);
	}
}

/* Extended options mke2fs takes that mkfs.extref passes on unchecked
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

static void check_flag01(const char *name, const char *val)
{
	if (val && strcmp(val, "0") && strcmp(val, "1"))
		fatal("invalid %s '%s' (must be 0 or 1)", name, val);
}

static void check_one_ext(struct mkfs_opts *o, const char *opt)
{
	const char *val = strchr(opt, '=');
	size_t klen = val ? (size_t)(val - opt) : strlen(opt);
	uuid_t u;

	if (val)
		val++;
	for (size_t i = 0; i < sizeof(refused_ext) / sizeof(refused_ext[0]);
	     i++)
		if (is_key(opt, klen, refused_ext[i].key))
			fatal("extended option '%.*s' is not supported: %s",
			      (int)klen, opt, refused_ext[i].why);
	if (is_key(opt, klen, "hash_seed")) {
		if (!val || uuid_parse(val, u))
			fatal("invalid hash_seed '%s' (must be a UUID)",
			      val ? val : "");
	} else if (is_key(opt, klen, "root_owner")) {
		const char *colon = val ? strchr(val, ':') : NULL;

		/* bare: the caller's own uid and gid, as mke2fs */
		if (val && (!colon || !all_digits(val, colon - val) ||
			    !all_digits(colon + 1, strlen(colon + 1))))
			fatal("invalid root_owner '%s' (must be UID:GID)",
			      val);
		o->root_owner = 1;
	} else if (is_key(opt, klen, "lazy_itable_init")) {
		check_flag01("lazy_itable_init", val);
	} else if (is_key(opt, klen, "no_copy_xattrs")) {
		o->no_xattrs = 1;	/* the build's, as mke2fs's -d */
	} else if (is_key(opt, klen, "quotatype")) {
		check_quotatype(val);
	} else {
		for (size_t i = 0; pass_ext[i]; i++)
			if (is_key(opt, klen, pass_ext[i]))
				return;
		fatal("unknown extended option '%.*s' (see mkfs.extref(8): "
		      "those of mke2fs(8) but offset and android_sparse)", (int)klen, opt);
	}
}

void check_ext_opts(struct mkfs_opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy)
		fatal("out of memory");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		check_one_ext(o, tok);
		list_append(&o->ext_opts, tok);
	}
	free(copy);
}

static int same(const char *a, const char *b)
{
	return !strcasecmp(a, b);
}

static void check_one_feature(char *tok)
{
	int clear = 0, compat;
	unsigned int mask;
	char *name = tok;

	if (*name == '^' || *name == '-') {
		clear = 1;
		name++;
	} else if (*name == '+') {
		name++;
	}
	if (same(name, "none") || same(name, "clear"))
		fatal("feature list '%s' would turn off extent, which the "
		      "extref toolkit requires", tok);
	if (clear && (same(name, "extent") || same(name, "extents")))
		fatal("feature '%s' is not supported: the extref toolkit "
		      "requires extents", tok);
	if (e2p_string2feature(name, &compat, &mask))
		fatal("unknown feature '%s'", name);
	if (!clear && same(name, "bigalloc"))
		fatal("feature '%s' is not supported by the extref toolkit "
		      "yet", name);
	if (!clear && same(name, "shared_blocks"))
		fatal("feature 'shared_blocks' is set by mkfs.extref itself; "
		      "do not give it with -O");
}

void check_features(struct mkfs_opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;

	if (!copy)
		fatal("out of memory");
	/* e2p separates features with commas or white space. */
	for (tok = strtok_r(copy, ", \t\n", &save); tok;
	     tok = strtok_r(NULL, ", \t\n", &save)) {
		check_one_feature(tok);
		list_append(&o->features, tok);
	}
	free(copy);
}
