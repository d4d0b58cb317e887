/*
 * oci_layout.c --- the layers of an OCI image layout on disk (as skopeo
 * copy ... oci:DIR or umoci leave it; nothing is fetched), for
 * extref_build_input_open.
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

#include "input_int.h"

#define OCI_JSON_MAX	(16 << 20)	/* index, manifest, config */
#define OCI_HASH_BUF	(1 << 16)

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
static errcode_t check_digest(struct extref_build_input *in,
			      const char *what, const char *d, int *sha512)
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
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: digest '%s': not sha256 nor sha512",
				     what, d);
	for (i = 0; hex[i]; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') ||
		      (hex[i] >= 'a' && hex[i] <= 'f')))
			break;
	if (hex[i] || i != want)
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: digest '%s' is malformed", what, d);
	return 0;
}

static errcode_t blob_path(struct extref_build_input *in, const char *dir,
			   const char *digest, char **path)
{
	if (asprintf(path, "%s/blobs/%.6s/%s", dir, digest, digest + 7) < 0) {
		*path = NULL;
		return xr_input_nomem(in);
	}
	return 0;
}

/* The blob's size (fstat) against its descriptor's. */
static errcode_t blob_size_check(struct extref_build_input *in,
				 const char *path, int fd,
				 const struct desc *d)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return xr_input_errno(in, path);
	if ((long long)st.st_size != d->size)
		return xr_input_fail(in, EXTREF_ERR_OCI_BLOB,
				     "%s: %lld bytes, its descriptor says %lld",
				     path, (long long)st.st_size, d->size);
	return 0;
}

/* The bytes of fd (read to the end) into h; *total counted. */
static errcode_t hash_fd(struct extref_build_input *in, const char *path,
			 int fd, struct hasher *h, long long *total)
{
	char *buf = malloc(OCI_HASH_BUF);
	errcode_t err = 0;
	ssize_t r;

	if (!buf)
		return xr_input_nomem(in);
	while ((r = read(fd, buf, OCI_HASH_BUF)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = xr_input_unreadable(in, path);
			break;
		}
		hash_update(h, buf, (size_t)r);
		*total += r;
	}
	free(buf);
	return err;
}

/* The descriptor's size and digest (sha512 or sha256) against the bytes
 * of fd (read to the end, then rewound). */
static errcode_t verify_fd(struct extref_build_input *in, const char *path,
			   int fd, const struct desc *d, int sha512)
{
	char got[160];
	struct hasher h;
	long long total = 0;
	errcode_t err;

	err = blob_size_check(in, path, fd, d);	/* before hours of hashing */
	if (err)
		return err;
	hash_init(&h, sha512);
	err = hash_fd(in, path, fd, &h, &total);
	if (err)
		return err;
	hash_hex(&h, got);
	if (strcmp(got, d->digest))
		return xr_input_fail(in, EXTREF_ERR_OCI_BLOB,
				     "%s: digest mismatch: the blob's is %s, "
				     "its descriptor says %s", path, got,
				     d->digest);
	if (total != d->size)
		return xr_input_fail(in, EXTREF_ERR_OCI_BLOB,
				     "%s: %lld bytes, its descriptor says %lld",
				     path, total, d->size);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return xr_input_errno(in, path);
	return 0;
}

/* A regular file, opened (a FIFO refused without waiting). */
static errcode_t open_file(struct extref_build_input *in, const char *path,
			   int *fdp)
{
	struct stat st;
	int fd = xr_open_noblock(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	errcode_t err = 0;

	if (fd < 0 && errno == ELOOP)
		return xr_input_fail(in, EXTREF_ERR_SOURCE_TYPE,
				     "%s: a symbolic link, not a blob", path);
	if (fd < 0)
		return xr_input_unreadable(in, path);
	if (fstat(fd, &st) < 0)
		err = xr_input_errno(in, path);
	else if (!S_ISREG(st.st_mode))
		err = xr_input_fail(in, EXTREF_ERR_SOURCE_TYPE,
				    "%s: not a regular file", path);
	if (err)
		close(fd);
	else
		*fdp = fd;
	return err;
}

/* The whole of a small file, NUL-terminated, into *bufp (malloc'd). */
static errcode_t slurp(struct extref_build_input *in, const char *path,
		       int fd, char **bufp, size_t *len)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	errcode_t err;
	ssize_t r;

	if (fstat(fd, &st) < 0)
		return xr_input_errno(in, path);
	if (st.st_size > OCI_JSON_MAX)
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: %lld bytes, more than a JSON file of "
				     "the layout may have (%d)", path,
				     (long long)st.st_size, OCI_JSON_MAX);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return xr_input_nomem(in);
	while (got < (size_t)st.st_size &&
	       (r = read(fd, buf + got, (size_t)st.st_size - got)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = xr_input_unreadable(in, path);
			free(buf);
			return err;
		}
		got += (size_t)r;
	}
	buf[got] = 0;
	*bufp = buf;
	*len = got;
	return 0;
}

/* buf (len bytes) as one strict JSON object. */
static errcode_t parse(struct extref_build_input *in, const char *path,
		       const char *buf, size_t len, json_object **objp)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *obj;
	enum json_tokener_error jerr;
	errcode_t err = 0;

	if (!tok)
		return xr_input_nomem(in);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!obj || jerr != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len)
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				    "%s: not valid JSON (%s)", path,
				    obj && jerr == json_tokener_success ?
				    "text after the value" :
				    json_tokener_error_desc(jerr));
	else if (!json_object_is_type(obj, json_type_object))
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				    "%s: not a JSON object", path);
	json_tokener_free(tok);
	if (err)
		json_object_put(obj);
	else
		*objp = obj;
	return err;
}

/* The small file path open on fd as one JSON object. */
static errcode_t read_object(struct extref_build_input *in, const char *path,
			     int fd, json_object **obj)
{
	char *buf = NULL;
	size_t len = 0;
	errcode_t err = slurp(in, path, fd, &buf, &len);

	if (!err)
		err = parse(in, path, buf, len, obj);
	free(buf);
	return err;
}

/* A file of the layout (not a blob) as a JSON object. */
static errcode_t read_json(struct extref_build_input *in, const char *dir,
			   const char *name, json_object **obj)
{
	char *path;
	errcode_t err;
	int fd;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return xr_input_nomem(in);
	err = open_file(in, path, &fd);
	if (!err) {
		err = read_object(in, path, fd, obj);
		close(fd);
	}
	free(path);
	return err;
}

static errcode_t member(struct extref_build_input *in, const char *path,
			json_object *o, const char *key, json_type type,
			json_object **v)
{
	if (!json_object_object_get_ex(o, key, v) ||
	    !json_object_is_type(*v, type))
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: no %s of the right type", path, key);
	return 0;
}

static const char *opt_string(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static errcode_t desc_of(struct extref_build_input *in, const char *path,
			 json_object *o, struct desc *d)
{
	json_object *size, *digest;
	errcode_t err = member(in, path, o, "size", json_type_int, &size);

	if (!err && !json_object_is_type(o, json_type_object))
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT, "%s: a "
				    "descriptor that is not an object", path);
	if (!err)
		err = member(in, path, o, "digest", json_type_string, &digest);
	if (err)
		return err;
	d->media_type = opt_string(o, "mediaType");
	d->digest = json_object_get_string(digest);
	d->size = json_object_get_int64(size);
	if (d->size < 0)
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: descriptor %s: a negative size",
				     path, d->digest);
	return 0;
}

/* The blob d names, opened (*path malloc'd, *fd at its start, both -1
 * and NULL until then) and verified; what names the file of the
 * descriptor when its digest is refused. */
static errcode_t open_blob(struct extref_build_input *in, const char *dir,
			   const char *what, const struct desc *d,
			   char **path, int *fd)
{
	int sha512 = 0;
	errcode_t err = check_digest(in, what, d->digest, &sha512);

	*path = NULL;
	*fd = -1;
	if (!err)
		err = blob_path(in, dir, d->digest, path);
	if (!err)
		err = open_file(in, *path, fd);
	if (!err)
		err = verify_fd(in, *path, *fd, d, sha512);
	return err;
}

/* A JSON blob (manifest, config), verified, parsed. */
static errcode_t read_blob_json(struct extref_build_input *in,
				const char *dir, const struct desc *d,
				json_object **obj)
{
	char *path;
	errcode_t err;
	int fd;

	err = open_blob(in, dir, dir, d, &path, &fd);
	if (!err)
		err = read_object(in, path, fd, obj);
	if (fd >= 0)
		close(fd);
	free(path);
	return err;
}

/* The manifest's descriptor in index.json: tag's, or the only one. */
static errcode_t pick_manifest(struct extref_build_input *in,
			       const char *dir, const char *tag,
			       json_object *index, struct desc *d)
{
	char path[4096];
	json_object *list, *found = NULL;
	size_t n, i;
	errcode_t err;

	snprintf(path, sizeof(path), "%s/index.json", dir);
	err = member(in, path, index, "manifests", json_type_array, &list);
	if (err)
		return err;
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(list, i), *ann;
		const char *name = NULL;

		if (!json_object_is_type(m, json_type_object))
			return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT, "%s: a "
					     "manifest that is not an object",
					     path);
		if (json_object_object_get_ex(m, "annotations", &ann) &&
		    json_object_is_type(ann, json_type_object))
			name = opt_string(ann,
					  "org.opencontainers.image.ref.name");
		if (tag ? name && !strcmp(name, tag) : n == 1)
			found = m;
	}
	if (!found && tag)
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: no manifest tagged '%s'", path, tag);
	if (!found)
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: %zu manifests: name one as "
				     "oci:%s:TAG", path, n, dir);
	err = desc_of(in, path, found, d);
	if (err)
		return err;
	if (d->media_type && (!strcmp(d->media_type, MT_INDEX) ||
			      !strcmp(d->media_type, MT_DOCKER_LIST)))
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: '%s' is an image index (several "
				     "platforms): copy one platform's image "
				     "(skopeo copy --override-arch)", path,
				     tag ? tag : d->digest);
	if (d->media_type && strcmp(d->media_type, MT_MANIFEST))
		return xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				     "%s: manifest of media type %s (not %s)",
				     path, d->media_type, MT_MANIFEST);
	return 0;
}

/* A layer's media type: a tar, compressed or not (OCI or Docker). */
static int is_layer_type(const char *mt)
{
	return !strncmp(mt, "application/vnd.oci.image.layer.", 32) ||
	       !strncmp(mt, "application/vnd.docker.image.rootfs.", 36);
}

/* The layer descriptor o of the manifest (at mpath): its blob opened,
 * verified, added to in. */
static errcode_t add_layer(struct extref_build_input *in, const char *dir,
			   const char *mpath, json_object *o)
{
	char *path = NULL;
	struct desc d;
	errcode_t err;
	int fd = -1;

	err = desc_of(in, mpath, o, &d);
	if (!err && (!d.media_type || !is_layer_type(d.media_type)))
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT, "%s: layer %s: "
				    "media type %s is not a layer's", mpath,
				    d.digest, d.media_type ? d.media_type :
				    "(none)");
	if (!err && strstr(d.media_type, "encrypted"))
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				    "%s: layer %s is encrypted", mpath,
				    d.digest);
	if (!err)
		err = open_blob(in, dir, mpath, &d, &path, &fd);
	if (!err)
		return xr_input_add_layer(in, path, fd);
	if (fd >= 0)
		close(fd);
	free(path);
	return err;
}

/* The manifest at mpath: its config and its layers. */
static errcode_t read_manifest(struct extref_build_input *in,
			       const char *dir, const char *mpath,
			       json_object *manifest)
{
	json_object *cfg, *layers, *config = NULL, *rootfs, *diff_ids;
	struct desc cd;
	size_t n = 0;
	errcode_t err;

	err = member(in, mpath, manifest, "config", json_type_object, &cfg);
	if (!err)
		err = desc_of(in, mpath, cfg, &cd);
	if (!err)
		err = member(in, mpath, manifest, "layers", json_type_array,
			     &layers);
	if (!err)
		err = read_blob_json(in, dir, &cd, &config);
	if (!err)
		err = member(in, "the image config", config, "rootfs",
			     json_type_object, &rootfs);
	if (!err)
		err = member(in, "the image config", rootfs, "diff_ids",
			     json_type_array, &diff_ids);
	if (!err)
		n = json_object_array_length(layers);
	if (!err && json_object_array_length(diff_ids) != n)
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT, "%s: %zu "
				    "layers, its config's rootfs.diff_ids "
				    "another count", mpath, n);
	if (!err && !n)
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				    "%s: an image of no layer", mpath);
	for (size_t i = 0; !err && i < n; i++)
		err = add_layer(in, dir, mpath,
				json_object_array_get_idx(layers, i));
	json_object_put(config);
	return err;
}

errcode_t xr_oci_read(struct extref_build_input *in, const char *dir,
		      const char *tag)
{
	json_object *layout = NULL, *index = NULL, *manifest = NULL;
	char *mpath = NULL;
	struct desc md;
	errcode_t err;

	err = read_json(in, dir, "oci-layout", &layout);
	if (!err && !opt_string(layout, "imageLayoutVersion"))
		err = xr_input_fail(in, EXTREF_ERR_OCI_LAYOUT,
				    "%s/oci-layout: no imageLayoutVersion "
				    "(not an OCI image layout)", dir);
	if (!err)
		err = read_json(in, dir, "index.json", &index);
	if (!err)
		err = pick_manifest(in, dir, tag, index, &md);
	if (!err)
		err = read_blob_json(in, dir, &md, &manifest);
	if (!err)
		err = blob_path(in, dir, md.digest, &mpath);
	if (!err)
		err = read_manifest(in, dir, mpath, manifest);
	free(mpath);
	json_object_put(manifest);
	json_object_put(index);
	json_object_put(layout);
	return err;
}
