/*
 * size.c --- number and size arguments of mkfs.extref.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs.h"

int parse_uint(const char *arg, unsigned long long max,
	       unsigned long long *val)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)arg[0]))
		return -1;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*val = v;
	return 0;
}

int parse_size(const char *arg, uint64_t unit, uint64_t *bytes)
{
	unsigned long long v, mult = unit;
	char *end;
	int shift = 0;

	if (!isdigit((unsigned char)arg[0]))
		return -1;
	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; break;
	case 'M': shift = 20; break;
	case 'G': shift = 30; break;
	case 'T': shift = 40; break;
	case '\0': break;
	default: return -1;
	}
	if (shift) {
		mult = 1ULL << shift;
		end++;
		if (!strcmp(end, "iB") || !strcmp(end, "B"))
			end += strlen(end);
	}
	if (*end)
		return -1;
	if (v && mult > UINT64_MAX / v)
		return -1;
	*bytes = v * mult;
	return 0;
}
