/*
 * args_value.c --- one option of a build set, its value checked
 * (extref_build_args_set): numbers in range, a UUID, a label cut to
 * 16 bytes, the dedupe mode, a file_contexts file libselinux reads,
 * -d's sources counted; -E, -O and the mke2fs options passed on by
 * args_ext.c and args_mke2fs.c.
 */
#include <string.h>

#include <uuid/uuid.h>

#include "extref.h"
#include "args_int.h"

#define BAD	EXTREF_ERR_BUILD_ARG

static errcode_t digits(const char *arg, unsigned long long min,
			unsigned long long max, const char *what, char *why,
			size_t len)
{
	unsigned long long v;

	if (extref_build_parse_uint(arg, max, &v) || v < min)
		return xr_args_why(why, len, BAD, "invalid %s '%s' (must be "
				   "%llu to %llu)", what, arg, min, max);
	return 0;
}

static errcode_t block_size(struct extref_build_args *a, const char *arg,
			    char *why, size_t len)
{
	unsigned long long v;

	if (extref_build_parse_uint(arg, 65536, &v) ||
	    (v != 1024 && v != 2048 && v != 4096))
		return xr_args_why(why, len, BAD, "invalid block size '%s' "
				   "(must be 1024, 2048 or 4096)", arg);
	a->blocksize = (unsigned int)v;
	a->bs_chosen = 1;
	return 0;
}

static errcode_t inode_size(const char *arg, char *why, size_t len)
{
	unsigned long long v;

	if (extref_build_parse_uint(arg, 65536, &v) ||
	    v < EXT2_GOOD_OLD_INODE_SIZE || (v & (v - 1)))
		return xr_args_why(why, len, BAD, "invalid inode size '%s' "
				   "(must be a power of 2 from 128 to the "
				   "block size)", arg);
	return 0;
}

static errcode_t uuid_arg(const char *arg, char *why, size_t len)
{
	uuid_t u;

	if (!strcmp(arg, "random") || !strcmp(arg, "time") ||
	    !strcmp(arg, "null") || !strcmp(arg, "clear"))
		return 0;
	if (uuid_parse(arg, u))
		return xr_args_why(why, len, BAD, "invalid UUID '%s'", arg);
	return 0;
}

/* -L: longer than an ext4 label is cut (the caller warns, as mke2fs). */
static void label(struct extref_build_args *a, const char *arg)
{
	a->label = arg;
	if (strlen(arg) <= EXTREF_BUILD_LABEL_MAX)
		return;
	memcpy(a->label_cut, arg, EXTREF_BUILD_LABEL_MAX);
	a->label_cut[EXTREF_BUILD_LABEL_MAX] = '\0';
	a->label = a->label_cut;
}

static errcode_t dedup_mode(struct extref_build_args *a, const char *arg,
			    char *why, size_t len)
{
	if (!strcmp(arg, "none"))
		a->dedup = EXTREF_DEDUPE_NONE;
	else if (!strcmp(arg, "file"))
		a->dedup = EXTREF_DEDUPE_FILE;
	else if (!strcmp(arg, "block"))
		a->dedup = EXTREF_DEDUPE_BLOCK;
	else
		return xr_args_why(why, len, BAD, "invalid --dedup mode '%s' "
				   "(none, file or block)", arg);
	return 0;
}

/* One more -d; a->source stays the first. */
static errcode_t source(struct extref_build_args *a, const char *arg,
			char *why, size_t len)
{
	if (a->nsources == EXTREF_BUILD_MAX_SOURCES)
		return xr_args_why(why, len, BAD, "-d given more than %d "
				   "times: name the layers in a list (-d "
				   "layers:LIST)", EXTREF_BUILD_MAX_SOURCES);
	a->sources[a->nsources++] = arg;
	if (!a->source)
		a->source = arg;
	return 0;
}

static errcode_t headroom(struct extref_build_args *a, const char *arg,
			  char *why, size_t len)
{
	unsigned long long v;

	if (extref_build_parse_uint(arg, 1000, &v))
		return xr_args_why(why, len, BAD, "invalid --headroom '%s' (a "
				   "percentage from 0 to 1000)", arg);
	a->headroom = (unsigned int)v;
	return 0;
}

/* --file-contexts FILE must parse now (libselinux missing: refused). */
static errcode_t contexts(struct extref_build_args *a, const char *file,
			  char *why, size_t len)
{
	extref_labels_t h = NULL;
	const char *lib = NULL;
	errcode_t err = extref_labels_open(file, &h, &lib);

	if (err == EXTREF_ERR_SELINUX_LIB)
		return xr_args_why(why, len, err, "%s: %s", file, lib);
	if (err)
		return xr_args_why(why, len, err, "%s: not a readable "
				   "file_contexts file: %s", file,
				   strerror((int)err));
	extref_labels_close(h);
	a->file_contexts = file;
	return 0;
}

/* --size=SIZE, or --size=auto: sized from -d even on an existing image. */
static void size_opt(struct extref_build_args *a, const char *arg)
{
	if (!strcmp(arg, "auto"))
		a->size_auto = 1;
	else
		a->size_arg = arg;
}

/* The options that take no value, or take it unchecked. */
static int plain(struct extref_build_args *a, int opt, const char *arg)
{
	switch (opt) {
	case 'F': a->force = 1; break;
	case 'q': a->quiet = 1; break;
	case 'L': label(a, arg); break;
	case EXTREF_ARG_CONVERT: a->convert = 1; break;
	case EXTREF_ARG_ALL_ROOT: a->all_root = 1; break;
	case EXTREF_ARG_UPDATE: a->update = 1; break;
	case EXTREF_ARG_AT: a->at = arg; break;
	case EXTREF_ARG_DELETE: a->delete_extra = 1; break;
	case EXTREF_ARG_GROW: a->grow = 1; break;
	case EXTREF_ARG_SHRINK: a->shrink = 1; break;
	case EXTREF_ARG_VERIFY: a->verify = 1; break;
	case EXTREF_ARG_ATOMIC: a->atomic = 1; break;
	case EXTREF_ARG_SIZE: size_opt(a, arg); break;
	default: return 0;
	}
	return 1;
}

errcode_t extref_build_args_set(struct extref_build_args *a, int opt,
				const char *arg, char *why, size_t len)
{
	errcode_t err;
	int taken;

	err = xr_args_mke2fs(a, opt, arg, why, len, &taken);
	if (taken || plain(a, opt, arg))
		return err;
	switch (opt) {
	case 'b': return block_size(a, arg, why, len);
	case 'N':
		a->inodes = arg;
		return digits(arg, 1, 0xffffffffULL, "inode count", why, len);
	case 'i':
		a->inode_ratio = arg;
		return digits(arg, 1024, 67108864, "bytes-per-inode", why, len);
	case 'I':
		a->inode_size = arg;
		return inode_size(arg, why, len);
	case 'U':
		a->uuid = arg;
		return uuid_arg(arg, why, len);
	case 'E': return xr_args_ext(a, arg, why, len);
	case 'O': return xr_args_features(a, arg, why, len);
	case 'd': return source(a, arg, why, len);
	case EXTREF_ARG_DEDUP: return dedup_mode(a, arg, why, len);
	case EXTREF_ARG_HEADROOM: return headroom(a, arg, why, len);
	case EXTREF_ARG_FILE_CONTEXTS: return contexts(a, arg, why, len);
	}
	return xr_args_why(why, len, EXT2_ET_INVALID_ARGUMENT,
			   "invalid option %d", opt);
}
