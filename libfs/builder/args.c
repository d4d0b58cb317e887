/*
 * args.c --- what a build was asked (struct extref_build_args), each
 * option's value checked as it is set (extref_build_args_set), then the
 * options against each other (extref_build_args_check).  The messages
 * are mkfs.extref's: they name the options as its command line does.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "extref.h"
#include "args_int.h"

errcode_t xr_args_why(char *why, size_t len, errcode_t err,
		      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err;
}

void extref_build_args_init(struct extref_build_args *a)
{
	memset(a, 0, sizeof(*a));
	a->headroom = 5;
	a->dedup = -1;			/* not given: the kind's default */
}

void extref_build_args_free(struct extref_build_args *a)
{
	free(a->ext_opts);
	free(a->features);
	a->ext_opts = a->features = NULL;
}

const char *extref_build_args_optstring(void)
{
	static char s[64];

	if (!s[0])
		snprintf(s, sizeof(s), "b:N:i:I:L:U:E:O:d:Fq%s",
			 xr_mke2fs_pass_optstring);
	return s;
}

int extref_build_args_needs_arg(int opt)
{
	return (opt > 0 && opt < 256 && strchr("bNiILUEOd", opt)) ||
	       xr_args_mke2fs_needs_arg(opt);
}
