/*
 * args_num.c --- the numbers and sizes of a build's options
 * (extref_build_parse_uint, extref_build_parse_size).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "extref.h"
#include "extref_builder.h"

errcode_t extref_build_parse_uint(const char *arg, unsigned long long max,
				  unsigned long long *val)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)arg[0]))
		return EXTREF_ERR_BUILD_ARG;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || v > max)
		return EXTREF_ERR_BUILD_ARG;
	*val = v;
	return 0;
}

/* K, M, G or T: its shift; 0 for none, -1 for another letter. */
static int suffix_shift(char c)
{
	switch (toupper((unsigned char)c)) {
	case 'K': return 10;
	case 'M': return 20;
	case 'G': return 30;
	case 'T': return 40;
	case '\0': return 0;
	default: return -1;
	}
}

errcode_t extref_build_parse_size(const char *arg, __u64 unit, __u64 *bytes)
{
	unsigned long long v, mult = unit;
	char *end;
	int shift;

	if (!isdigit((unsigned char)arg[0]))
		return EXTREF_ERR_BUILD_ARG;
	errno = 0;
	v = strtoull(arg, &end, 10);
	shift = suffix_shift(*end);
	if (errno || shift < 0)
		return EXTREF_ERR_BUILD_ARG;
	if (shift) {
		mult = 1ULL << shift;
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end || (v && mult > UINT64_MAX / v))
		return EXTREF_ERR_BUILD_ARG;
	*bytes = v * mult;
	return 0;
}
