"""mkfs.extref -d A.tar -d B.tar ...: archives applied in order as OCI
layers (mkfs.extref(8), LAYERS AND OCI IMAGES), each scenario made here
with Python's tarfile.

Oracle nobody here wrote: the same tars added to an OCI layout with
Debian's `umoci raw add-layer` and unpacked with `umoci unpack`, compared
with the image through a read-only kernel loop mount (bytes, type, mode,
owner, xattrs, symlink targets, hard links); stock e2fsck -fn and
fsck.extref -fn on every image; dumpe2fs's free block count.  The same
layers applied one by one to an existing image (--update -d LAYER.tar)
give the same tree.
"""
import os
import shutil
import tarfile

import pytest

import helpers
from test_mkfs_oci import checked, describe_tree, tar_add, used_blocks

pytestmark = pytest.mark.skipif(shutil.which("umoci") is None,
                                reason="umoci is not installed")

D, L, S = tarfile.DIRTYPE, tarfile.LNKTYPE, tarfile.SYMTYPE
BLOB = bytes(range(251)) * 100          # 25100 bytes: 7 blocks


def write_tar(path, entries):
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            name, kw = e[0], dict(e[1]) if len(e) > 1 else {}
            tar_add(t, name, **kw)


SCENARIOS = {
    # a whiteout in the layer that wrote the name leaves it; one naming
    # nothing is dropped
    "own_whiteout": [
        [("a", {"data": b"a1"}), ("d", {"typ": D}), ("d/x", {"data": b"x"})],
        [("b", {"data": b"b2"}), (".wh.b", {}), (".wh.nothing", {}),
         ("d/.wh.x", {}), ("d/y", {"data": b"y"})],
    ],
    # the opaque marker after its layer's own entries keeps them
    "opaque_after_own": [
        [("o", {"typ": D}), ("o/old1", {"data": b"1"}),
         ("o/sub", {"typ": D}), ("o/sub/deep", {"data": b"deep"})],
        [("o", {"typ": D, "mode": 0o700}), ("o/mine", {"data": b"mine"}),
         ("o/.wh..wh..opq", {}), ("o/after", {"data": b"after"})],
    ],
    # a directory becomes a file, then a directory again; a symlink
    # becomes a directory
    "type_changes": [
        [("p", {"typ": D}), ("p/q", {"typ": D}), ("p/q/r", {"data": b"r"}),
         ("s", {"typ": S, "link": "p"})],
        [("p", {"data": b"now a file", "mode": 0o600, "uid": 5})],
        [("p", {"typ": D, "mode": 0o750}), ("p/new", {"data": b"n"}),
         ("s", {"typ": D}), ("s/in", {"data": b"in"})],
    ],
    # a hard link to a lower layer's file keeps it when the first name
    # goes; the same bytes in every layer
    "links_and_repeats": [
        [("lib", {"typ": D}), ("lib/a.so", {"data": BLOB}),
         ("lib/a2.so", {"typ": L, "link": "lib/a.so"})],
        [("lib/b.so", {"data": BLOB}),
         ("lib/a3.so", {"typ": L, "link": "lib/a.so"}),
         ("lib/.wh.a.so", {})],
        [("lib/c.so", {"data": BLOB, "xattrs": {"user.k": "v"}}),
         ("lib/a2.so", {"data": BLOB + b"!"})],
    ],
}


@pytest.mark.parametrize("how", ["build", "update"])
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_layers_are_umoci_unpack(name, how, tmp_path, loop_mount):
    tars = []
    for i, entries in enumerate(SCENARIOS[name]):
        tars.append(tmp_path / f"l{i}.tar")
        write_tar(tars[-1], entries)
    img = tmp_path / "l.img"
    mkfs = helpers.binary("mkfs.extref")
    if how == "build":
        helpers.run([mkfs, "-q", *[a for t in tars for a in ("-d", t)],
                     img])
    else:           # the first layer, then each next one in place
        helpers.run([mkfs, "-q", "-d", tars[0], img, "16M"])
        for t in tars[1:]:
            helpers.run([mkfs, "-q", "--update", "-d", t, img])
    checked(img)
    oci = tmp_path / "oci"
    helpers.run(["umoci", "init", "--layout", oci])
    helpers.run(["umoci", "new", "--image", f"{oci}:t"])
    for t in tars:
        helpers.run(["umoci", "raw", "add-layer", "--no-history", "--image",
                     f"{oci}:t", t])
    helpers.run(["umoci", "unpack", "--image", f"{oci}:t",
                 tmp_path / "bundle"])
    mnt, _ = loop_mount(img)
    assert describe_tree(mnt) == describe_tree(tmp_path / "bundle/rootfs")


def test_repeated_blocks_stored_once(tmp_path):
    """BLOB in three layers' files, one of them gone: its 7 blocks once
    with the layers' default, every copy with --dedup=none."""
    tars = []
    for i, entries in enumerate(SCENARIOS["links_and_repeats"]):
        tars.append(tmp_path / f"l{i}.tar")
        write_tar(tars[-1], entries)
    imgs = {}
    for mode in ("default", "none"):
        imgs[mode] = tmp_path / f"{mode}.img"
        opts = [] if mode == "default" else ["--dedup=none"]
        helpers.run([helpers.binary("mkfs.extref"), "-q", "-N", "64", *opts,
                     *[a for t in tars for a in ("-d", t)], imgs[mode],
                     "8M"])
        checked(imgs[mode])
    # none: a.so (kept by a3.so), b.so, c.so, a2.so's new 7 blocks: 28;
    # shared: BLOB's 6 whole blocks once, its tail and a2's own
    assert used_blocks(imgs["none"]) - used_blocks(imgs["default"]) >= 12


def test_layer_errors_name_the_layer(tmp_path):
    good = tmp_path / "good.tar"
    write_tar(good, [("f", {"data": b"f"})])
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"this is not an archive at all" * 40)
    img = tmp_path / "e.img"
    mkfs = helpers.binary("mkfs.extref")
    res = helpers.run([mkfs, "-d", good, "-d", bad, img], check=False)
    assert res.returncode == 1 and str(bad) in res.stderr, res.stderr
    res = helpers.run([mkfs, "-d", good, "-d", tmp_path, img], check=False)
    assert res.returncode == 1 and "must be an archive file" in res.stderr
    lst = tmp_path / "list"
    lst.write_text(f"{good}\n{tmp_path}/missing.tar\n")
    res = helpers.run([mkfs, "-d", f"layers:{lst}", img], check=False)
    assert res.returncode == 1 and "missing.tar" in res.stderr, res.stderr
    lst.write_text("# nothing\n")
    res = helpers.run([mkfs, "-d", f"layers:{lst}", img], check=False)
    assert res.returncode == 1 and "names no archive" in res.stderr
    assert not img.exists()


def test_update_layer_shares_what_the_image_holds(tmp_path):
    """A layer repeating a file of the image writes none of its data."""
    base, top = tmp_path / "base.tar", tmp_path / "top.tar"
    write_tar(base, [("lib", {"typ": D}), ("lib/a.so", {"data": BLOB})])
    write_tar(top, [("lib/again.so", {"data": BLOB}),
                    ("lib/.wh.a.so", {})])
    img = tmp_path / "u.img"
    mkfs = helpers.binary("mkfs.extref")
    helpers.run([mkfs, "-q", "-d", base, img, "16M"])
    before = used_blocks(img)
    res = helpers.run([mkfs, "--update", "-d", top, img])
    assert "new data written          0.0 MiB" in res.stdout, res.stdout
    checked(img)
    assert used_blocks(img) <= before + 1, (before, used_blocks(img))
    out = helpers.debugfs(img, "ls -l /lib").stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert "again.so" in names and "a.so" not in names, out
    res = helpers.run([mkfs, "--update", "--at", "/lib", "-d", top, img],
                      check=False)
    assert res.returncode == 1 and "no --at" in res.stderr, res.stderr
