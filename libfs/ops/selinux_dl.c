/*
 * selinux_dl.c --- libselinux's functions, loaded by base/dl.c at the first
 * label (selinux_dl.h says why libselinux is not linked).
 */
#define XR_SELINUX_LOADER
#include "extref_err.h"
#include "base/xr_dl.h"
#include "selinux_dl.h"

struct xr_selinux_api xr_selinux;

#define XR_SELINUX_NAME(name) #name,
static const char *const names[] = { XR_SELINUX_FUNCS(XR_SELINUX_NAME) };
#undef XR_SELINUX_NAME

_Static_assert(sizeof(xr_selinux) == sizeof(names) / sizeof(*names) * sizeof(void *),
	       "one pointer for each name");

static struct xr_dl lib = {
	.soname = XR_SELINUX_SONAME,
	.need = "to check or look up a label",
	.fail_code = EXTREF_ERR_SELINUX_LIB,
	.names = names,
	.slots = (void **)&xr_selinux,
	.n = sizeof(names) / sizeof(*names),
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

errcode_t xr_selinux_load(const char **why)
{
	return xr_dl_load(&lib, why);
}
