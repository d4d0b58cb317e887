/*
 * errclass.c --- failures of the range commands (clone_range, dedupe,
 * pwrite, truncate, punch, unshare) name the errno the kernel would
 * give for the same request, so that a user (or a test) can compare
 * them with xfs_io's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "debugfs.h"

int cmd_err_class(const struct cmd_args *a, errcode_t err,
		  const char *fmt, ...)
{
	int no = extref_errno(err);
	const char *name = strerrorname_np(no);
	char *what = NULL;
	va_list ap;
	int n = -1;

	if (fmt) {
		va_start(ap, fmt);
		n = vasprintf(&what, fmt, ap);
		va_end(ap);
	}
	if (n < 0)
		what = NULL;
	if ((no == EIO || !name) && what)
		cmd_err(a, err, "%s", what);
	else if (no == EIO || !name)
		cmd_err(a, err, NULL);
	else
		cmd_fail(a, "%s%s%s (%s): %s", what ? what : "",
			 what ? ": " : "", strerror(no), name,
			 error_message(err));
	free(what);
	return 1;
}
