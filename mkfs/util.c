/*
 * util.c --- one-line error messages of mkfs.extref.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
