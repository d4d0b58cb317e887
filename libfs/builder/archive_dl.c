/*
 * archive_dl.c --- libarchive's functions, loaded by base/dl.c at the first
 * archive (archive_dl.h says why libarchive is not linked).
 */
#define XR_ARCHIVE_LOADER
#include "extref_err.h"
#include "base/xr_dl.h"
#include "archive_dl.h"

struct xr_archive_api xr_archive;

#define XR_ARCHIVE_NAME(name) #name,
static const char *const names[] = { XR_ARCHIVE_FUNCS(XR_ARCHIVE_NAME) };
#undef XR_ARCHIVE_NAME

_Static_assert(sizeof(xr_archive) == sizeof(names) / sizeof(*names) * sizeof(void *),
	       "one pointer for each name");

static struct xr_dl lib = {
	.soname = XR_ARCHIVE_SONAME,
	.need = "to read an archive",
	.fail_code = EXTREF_ERR_ARCHIVE_LIB,
	.names = names,
	.slots = (void **)&xr_archive,
	.n = sizeof(names) / sizeof(*names),
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

errcode_t xr_archive_load(const char **why)
{
	return xr_dl_load(&lib, why);
}
