/*
 * names.c --- the one check of every name a source gives the builder: a
 * host directory's, an archive's and a layer's (an OCI layout's layers
 * are layers), another image's directory entries.  A name must be one
 * the kernel's lookup can reach (lookup_one_len's rules): not empty, not
 * "." or "..", no '/' or NUL in it, at most 255 bytes.  In a layer the
 * whiteout rules of the OCI image spec, as umoci and overlayfs apply
 * them, come on top: ".wh.NAME" removes NAME, so NAME follows the rules
 * above (".wh.", ".wh.." and ".wh..." name nothing, the directory itself
 * or its parent); ".wh..wh..opq" is the opaque marker of its directory
 * and nothing else; a whiteout is the last component of its path (a
 * directory named ".wh.X" would be a whiteout with children).
 */
#include <string.h>
#include "populate_int.h"

#define WH		".wh."
#define WH_LEN		4
#define WH_OPAQUE	".wh..wh..opq"

static const char *plain_why(const char *name, size_t len)
{
	if (!len)
		return "an empty name";
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return "the name \".\" or \"..\"";
	if (memchr(name, '/', len))
		return "a name holding '/'";
	if (memchr(name, 0, len))
		return "a name holding a NUL byte";
	if (len > EXT2_NAME_LEN)
		return "a name longer than 255 bytes";
	return NULL;
}

static const char *whiteout_why(const char *name, size_t len, int last)
{
	if (!last)
		return "a whiteout (\".wh.\") name used as a directory";
	if (len == sizeof(WH_OPAQUE) - 1 && !memcmp(name, WH_OPAQUE, len))
		return NULL;
	if (len >= 2 * WH_LEN && !memcmp(name + WH_LEN, WH, WH_LEN))
		return NULL;		/* aufs's own ".wh..wh.": dropped */
	if (plain_why(name + WH_LEN, len - WH_LEN))
		return len == WH_LEN ? "a whiteout naming nothing" :
			"a whiteout of \".\" or \"..\"";
	return NULL;
}

const char *xr_name_why(const char *name, size_t len, int layer, int last)
{
	const char *why = plain_why(name, len);

	if (!why && layer && len >= WH_LEN && !memcmp(name, WH, WH_LEN))
		why = whiteout_why(name, len, last);
	return why;
}

const char *xr_path_why(const char *path, int layer)
{
	const char *why = NULL;

	while (*path && !why) {
		size_t n = strcspn(path, "/");

		why = xr_name_why(path, n, layer, !path[n]);
		path += n + !!path[n];
	}
	return why;
}
