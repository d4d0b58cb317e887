/*
 * oci.c --- mkfs.extref -d oci:DIR[:TAG]: an OCI image layout on disk
 * (as skopeo copy ... oci:DIR or umoci leave it; nothing is fetched).
 *
 * DIR/oci-layout names the layout's version; DIR/index.json lists the
 * manifests: TAG picks the one annotated org.opencontainers.image.ref.name
 * TAG, no TAG the only one.  The manifest and the config are read from
 * DIR/blobs/ALG/HEX, and each layer blob (tar, gzip or zstd compressed:
 * libarchive's filters read it) is opened there.  Every blob's size and
 * digest (sha256 or sha512, through nettle) is checked against its
 * descriptor before anything is built; one that does not match is
 * refused, named.  JSON is parsed strictly (json-c).
 *
 * The config's ownership: the files' owners are in the layers' headers;
 * the config's User is the user the container's process runs as, which
 * no file's owner follows, so nothing of the config changes the image
 * (its rootfs.diff_ids must count the manifest's layers).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json.h>
#include <nettle/sha2.h>

#include "mkfs.h"

#define OCI_JSON_MAX	(16 << 20)	/* index, manifest, config */

#define MT_INDEX	"application/vnd.oci.image.index.v1+json"
#define MT_MANIFEST	"application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST	"application/vnd.docker.distribution.manifest.list.v2+json"

struct desc {
	const char	*media_type;	/* may be NULL */
	const char	*digest;
	long long	size;
};

/* A hash of either kind, by the digest's algorithm. */
struct hasher {
	int			sha512;
	struct sha256_ctx	c256;
	struct sha512_ctx	c512;
};

static void hash_init(struct hasher *h, int sha512)
{
	h->sha512 = sha512;
	if (sha512)
		sha512_init(&h->c512);
	else
		sha256_init(&h->c256);
}

static void hash_update(struct hasher *h, const void *buf, size_t len)
{
	if (h->sha512)
		sha512_update(&h->c512, len, buf);
	else
		sha256_update(&h->c256, len, buf);
}

/* The digest as "alg:hex" in out (at least 7 + 128 + 1 bytes). */
static void hash_hex(struct hasher *h, char *out)
{
	unsigned char d[SHA512_DIGEST_SIZE];
	size_t n = h->sha512 ? SHA512_DIGEST_SIZE : SHA256_DIGEST_SIZE;
	int o = sprintf(out, "%s:", h->sha512 ? "sha512" : "sha256");

	if (h->sha512)
		sha512_digest(&h->c512, n, d);
	else
		sha256_digest(&h->c256, n, d);
	for (size_t i = 0; i < n; i++)
		o += sprintf(out + o, "%02x", d[i]);
}

/*
 * A digest the layout may hold: sha256 or sha512, lowercase hex of its
 * length; *sha512 set for the latter.  Anything else (a "/" or ".." in
 * it too) is refused, so that it names no file outside DIR/blobs.
 */
static void check_digest(const char *what, const char *d, int *sha512)
{
	const char *hex = NULL;
	size_t want = 0, i;

	if (!strncmp(d, "sha256:", 7)) {
		hex = d + 7;
		want = 64;
		*sha512 = 0;
	} else if (!strncmp(d, "sha512:", 7)) {
		hex = d + 7;
		want = 128;
		*sha512 = 1;
	}
	if (!hex)
		fatal("%s: digest '%s': not sha256 nor sha512", what, d);
	for (i = 0; hex[i]; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') ||
		      (hex[i] >= 'a' && hex[i] <= 'f')))
			break;
	if (hex[i] || i != want)
		fatal("%s: digest '%s' is malformed", what, d);
}

static char *blob_path(const char *dir, const char *digest)
{
	char *p;

	if (asprintf(&p, "%s/blobs/%.6s/%s", dir, digest, digest + 7) < 0)
		fatal("out of memory");
	return p;
}

/* The blob's size (fstat) against its descriptor's. */
static void blob_size_check(const char *path, int fd, const struct desc *d)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		fatal("%s: %s", path, strerror(errno));
	if ((long long)st.st_size != d->size)
		fatal("%s: %lld bytes, its descriptor says %lld", path,
		      (long long)st.st_size, d->size);
}

/* The descriptor's size and digest against the bytes of fd (read to the
 * end, then rewound). */
static void verify_fd(const char *path, int fd, const struct desc *d)
{
	static char buf[1 << 16];
	char got[160];
	struct hasher h;
	long long total = 0;
	ssize_t r;
	int sha512;

	check_digest(path, d->digest, &sha512);
	blob_size_check(path, fd, d);	/* before hours of hashing */
	hash_init(&h, sha512);
	while ((r = read(fd, buf, sizeof(buf))) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fatal("cannot read %s: %s", path, strerror(errno));
		hash_update(&h, buf, (size_t)r);
		total += r;
	}
	hash_hex(&h, got);
	if (strcmp(got, d->digest))
		fatal("%s: digest mismatch: the blob's is %s, its descriptor "
		      "says %s", path, got, d->digest);
	if (total != d->size)
		fatal("%s: %lld bytes, its descriptor says %lld", path, total,
		      d->size);
	if (lseek(fd, 0, SEEK_SET) < 0)
		fatal("%s: %s", path, strerror(errno));
}

/* A regular file, opened. */
static int open_file(const char *path)
{
	struct stat st;
	int fd = open_noblock(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 && errno == ELOOP)
		fatal("%s: a symbolic link, not a blob", path);
	if (fd < 0)
		fatal("cannot read %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
		fatal("%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		fatal("%s: not a regular file", path);
	return fd;
}

/* The whole of a small file, NUL-terminated. */
static char *slurp(const char *path, int fd, size_t *len)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	ssize_t r;

	if (fstat(fd, &st) < 0)
		fatal("%s: %s", path, strerror(errno));
	if (st.st_size > OCI_JSON_MAX)
		fatal("%s: %lld bytes, more than a JSON file of the layout may "
		      "have (%d)", path, (long long)st.st_size, OCI_JSON_MAX);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		fatal("out of memory");
	while (got < (size_t)st.st_size &&
	       (r = read(fd, buf + got, (size_t)st.st_size - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fatal("cannot read %s: %s", path, strerror(errno));
		got += (size_t)r;
	}
	buf[got] = 0;
	*len = got;
	return buf;
}

/* buf (len bytes) as one strict JSON object. */
static json_object *parse(const char *path, const char *buf, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *obj;
	enum json_tokener_error jerr;

	if (!tok)
		fatal("out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!obj || jerr != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len)
		fatal("%s: not valid JSON (%s)", path, obj && jerr ==
		      json_tokener_success ? "text after the value" :
		      json_tokener_error_desc(jerr));
	json_tokener_free(tok);
	if (!json_object_is_type(obj, json_type_object))
		fatal("%s: not a JSON object", path);
	return obj;
}

/* A file of the layout (not a blob) as a JSON object. */
static json_object *read_json(const char *dir, const char *name)
{
	char *path, *buf;
	json_object *obj;
	size_t len;
	int fd;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		fatal("out of memory");
	fd = open_file(path);
	buf = slurp(path, fd, &len);
	close(fd);
	obj = parse(path, buf, len);
	free(buf);
	free(path);
	return obj;
}

static json_object *member(const char *path, json_object *o, const char *key,
			   json_type type)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, type))
		fatal("%s: no %s of the right type", path, key);
	return v;
}

static const char *opt_string(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void desc_of(const char *path, json_object *o, struct desc *d)
{
	json_object *size = member(path, o, "size", json_type_int);

	if (!json_object_is_type(o, json_type_object))
		fatal("%s: a descriptor that is not an object", path);
	d->media_type = opt_string(o, "mediaType");
	d->digest = json_object_get_string(member(path, o, "digest",
						  json_type_string));
	d->size = json_object_get_int64(size);
	if (d->size < 0)
		fatal("%s: descriptor %s: a negative size", path, d->digest);
}

/* A JSON blob (manifest, config), verified, parsed. */
static json_object *read_blob_json(const char *dir, const struct desc *d)
{
	char *path, *buf;
	json_object *obj;
	size_t len;
	int fd, sha512;

	check_digest(dir, d->digest, &sha512);
	path = blob_path(dir, d->digest);
	fd = open_file(path);
	verify_fd(path, fd, d);
	buf = slurp(path, fd, &len);
	close(fd);
	obj = parse(path, buf, len);
	free(buf);
	free(path);
	return obj;
}

/* The manifest's descriptor in index.json: tag's, or the only one. */
static void pick_manifest(const char *dir, const char *tag,
			  json_object *index, struct desc *d)
{
	char path[4096];
	json_object *list, *found = NULL;
	size_t n, i;

	snprintf(path, sizeof(path), "%s/index.json", dir);
	list = member(path, index, "manifests", json_type_array);
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(list, i), *ann;
		const char *name = NULL;

		if (!json_object_is_type(m, json_type_object))
			fatal("%s: a manifest that is not an object", path);
		if (json_object_object_get_ex(m, "annotations", &ann) &&
		    json_object_is_type(ann, json_type_object))
			name = opt_string(ann,
					  "org.opencontainers.image.ref.name");
		if (tag ? name && !strcmp(name, tag) : n == 1)
			found = m;
	}
	if (!found && tag)
		fatal("%s: no manifest tagged '%s'", path, tag);
	if (!found)
		fatal("%s: %zu manifests: name one as oci:%s:TAG", path, n,
		      dir);
	desc_of(path, found, d);
	if (d->media_type && (!strcmp(d->media_type, MT_INDEX) ||
			      !strcmp(d->media_type, MT_DOCKER_LIST)))
		fatal("%s: '%s' is an image index (several platforms): copy "
		      "one platform's image (skopeo copy --override-arch)",
		      path, tag ? tag : d->digest);
	if (d->media_type && strcmp(d->media_type, MT_MANIFEST))
		fatal("%s: manifest of media type %s (not %s)", path,
		      d->media_type, MT_MANIFEST);
}

/* A layer's media type: a tar, compressed or not (OCI or Docker). */
static int is_layer_type(const char *mt)
{
	return !strncmp(mt, "application/vnd.oci.image.layer.", 32) ||
	       !strncmp(mt, "application/vnd.docker.image.rootfs.", 36);
}

static void add_layers(const char *dir, const char *mpath,
		       json_object *layers, struct mkfs_layers *l)
{
	size_t n = json_object_array_length(layers);

	for (size_t i = 0; i < n; i++) {
		json_object *o = json_object_array_get_idx(layers, i);
		struct desc d;
		char *path;
		int fd, sha512;

		desc_of(mpath, o, &d);
		if (!d.media_type || !is_layer_type(d.media_type))
			fatal("%s: layer %s: media type %s is not a layer's",
			      mpath, d.digest, d.media_type ? d.media_type :
			      "(none)");
		if (strstr(d.media_type, "encrypted"))
			fatal("%s: layer %s is encrypted", mpath, d.digest);
		check_digest(mpath, d.digest, &sha512);
		path = blob_path(dir, d.digest);
		fd = open_file(path);
		verify_fd(path, fd, &d);
		layers_add(l, path, fd);
	}
}

void oci_read(const char *dir, const char *tag, struct mkfs_layers *l)
{
	json_object *layout, *index, *manifest, *config, *layers, *rootfs;
	struct desc md, cd;
	char *mpath;

	layout = read_json(dir, "oci-layout");
	if (!opt_string(layout, "imageLayoutVersion"))
		fatal("%s/oci-layout: no imageLayoutVersion (not an OCI "
		      "image layout)", dir);
	index = read_json(dir, "index.json");
	pick_manifest(dir, tag, index, &md);
	manifest = read_blob_json(dir, &md);
	mpath = blob_path(dir, md.digest);
	desc_of(mpath, member(mpath, manifest, "config", json_type_object),
		&cd);
	layers = member(mpath, manifest, "layers", json_type_array);
	config = read_blob_json(dir, &cd);
	rootfs = member("the image config", config, "rootfs",
			json_type_object);
	if (json_object_array_length(member("the image config", rootfs,
					    "diff_ids", json_type_array)) !=
	    json_object_array_length(layers))
		fatal("%s: %zu layers, its config's rootfs.diff_ids another "
		      "count", mpath, json_object_array_length(layers));
	if (!json_object_array_length(layers))
		fatal("%s: an image of no layer", mpath);
	add_layers(dir, mpath, layers, l);
	free(mpath);
	json_object_put(config);
	json_object_put(manifest);
	json_object_put(index);
	json_object_put(layout);
}
