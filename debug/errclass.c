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

/* MSG begins "Operation not permitted (EPERM)", as our table's
 * messages for the classes do: it is printed as it is. */
static int names_class(const char *msg, int no, const char *name)
{
	size_t n = strlen(strerror(no));

	return !strncmp(msg, strerror(no), n) && msg[n] == ' ' &&
	       msg[n + 1] == '(' && !strncmp(msg + n + 2, name, strlen(name)) &&
	       msg[n + 2 + strlen(name)] == ')';
}

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
	else if (names_class(error_message(err), no, name))
		cmd_fail(a, "%s%s%s", what ? what : "", what ? ": " : "",
			 error_message(err));
	else if (!strcmp(error_message(err), strerror(no)))
		cmd_fail(a, "%s%s%s (%s)", what ? what : "", what ? ": " : "",
			 strerror(no), name);
	else
		cmd_fail(a, "%s%s%s (%s): %s", what ? what : "",
			 what ? ": " : "", strerror(no), name,
			 error_message(err));
	free(what);
	return 1;
}
