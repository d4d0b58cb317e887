/*
 * util.c --- one-line error messages of mkfs.extref, and who holds the
 * image's lock when that is why (as debugfs.extref and fsck.extref say
 * it).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "extref.h"
#include "mkfs.h"

static void vline(const char *fmt, va_list ap)
{
	progress_break();
	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void error_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(fmt, ap);
	va_end(ap);
	exit(1);
}

void lock_said(const char *image, errcode_t err)
{
	const char *holder = extref_image_lock_holder();

	if ((err == EXTREF_ERR_LOCKED_WRITER ||
	     err == EXTREF_ERR_LOCKED_READER) && *holder)
		error_line("%s: the lock is %s", image, holder);
}
