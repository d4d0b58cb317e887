/*
 * jdetail.c --- what the last journal error of this thread was about, in
 * words a message can quote ("transaction 7: ... at journal block 12"),
 * as dlerror() does for the dynamic loader: an error code cannot carry
 * the transaction it names.
 */
#include <stdarg.h>
#include <stdio.h>
#include "journal_int.h"
#include "extref.h"

static __thread char detail[256];

void xr_jdetail_clear(void)
{
	detail[0] = 0;
}

void xr_jdetail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
}

const char *extref_journal_detail(void)
{
	return detail;
}
