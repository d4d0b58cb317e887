/*
 * build_ident.c --- a reproducible build's identity: with
 * SOURCE_DATE_EPOCH and no -U nor -E hash_seed= (mkfs.extref), the
 * filesystem's UUID and its directory hash seed are derived, not drawn
 * at random, so that the same build gives the same bytes.
 *
 * Both are name-based UUIDs (RFC 4122 version 5: SHA-1, libuuid's
 * uuid_generate_sha1).  The UUID's namespace is extref's own
 * (dc2221d4-187f-42a9-a5a0-0cf29434ec41), its name the bytes
 *
 *     "uuid" NUL EPOCH NUL LABEL NUL DIGEST
 *
 * EPOCH in decimal, LABEL the volume label (-L, at most its first 16
 * bytes, as mke2fs keeps it; empty without), DIGEST the source's SHA-256 in lowercase hex
 * (source_digest.c; empty for an image made without a source).  Two
 * builds of different sources, or of one source under two labels, get
 * two UUIDs; a rebuild of the same gets the same.  The hash seed's
 * namespace is the filesystem's UUID (the one given with -U when it is
 * a UUID, else the derived one), its name "hash_seed" NUL EPOCH.
 */
#include <stdio.h>
#include <string.h>

#include <uuid/uuid.h>

#include "build_int.h"

static const uuid_t extref_ns = {
	0xdc, 0x22, 0x21, 0xd4, 0x18, 0x7f, 0x42, 0xa9,
	0xa5, 0xa0, 0x0c, 0xf2, 0x94, 0x34, 0xec, 0x41
};

/* s's first max bytes at name + *len, then a NUL. */
static void field(char *name, size_t *len, const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	memcpy(name + *len, s, n);
	name[*len + n] = '\0';
	*len += n + 1;
}

void xr_build_ident(long long epoch, const char *label,
		    const unsigned char *digest, const char *uuid_given,
		    char uuid[37], char seed[37])
{
	char name[160], num[24], hex[2 * XR_DIGEST_SIZE + 1];
	size_t len = 0;
	uuid_t u, ns, s;

	snprintf(num, sizeof(num), "%lld", epoch);
	hex[0] = '\0';
	for (int i = 0; digest && i < XR_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	field(name, &len, "uuid", 4);
	field(name, &len, num, sizeof(num));
	/* as mke2fs keeps it: at most EXT2_LABEL_LEN bytes */
	field(name, &len, label ? label : "", EXT2_LABEL_LEN);
	field(name, &len, hex, sizeof(hex));
	uuid_generate_sha1(u, extref_ns, name, len - 1);
	uuid_unparse_lower(u, uuid);
	if (!uuid_given || uuid_parse(uuid_given, ns))
		memcpy(ns, u, sizeof(ns));
	len = 0;
	field(name, &len, "hash_seed", 9);
	field(name, &len, num, sizeof(num));
	uuid_generate_sha1(s, ns, name, len - 1);
	uuid_unparse_lower(s, seed);
}
