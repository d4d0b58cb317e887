/*
 * args_check.c --- a build's options against each other, once all are
 * set (extref_build_args_check): what --convert, --shrink, --update,
 * -n and -z each take; --update's source looked at; the dedupe mode's
 * default; SOURCE_DATE_EPOCH read from the environment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "extref.h"
#include "args_int.h"

#define CONFLICT	EXTREF_ERR_BUILD_CONFLICT

/*
 * --dedup's mode when not given: block for a -d build (on the trees
 * measured it costs no more time than none, and stores less),
 * none for --convert (there it reads every data block of the image).
 */
static int dedup_default(const struct extref_build_args *a)
{
	return a->source && !a->update ? EXTREF_DEDUPE_BLOCK
				       : EXTREF_DEDUPE_NONE;
}

/* --update -d SOURCE: a directory, or an archive (one more layer). */
static errcode_t update_check(const struct extref_build_args *a, char *why,
			      size_t len)
{
	struct stat st;

	if (!a->source)
		return xr_args_why(why, len, CONFLICT, "--update needs -d SOURCE");
	if (a->convert || a->dedup || a->size_arg || a->file_contexts)
		return xr_args_why(why, len, CONFLICT, "--update takes only -d "
			"SOURCE, --at PATH, --delete, --all-root and -q (it "
			"always shares what the image holds)");
	if (a->nsources > 1)
		return xr_args_why(why, len, CONFLICT, "--update takes one -d "
				   "(one layer at a time)");
	if (stat(a->source, &st) < 0)
		return xr_args_why(why, len, errno, "%s: %s", a->source,
				   strerror(errno));
	if (S_ISREG(st.st_mode) && (a->at || a->delete_extra))
		return xr_args_why(why, len, CONFLICT, "%s: a layer applies at "
			"the image's root, its whiteouts delete: no --at, no "
			"--delete", a->source);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return xr_args_why(why, len, EXTREF_ERR_SOURCE_TYPE, "%s: not "
			"a directory nor an archive (--update reads either)",
			a->source);
	if (a->at && a->at[0] != '/')
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG, "--at '%s': "
				   "the path must start with /", a->at);
	return 0;
}

/* What a build from -d (or a plain one, or --convert) takes. */
static errcode_t build_check(const struct extref_build_args *a, char *why,
			     size_t len)
{
	if (a->dedup && !a->convert && !a->source)
		return xr_args_why(why, len, CONFLICT, "--dedup needs -d "
				   "SOURCE or --convert");
	if (a->convert && a->source)
		return xr_args_why(why, len, CONFLICT, "--convert and -d "
				   "cannot be combined");
	if (a->convert && a->size_arg)
		return xr_args_why(why, len, CONFLICT, "--convert takes no SIZE");
	if (a->convert && a->file_contexts)
		return xr_args_why(why, len, CONFLICT, "--file-contexts labels "
				   "what the build creates: not with --convert");
	return 0;
}

/* The options that need --update, and what the others refuse. */
static errcode_t kinds_check(const struct extref_build_args *a, char *why,
			     size_t len)
{
	if (a->size_auto && !a->source)
		return xr_args_why(why, len, CONFLICT, "--size=auto sizes the "
				   "image from -d SOURCE: it needs -d");
	if (!a->image || !a->image[0])
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG,
				   "empty IMAGE name");
	if (a->at && !a->update)
		return xr_args_why(why, len, CONFLICT, "--at needs --update");
	if (a->delete_extra && !a->update)
		return xr_args_why(why, len, CONFLICT, "--delete needs --update");
	if ((a->verify || a->grow || a->atomic) && !a->update)
		return xr_args_why(why, len, CONFLICT, "--%s needs --update",
				   a->grow ? "grow" : a->atomic ? "atomic" :
				   "verify");
	if (a->shrink && !a->convert && (a->source || a->size_arg))
		return xr_args_why(why, len, CONFLICT, "--shrink cuts an "
				   "existing image: no -d, no SIZE");
	if (a->noaction && (a->convert || a->shrink || a->update))
		return xr_args_why(why, len, CONFLICT, "-n shows what mke2fs "
			"would lay out: not with --convert, --shrink or "
			"--update");
	if (a->undo && (a->convert || a->shrink || a->update))
		return xr_args_why(why, len, CONFLICT, "-z makes an image's "
			"undo file: not with --convert, --shrink or --update "
			"(they keep their own)");
	return 0;
}

/* SOURCE_DATE_EPOCH: ext4 timestamps reach the year 2446 with
 * extra_isize. */
static errcode_t epoch(struct extref_build_args *a, char *why, size_t len)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	unsigned long long v;

	if (!s)
		return 0;
	if (extref_build_parse_uint(s, 0x3ffffffffULL, &v))
		return xr_args_why(why, len, EXTREF_ERR_BUILD_ARG, "invalid "
			"SOURCE_DATE_EPOCH '%s' (must be a decimal integer of "
			"seconds since 1970)", s);
	a->have_epoch = 1;
	a->epoch = (long long)v;
	return 0;
}

errcode_t extref_build_args_check(struct extref_build_args *a, char *why,
				  size_t len)
{
	errcode_t err;

	if (a->dedup < 0)
		a->dedup = dedup_default(a);
	err = kinds_check(a, why, len);
	if (!err)
		err = a->update ? update_check(a, why, len) :
				  build_check(a, why, len);
	return err ? err : epoch(a, why, len);
}
