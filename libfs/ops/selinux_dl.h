/*
 * selinux_dl.h --- libselinux, loaded when a label is checked or a
 * file_contexts file read.
 *
 * Linked, libselinux (and libpcre2 through it) is mapped into every
 * process at start and its constructor looks for selinuxfs, some half a
 * millisecond of every run of every tool, for the few paths that label.
 * selinux_dl.c opens libselinux.so.1 at the first use and looks up the
 * functions below; the sources that use them include this header after
 * <selinux/selinux.h> (and <selinux/label.h>) and call them as usual.
 */
#ifndef SELINUX_DL_H
#define SELINUX_DL_H

#include <selinux/selinux.h>
#include <selinux/label.h>
#include <ext2fs/ext2fs.h>

#define XR_SELINUX_SONAME "libselinux.so.1"

#define XR_SELINUX_FUNCS(X) \
	X(is_selinux_enabled) X(security_check_context) \
	X(selabel_open) X(selabel_lookup) X(selabel_close) X(freecon)

struct xr_selinux_api {
#define XR_SELINUX_PTR(name) __typeof__(name) *name;
	XR_SELINUX_FUNCS(XR_SELINUX_PTR)
#undef XR_SELINUX_PTR
};
extern struct xr_selinux_api xr_selinux;

/*
 * Load libselinux (once; later calls return the first answer).  On
 * failure EXTREF_ERR_SELINUX_LIB and, when why is not NULL, the loader's
 * message in *why (static; do not free).
 */
errcode_t xr_selinux_load(const char **why);

/* Calls below this point go through the looked-up addresses (not in
 * selinux_dl.c, which fills them in). */
#ifndef XR_SELINUX_LOADER
#define is_selinux_enabled	(*xr_selinux.is_selinux_enabled)
#define security_check_context	(*xr_selinux.security_check_context)
#define selabel_open		(*xr_selinux.selabel_open)
#define selabel_lookup		(*xr_selinux.selabel_lookup)
#define selabel_close		(*xr_selinux.selabel_close)
#define freecon			(*xr_selinux.freecon)
#endif /* !XR_SELINUX_LOADER */

#endif /* SELINUX_DL_H */
