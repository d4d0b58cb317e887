"""mkfs.extref with layers: several -d archives, -d layers:LIST and -d
oci:DIR[:TAG] (mkfs.extref(8), LAYERS AND OCI IMAGES).

Oracles nobody here wrote: OCI layouts made by Debian's umoci (init, new,
insert, insert --whiteout, insert --opaque, raw add-layer with a tar made
here by Python's tarfile); `umoci unpack` of the same layout, compared
with the image through a read-only kernel loop mount (every file's bytes,
type, mode, owner, xattrs, symlink target, hard links); stock e2fsck -fn
and fsck.extref -fn on every image; dumpe2fs's free block count (blocks
equal across layers stored once); `cmp` of images built twice under two
MALLOC_PERTURB_ values.
"""
import io
import json
import os
import shutil
import subprocess
import tarfile

import pytest

import helpers

UUID = "5a0c1d2e-3f40-4b5c-9d6e-7f8091a2b3c4"
ENV = {"SOURCE_DATE_EPOCH": "1000000000"}
BIG = bytes(range(256)) * 64          # 16 KiB, the same in every layer

pytestmark = pytest.mark.skipif(shutil.which("umoci") is None,
                                reason="umoci is not installed")


def umoci(*args):
    return helpers.run(["umoci", *map(str, args)])


def tar_add(t, name, data=None, typ=tarfile.REGTYPE, mode=0o644, link=None,
            uid=0, gid=0, xattrs=None):
    ti = tarfile.TarInfo(name)
    ti.type = typ
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    ti.mtime = 1000000
    if link is not None:
        ti.linkname = link
    if xattrs:
        ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in xattrs.items()}
    if typ == tarfile.REGTYPE:
        data = data or b""
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)


def base_tree(root):
    """Layer 1 as a host directory (umoci insert reads it)."""
    for d in ("etc", "usr/bin", "usr/lib", "opt/old", "var/gone/deep", "swap"):
        os.makedirs(root / d, exist_ok=True)
    (root / "etc/hostname").write_text("base\n")
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (root / "usr/bin/tool").write_bytes(BIG + b"tool-1")
    os.chmod(root / "usr/bin/tool", 0o4755)
    (root / "usr/lib/libx.so").write_bytes(BIG)
    os.link(root / "usr/lib/libx.so", root / "usr/lib/libx.so.1")
    os.symlink("libx.so.1", root / "usr/lib/libx.so.link")
    (root / "opt/old/a").write_text("old a\n")
    (root / "opt/old/b").write_text("old b\n")
    (root / "var/gone/deep/f").write_bytes(b"f" * 9000)
    (root / "swap/was-file").write_text("file\n")     # replaced by a dir
    os.makedirs(root / "swap/was-dir/in")              # replaced by a file
    (root / "swap/was-dir/in/x").write_text("x\n")
    os.chown(root / "etc/passwd", 0, 42)
    os.chown(root / "opt/old", 1000, 1000)
    os.chmod(root / "opt/old", 0o750)


def raw_layer(path):
    """A layer umoci would not make itself: type changes, a hard link to
    a lower layer's file, a file repeated, xattrs, an opaque directory
    and a whiteout written by hand."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        tar_add(t, "swap", typ=tarfile.DIRTYPE, mode=0o755)
        tar_add(t, "swap/was-file", typ=tarfile.DIRTYPE, mode=0o711)
        tar_add(t, "swap/was-file/now", b"a dir now\n")
        tar_add(t, "swap/was-dir", b"a file now\n", mode=0o600, uid=7,
                gid=8)
        tar_add(t, "usr", typ=tarfile.DIRTYPE, mode=0o755)
        tar_add(t, "usr/lib", typ=tarfile.DIRTYPE, mode=0o755)
        tar_add(t, "usr/lib/libx-again.so", BIG)      # repeats layer 1
        tar_add(t, "usr/lib/hard", typ=tarfile.LNKTYPE,
                link="usr/lib/libx.so")               # across layers
        tar_add(t, "usr/bin", typ=tarfile.DIRTYPE, mode=0o755)
        tar_add(t, "usr/bin/tool", BIG + b"tool-2", mode=0o755,
                xattrs={"user.version": "2"})
        tar_add(t, "usr/bin/.wh.nothing-there")
        tar_add(t, "etc", typ=tarfile.DIRTYPE, mode=0o755)
        tar_add(t, "etc/.wh..wh..opq")
        tar_add(t, "etc/hostname", b"layered\n", xattrs={"user.a": "b"})


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """An OCI layout of four layers, tag t, made by umoci."""
    base = tmp_path_factory.mktemp("oci")
    oci = base / "oci"
    umoci("init", "--layout", oci)
    umoci("new", "--image", f"{oci}:t")
    src = base / "l1"
    base_tree(src)
    umoci("insert", "--no-history", "--image", f"{oci}:t", src, "/")
    umoci("insert", "--no-history", "--image", f"{oci}:t", "--whiteout",
          "/var/gone")
    umoci("insert", "--no-history", "--image", f"{oci}:t", "--whiteout",
          "/etc/passwd")
    newopt = base / "newopt"
    os.makedirs(newopt)
    (newopt / "c").write_text("new c\n")
    umoci("insert", "--no-history", "--image", f"{oci}:t", "--opaque",
          newopt, "/opt/old")
    raw = base / "raw.tar"
    raw_layer(raw)
    umoci("raw", "add-layer", "--no-history", "--image", f"{oci}:t", raw)
    return oci


def mkfs(img, *sources, perturb=None, opts=(), check=True):
    env = dict(ENV)
    if perturb:
        env["MALLOC_PERTURB_"] = perturb
    args = [helpers.binary("mkfs.extref"), "-q", "-U", UUID, "-E",
            f"hash_seed={UUID}", *opts]
    for s in sources:
        args += ["-d", str(s)]
    return helpers.run([*args, str(img)], env=env, check=check)


def checked(img):
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)


def describe_tree(root):
    """Every entry below root: type and mode, owner, bytes, symlink
    target, xattrs, and its hard-link group (its first path)."""
    return helpers.host_tree(root, times=())


def layer_blobs(oci, tag="t"):
    """The layer blobs of tag's manifest, in order."""
    index = json.loads((oci / "index.json").read_text())
    (m,) = [m for m in index["manifests"]
            if m["annotations"]["org.opencontainers.image.ref.name"] == tag]
    algo, hexd = m["digest"].split(":")
    manifest = json.loads((oci / "blobs" / algo / hexd).read_text())
    return [oci / "blobs" / lay["digest"].split(":")[0] /
            lay["digest"].split(":")[1] for lay in manifest["layers"]]


def used_blocks(img):
    h = helpers.dumpe2fs_header(img)
    return int(h["Block count"]) - int(h["Free blocks"])


def test_oci_image_is_umoci_unpack(layout, tmp_path, loop_mount):
    img = tmp_path / "oci.img"
    mkfs(img, f"oci:{layout}:t")
    checked(img)
    bundle = tmp_path / "bundle"
    umoci("unpack", "--image", f"{layout}:t", bundle)
    mnt, _ = loop_mount(img)
    want = describe_tree(bundle / "rootfs")
    got = describe_tree(mnt)
    assert got == want
    # what the layers did, read from the oracle's side too
    assert "var/gone" not in want and "etc/passwd" not in want
    assert sorted(os.listdir(bundle / "rootfs/opt/old")) == ["c"]
    assert want["swap/was-dir"]["sha"] and "swap/was-file/now" in want
    assert want["usr/lib/hard"]["group"] == want["usr/lib/libx.so"]["group"]
    assert want["etc/hostname"]["xattrs"] == {"user.a": b"b"}


def test_blocks_equal_across_layers_stored_once(layout, tmp_path):
    """The default (--dedup=block) stores BIG once though three layers'
    files hold it; --dedup=none writes every copy."""
    shared, plain = tmp_path / "shared.img", tmp_path / "plain.img"
    mkfs(shared, f"oci:{layout}:t", opts=["-b", "4096", "-N", "256"],
         check=True)
    mkfs(plain, f"oci:{layout}:t", opts=["-b", "4096", "-N", "256",
                                         "--dedup=none"])
    checked(shared)
    checked(plain)
    # BIG (4 blocks) is in usr/bin/tool twice (layers 1 and 4, the
    # first gone), libx.so (and its links) and libx-again.so: at least 4
    # blocks fewer when shared
    assert used_blocks(plain) - used_blocks(shared) >= 4, \
        (used_blocks(plain), used_blocks(shared))


def test_layers_from_d_and_list_equal_oci(layout, tmp_path):
    """The layout's blobs as -d archives (gzip read by libarchive), as a
    layer list, and through oci: the same image, byte for byte."""
    blobs = layer_blobs(layout)
    a, b, c = (tmp_path / n for n in ("d.img", "list.img", "oci.img"))
    mkfs(a, *blobs)
    lst = tmp_path / "layers.txt"
    lst.write_text("# the layers\n\n" + "".join(f"{p}\n" for p in blobs))
    mkfs(b, f"layers:{lst}")
    mkfs(c, f"oci:{layout}")                   # the only manifest: no tag
    checked(a)
    for other in (b, c):
        res = subprocess.run(["cmp", str(a), str(other)],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("what", ["layers", "oci"])
def test_reproducible_under_malloc_perturb(layout, tmp_path, what):
    src = layer_blobs(layout) if what == "layers" else [f"oci:{layout}:t"]
    imgs = [tmp_path / "a.img", tmp_path / "b.img"]
    mkfs(imgs[0], *src, perturb="85")
    mkfs(imgs[1], *src, perturb="170")
    res = subprocess.run(["cmp", str(imgs[0]), str(imgs[1])],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_digest_mismatch_names_the_blob(layout, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(layout, bad)
    blob = layer_blobs(bad)[1]
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xff
    os.chmod(blob, 0o644)
    blob.write_bytes(bytes(data))
    img = tmp_path / "bad.img"
    res = mkfs(img, f"oci:{bad}:t", check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert str(blob) in res.stderr and "digest mismatch" in res.stderr, \
        res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not img.exists()


def test_layout_errors(layout, tmp_path):
    img = tmp_path / "x.img"
    res = mkfs(img, f"oci:{layout}:nosuch", check=False)
    assert res.returncode == 1 and "no manifest tagged 'nosuch'" in \
        res.stderr, res.stderr
    res = mkfs(img, f"oci:{tmp_path}", check=False)
    assert res.returncode == 1 and "oci-layout" in res.stderr, res.stderr
    res = mkfs(img, f"oci:{layout}:t", "x.tar", check=False)
    assert res.returncode == 1 and "only -d" in res.stderr, res.stderr
    assert not img.exists()


def test_update_with_the_layouts_layers(layout, tmp_path, loop_mount):
    """The first two layers built, each next one applied in place with
    --update -d BLOB: the tree umoci unpacks."""
    blobs = layer_blobs(layout)
    img = tmp_path / "u.img"
    mkfs(img, *blobs[:2], opts=["-N", "256"], check=True)
    for b in blobs[2:]:
        helpers.run([helpers.binary("mkfs.extref"), "-q", "--update", "-d",
                     b, img])
    checked(img)
    bundle = tmp_path / "bundle"
    umoci("unpack", "--image", f"{layout}:t", bundle)
    mnt, _ = loop_mount(img)
    assert describe_tree(mnt) == describe_tree(bundle / "rootfs")
