"""mkfs.extref refuses, at once, inputs that would block or take hours
(issue 29 section 3): a FIFO where a file is expected (a layer, a name in
a layers: list, a file of an OCI layout), and an OCI blob whose size
disagrees with its descriptor (refused before it is hashed).  A pipe
given on purpose (-d -, a single -d FIFO) is still read.

Oracles: layouts made by Debian's umoci; stock e2fsck -fn on the images
that are made; `timeout 10` around every run, so a regression fails
instead of hanging.
"""
import json
import os
import shutil
import subprocess
import tarfile
import threading

import pytest

import helpers

pytestmark = pytest.mark.skipif(shutil.which("umoci") is None,
                                reason="umoci is not installed")



def _tar(path, name="f", data=b"hello\n"):
    src = path.parent / (path.name + ".d")
    src.mkdir()
    (src / name).write_bytes(data)
    with tarfile.open(path, "w") as t:
        t.add(src / name, arcname=name)
    return path


def _mkfs(img, *sources, stdin=None):
    args = ["timeout", "10", helpers.binary("mkfs.extref"), "-q"]
    for s in sources:
        args += ["-d", str(s)]
    return subprocess.run([*args, str(img)], stdin=stdin,
                          capture_output=True, text=True)


def _refused(res, path, needle="not a regular file"):
    # 124: `timeout 10` stopped it (blocked in open(), or hashing the
    # blob); no wall-clock bound beyond that (sanitizers, a loaded CI)
    assert res.returncode == 1, helpers.describe(res)
    assert str(path) in res.stderr and needle in res.stderr, res.stderr


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    """An OCI layout of two layers, tag t, made by umoci."""
    base = tmp_path_factory.mktemp("oci")
    oci = base / "oci"
    helpers.run(["umoci", "init", "--layout", str(oci)])
    helpers.run(["umoci", "new", "--image", f"{oci}:t"])
    for i in (1, 2):
        d = base / f"l{i}"
        d.mkdir()
        (d / f"file{i}").write_text(f"layer {i}\n")
        helpers.run(["umoci", "insert", "--no-history", "--image",
                     f"{oci}:t", str(d), "/"])
    return oci


def _copy(layout, tmp_path):
    oci = tmp_path / "oci"
    shutil.copytree(layout, oci)
    return oci


def _blobs(oci):
    """The manifest's blob, then the config's and the layers'."""
    index = json.loads((oci / "index.json").read_text())
    (m,) = index["manifests"]
    path = lambda digest: oci / "blobs" / digest.replace(":", "/")
    man = json.loads(path(m["digest"]).read_text())
    return ([path(m["digest"]), path(man["config"]["digest"])] +
            [path(lay["digest"]) for lay in man["layers"]])


def _replace(blob, how):
    os.chmod(blob.parent, 0o755)
    blob.unlink()
    how(blob)


def test_fifo_as_second_layer(tmp_path):
    base = _tar(tmp_path / "base.tar")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    img = tmp_path / "x.img"
    res = _mkfs(img, base, fifo)
    _refused(res, fifo)
    assert not img.exists()


def test_fifo_in_a_layer_list(tmp_path):
    base = _tar(tmp_path / "base.tar")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    lst = tmp_path / "list"
    lst.write_text(f"{base}\n{fifo}\n")
    img = tmp_path / "x.img"
    res = _mkfs(img, f"layers:{lst}")
    _refused(res, fifo)
    assert not img.exists()


@pytest.mark.parametrize("which", ["manifest", "config", "layer",
                                   "index.json"])
def test_fifo_in_an_oci_layout(layout, tmp_path, which):
    oci = _copy(layout, tmp_path)
    blobs = _blobs(oci)
    target = {"manifest": blobs[0], "config": blobs[1], "layer": blobs[-1],
              "index.json": oci / "index.json"}[which]
    _replace(target, os.mkfifo)
    img = tmp_path / "x.img"
    res = _mkfs(img, f"oci:{oci}:t")
    _refused(res, target)
    assert not img.exists()


def test_sparse_tib_blob_refused_by_its_size(layout, tmp_path):
    oci = _copy(layout, tmp_path)
    blob = _blobs(oci)[-1]
    _replace(blob, lambda p: os.truncate(os.open(p, os.O_CREAT | os.O_WRONLY,
                                                 0o644), 1 << 40))
    img = tmp_path / "x.img"
    res = _mkfs(img, f"oci:{oci}:t")
    _refused(res, blob, f"{1 << 40} bytes, its descriptor says")
    assert not img.exists()


def test_oci_layout_still_builds(layout, tmp_path):
    img = tmp_path / "x.img"
    res = _mkfs(img, f"oci:{layout}:t")
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)


def test_pipes_given_on_purpose_still_read(tmp_path):
    """-d - reads standard input; a single -d FIFO waits for its
    writer, as mkfs.extref(8) says."""
    tar = _tar(tmp_path / "a.tar", "fromstdin", b"stdin\n")
    img = tmp_path / "stdin.img"
    with open(tar, "rb") as f:
        res = _mkfs(img, "-", stdin=subprocess.Popen(
            ["cat"], stdin=f, stdout=subprocess.PIPE).stdout)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    assert "fromstdin" in helpers.run(["debugfs", "-R", "ls -l /",
                                       str(img)]).stdout

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(
        target=lambda: open(fifo, "wb").write(tar.read_bytes()))
    writer.start()
    img2 = tmp_path / "fifo.img"
    res = _mkfs(img2, fifo)
    writer.join()
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img2)
    assert "fromstdin" in helpers.run(["debugfs", "-R", "ls -l /",
                                       str(img2)]).stdout
