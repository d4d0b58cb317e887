"""Reproducible from SOURCE_DATE_EPOCH alone (mkfs.extref(8),
REPRODUCIBLE BUILDS): with the epoch set and neither -U nor -E
hash_seed=, the UUID and the directory hash seed are derived from the
epoch, the label and the source's digest, so two builds of the same
source are the same bytes, for every kind of source (a directory, an
archive from a file or a pipe, layers, a layer list, an OCI image
layout, another image) and for --update, with --grow growing the image
too.

The two runs of each build differ in everything that must not matter:
MALLOC_PERTURB_, umask, LC_ALL, the path of the source and, for a
directory, the order its entries were created in (the second tree is
made in reverse order on a tmpfs, which lists it in another order).
Each tree holds a directory of a few hundred names, indexed (htree), so
that the hash seed reaches the directory blocks.

Oracles: `cmp` of whole images; stock dumpe2fs for the UUID and the
hash seed; Python's uuid.uuid5 (RFC 4122 name-based UUIDs) for the
documented derivation of an image made without a source; stock e2fsck
-fn on every image.
"""
import gzip
import hashlib
import io
import json
import os
import random
import shutil
import stat
import subprocess
import tarfile
import tempfile
import uuid

import pytest

import helpers
from test_builder_inputs import write_tar

EPOCH = "1500000000"
TIME = 1400000000                       # every source mtime, below EPOCH
ATIME = 1600000000                      # above it: clamped, whatever the
                                        # host's reads do to it
WIDE = 300                              # names: an indexed directory
UUID = "5a1f3e2d-0c4b-4a69-8e7f-00112233aabb"
NS = uuid.UUID("dc2221d4-187f-42a9-a5a0-0cf29434ec41")   # the man page's
RUNS = [  # what differs between the two runs of one build
    {"MALLOC_PERTURB_": "1", "LC_ALL": "C", "umask": "022"},
    {"MALLOC_PERTURB_": "170", "LC_ALL": "C.UTF-8", "umask": "077"},
]


def entries():
    """(path, kind, payload) of the source tree, in sorted order."""
    out = [("etc", "dir", None), ("etc/hosts", "file", b"127.0.0.1 x\n"),
           ("etc/motd", "file", b"hello\n" * 700),
           ("etc/link", "sym", "hosts"), ("wide", "dir", None),
           ("zero", "file", b"\0" * 8192 + b"end")]
    out += [(f"wide/name-{i:04d}-" + "x" * (i % 23), "file",
             b"%d\n" % i if i % 50 == 0 else b"") for i in range(WIDE)]
    return sorted(out)


def make_tree(root, reverse, change=None):
    """The tree under root, its entries made in sorted or reverse order;
    change: a path whose bytes are changed (same size)."""
    os.mkdir(root)
    todo = entries()
    dirs = [p for p, k, _ in todo if k == "dir"]
    for p in sorted(dirs, reverse=reverse):
        os.mkdir(os.path.join(root, p))
    for p, kind, data in sorted(todo, reverse=reverse):
        full = os.path.join(root, p)
        if kind == "file":
            if p == change:
                data = bytes(b ^ 1 for b in data)
            with open(full, "wb") as f:
                if reverse and data.startswith(b"\0" * 8192):
                    f.seek(8192)        # b's copy sparse: a hole first
                    data = data[8192:]
                f.write(data)
            os.chmod(full, 0o644)
        elif kind == "sym":
            os.symlink(data, full)
    for p in [p for p, _, _ in todo] + [""]:
        full = os.path.join(root, p)
        if not os.path.islink(full) and os.path.isdir(full):
            os.chmod(full, 0o755)
        os.utime(full, (ATIME, TIME), follow_symlinks=False)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    """Two copies of the tree: a in sorted order here, b in reverse order
    on a tmpfs, its file of zeros sparse; and c, a with one file's bytes
    changed."""
    base = tmp_path_factory.mktemp("epoch")
    shm = tempfile.mkdtemp(prefix="extref-epoch-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm")
                           else None)
    try:
        a, b, c = base / "a", os.path.join(shm, "b"), base / "c"
        make_tree(a, False)
        make_tree(b, True)
        make_tree(c, False, change="etc/hosts")
        yield {"a": str(a), "b": b, "c": str(c), "base": base}
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def mkfs(run, *args, stdin=None, epoch=EPOCH):
    """mkfs.extref -q ARGS under run's environment (RUNS), the epoch set
    (or not, epoch None), nothing else of the caller's."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("SOURCE_DATE_EPOCH", "MALLOC_PERTURB_")}
    env.update({k: v for k, v in run.items() if k != "umask"})
    if epoch is not None:
        env["SOURCE_DATE_EPOCH"] = epoch
    cmd = ["sh", "-c", f'umask {run["umask"]} && exec "$@"', "sh",
           helpers.binary("mkfs.extref"), "-q", *map(str, args)]
    res = subprocess.run(cmd, env=env, stdin=stdin, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, helpers.describe(res)


def same(a, b):
    res = subprocess.run(["cmp", str(a), str(b)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    helpers.e2fsck_fn(a)


def ids(img):
    h = helpers.dumpe2fs_header(img)
    return h["Filesystem UUID"], h["Directory Hash Seed"]


def tar_of(root, path, compress=False):
    """root as a tar (sorted, pax), gzip'd without a name or a time."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for p, _, _ in entries():
            t.add(os.path.join(root, p), arcname=p, recursive=False)
    data = buf.getvalue()
    if compress:
        data = gzip.compress(data, mtime=0)
    with open(path, "wb") as f:
        f.write(data)


def tar_entries(path, items):
    """A layer: items are (name, bytes or None for a directory)."""
    write_tar(path, items, mtime=TIME)


def layers(dst, root):
    """Two layers: the tree, then one that deletes and opaques."""
    l0, l1 = dst / "l0.tar", dst / "l1.tar"
    tar_of(root, l0)
    tar_entries(l1, [("etc/.wh.motd", b""), ("wide/.wh..wh..opq", b""),
                     ("wide/only", b"only\n"), ("new", None),
                     ("new/f", b"f\n" * 3000)])
    return [l0, l1]


def oci_layout(dst, tars):
    """An OCI image layout of tars, tag t (blobs sha256, gzip'd)."""
    blobs = dst / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def blob(data):
        d = hashlib.sha256(data).hexdigest()
        (blobs / d).write_bytes(data)
        return {"digest": "sha256:" + d, "size": len(data)}

    lays, diffs = [], []
    for t in tars:
        raw = t.read_bytes()
        diffs.append("sha256:" + hashlib.sha256(raw).hexdigest())
        lays.append(dict(blob(gzip.compress(raw, mtime=0)), mediaType=
                         "application/vnd.oci.image.layer.v1.tar+gzip"))
    config = blob(json.dumps({
        "architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": diffs}}).encode())
    config["mediaType"] = "application/vnd.oci.image.config.v1+json"
    manifest = blob(json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": lays}).encode())
    manifest.update(mediaType="application/vnd.oci.image.manifest.v1+json",
                    annotations={"org.opencontainers.image.ref.name": "t"})
    (dst / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (dst / "index.json").write_text(json.dumps(
        {"schemaVersion": 2, "manifests": [manifest]}))
    return dst


def twice(tmp_path, name, args_of, size=None):
    """The build made in both runs (args_of(i): its sources); the two
    images, equal and clean."""
    imgs = []
    for i, run in enumerate(RUNS):
        img = tmp_path / f"{name}{i}.img"
        mkfs(run, *args_of(i), img, *([size] if size else []))
        imgs.append(img)
    same(*imgs)
    return imgs


def copies(tmp_path, name, make):
    """make(path) run into two directories: the same bytes at two
    paths."""
    out = []
    for i in range(2):
        d = tmp_path / f"{name}-{i}"
        d.mkdir()
        out.append(make(d))
    return out


def test_directory(trees, tmp_path):
    """-d DIR, the second tree made in reverse order elsewhere, one file
    sparse: the same image, its UUID and hash seed not mke2fs's random ones (another
    build at the same epoch of a tree with one file's bytes changed
    gets others)."""
    imgs = twice(tmp_path, "dir", lambda i: ["-d", trees["ab"[i]]])
    assert os.listdir(trees["a"] + "/wide") != \
        os.listdir(trees["b"] + "/wide"), "the two trees list alike"
    assert os.stat(trees["b"] + "/zero").st_blocks < \
        os.stat(trees["a"] + "/zero").st_blocks, "b's copy is not sparse"
    out = helpers.debugfs(imgs[0], "htree /wide").stdout
    assert "Root node dump" in out, out[:300]
    other = tmp_path / "other.img"
    mkfs(RUNS[0], "-d", trees["c"], other)
    helpers.e2fsck_fn(other)
    u, s = ids(imgs[0])
    uc, sc = ids(other)
    assert u != uc and s != sc


def test_archives(trees, tmp_path):
    """-d A.tar.gz from two paths; -d - from a pipe with SIZE (spooled
    to be digested); a plain tar with a label."""
    gz = copies(tmp_path, "gz", lambda d: (tar_of(trees["a"], d / "a.tgz",
                                                  True), d / "a.tgz")[1])
    twice(tmp_path, "gz", lambda i: ["-d", gz[i]])
    imgs = []
    for i, run in enumerate(RUNS):
        img = tmp_path / f"pipe{i}.img"
        cat = subprocess.Popen(["cat", str(gz[i])], stdout=subprocess.PIPE)
        mkfs(run, "-d", "-", img, "32M", stdin=cat.stdout)
        cat.stdout.close()
        assert cat.wait() == 0
        imgs.append(img)
    same(*imgs)
    tars = copies(tmp_path, "tar", lambda d: (tar_of(trees["b"], d / "b.tar"),
                                              d / "b.tar")[1])
    imgs = twice(tmp_path, "tar", lambda i: ["-L", "root", "-d", tars[i]])
    assert helpers.dumpe2fs_header(imgs[0])["Filesystem volume name"] == \
        "root"


def test_layers_list_and_oci(trees, tmp_path):
    """-d L0 -d L1, -d layers:LIST and -d oci:DIR:t."""
    lays = copies(tmp_path, "lay", lambda d: layers(d, trees["a"]))
    twice(tmp_path, "layers",
          lambda i: [a for t in lays[i] for a in ("-d", t)])
    lists = []
    for i in range(2):
        lst = tmp_path / f"list{i}"
        lst.write_text("".join(f"{t}\n" for t in lays[i]))
        lists.append(lst)
    twice(tmp_path, "list", lambda i: ["-d", f"layers:{lists[i]}"])
    ocis = copies(tmp_path, "oci", lambda d: oci_layout(d, lays[0]))
    twice(tmp_path, "oci", lambda i: ["-d", f"oci:{ocis[i]}:t"])


def test_image_source(trees, tmp_path):
    """-d IMAGE: a stock mke2fs -d image (fixed UUID and seed, fake
    time), copied to two paths, one of them sparse."""
    src = tmp_path / "src.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-U", UUID, "-E",
                 f"hash_seed={UUID}", "-d", trees["a"], src, "16M"],
                env={"E2FSPROGS_FAKE_TIME": str(TIME)})
    full = tmp_path / "full.img"
    helpers.run(["cp", "--sparse=never", src, full])
    assert os.stat(full).st_blocks > os.stat(src).st_blocks
    twice(tmp_path, "img", lambda i: ["-d", [src, full][i]])


def test_update(trees, tmp_path):
    """--update -d DIR (the two trees) and --update -d LAYER.tar of two
    copies of one image: the same image."""
    base = tmp_path / "base.img"
    mkfs(RUNS[0], "-d", trees["c"], base, "32M")
    helpers.e2fsck_fn(base)
    lay = copies(tmp_path, "ul", lambda d: layers(d, trees["a"])[1])
    imgs = []
    for i, run in enumerate(RUNS):
        img = tmp_path / f"up{i}.img"
        shutil.copyfile(base, img)
        mkfs(run, "--update", "-d", trees["ab"[i]], img)
        mkfs(run, "--update", "-d", lay[i], img)
        imgs.append(img)
    same(*imgs)
    assert helpers.debugfs_cat(imgs[0], "/etc/hosts") == b"127.0.0.1 x\n"


def test_update_grow(trees, tmp_path):
    """--update --grow that grows (stock resize2fs, then the grown image
    proven and recorded) of two copies of one image: the same image, the
    record of the superblock in inode 5's header (FORMAT.md section 11)
    at the epoch too, not the clock of the session after the grow."""
    base = tmp_path / "base.img"
    mkfs(RUNS[0], "-d", trees["c"], base)
    # 12 MiB of blocks all different: the update cannot share them
    big = random.Random(7).randbytes(12 << 20)
    lay = copies(tmp_path, "gl", lambda d: (tar_entries(
        d / "big.tar", [("big", big)]), d / "big.tar")[1])
    imgs = []
    for i, run in enumerate(RUNS):
        img = tmp_path / f"grow{i}.img"
        shutil.copyfile(base, img)
        mkfs(run, "--update", "--grow", "-d", lay[i], img)
        assert img.stat().st_size > base.stat().st_size, "nothing grew"
        imgs.append(img)
    same(*imgs)
    assert helpers.debugfs_cat(imgs[0], "/big") == big


def test_explicit_uuid_and_seed_win(trees, tmp_path):
    """-U and -E hash_seed= given are used as they are; with -U alone the
    seed is still derived (the same twice), and not the -U's value."""
    imgs = twice(tmp_path, "u", lambda i: ["-U", UUID, "-d", trees["ab"[i]]])
    u, s = ids(imgs[0])
    assert u == UUID and s != UUID
    seed = "0f0e0d0c-0b0a-4909-8807-060504030201"
    img = tmp_path / "s.img"
    mkfs(RUNS[1], "-E", f"hash_seed={seed}", "-d", trees["a"], img)
    assert ids(img)[1] == seed
    helpers.e2fsck_fn(img)
    derived = tmp_path / "d.img"
    mkfs(RUNS[0], "-d", trees["a"], derived)
    helpers.e2fsck_fn(derived)
    assert ids(derived)[0] == ids(img)[0], "hash_seed= changed the UUID"


def test_no_source_derivation_is_documented(tmp_path):
    """An image made without a source: the UUID is uuid5(extref's
    namespace, "uuid" NUL EPOCH NUL LABEL NUL), the seed uuid5(UUID,
    "hash_seed" NUL EPOCH), as mkfs.extref(8) says; without the epoch,
    random as before."""
    img = tmp_path / "e.img"
    mkfs(RUNS[0], "-L", "data", img, "16M")
    u = uuid.uuid5(NS, f"uuid\0{EPOCH}\0data\0")
    assert ids(img) == (str(u), str(uuid.uuid5(u, f"hash_seed\0{EPOCH}")))
    helpers.e2fsck_fn(img)
    rnd = []
    for i, run in enumerate(RUNS):
        rnd.append(tmp_path / f"r{i}.img")
        mkfs(run, "-L", "data", rnd[-1], "16M", epoch=None)
        helpers.e2fsck_fn(rnd[-1])
    assert ids(rnd[0])[0] != ids(rnd[1])[0]
