"""The builder's inputs (issue 29, section 3): names no image may hold and
files past ext4's limits, refused from every source before they do harm.

Names: every name of a directory, an archive, a layer or an image goes
through one check (libfs/builder/names.c): no empty name, no "." or "..",
no '/' or NUL, at most 255 bytes; in a layer, a whiteout must name
something other than "." or "..", and ".wh." names are last components.
A layer entry ".wh.." deleted the root inode (stock e2fsck 12) and
"d/.wh..." freed a directory's inode; `--update -d` did it in place.

Sizes: ext4 maps logical blocks below 2^32-1 (the kernel's EXT_MAX_BLOCKS,
ext4_max_size), so with 1024-byte blocks no file is longer than
4 TiB - 1 KiB.  A 5 TiB sparse file wrapped its tail to 1 GiB; an image
source's i_size of 2^63-1 was copied.  The oracles are stock e2fsck -fn
and stock debugfs.
"""

import io
import shutil
import subprocess
import tarfile

import pytest

import helpers

KIB = 1024
LIMIT_1K = (2**32 - 1) * KIB         # ext4's largest file, 1 KiB blocks


def write_tar(path, entries, mtime=1700000000):
    """entries: (name, bytes) for a file, (name, None) for a directory;
    made by Python's tarfile (PAX: names of any length)."""
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for name, data in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = mtime
            if data is None:
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
            else:
                ti.size, ti.mode = len(data), 0o644
                t.addfile(ti, io.BytesIO(data))
    return path


BASE = [("d", None), ("d/x", b"hello\n"), ("y", b"world\n"),
        ("d/sub", None), ("d/sub/z", b"z\n")]


@pytest.fixture
def base_tar(tmp_path):
    return write_tar(tmp_path / "base.tar", BASE)


def mkfs(*args, check=False):
    return helpers.run([helpers.binary("mkfs.extref"), *map(str, args)],
                       check=check)


def refused(res, *words):
    assert res.returncode != 0, helpers.describe(res)
    for w in words:
        assert w in res.stderr, f"{w!r} not in the message\n" + \
            helpers.describe(res)


def names_in(img, path):
    """The names in directory path, by stock debugfs ls -p
    (/ino/mode/uid/gid/name/size/ a line)."""
    out = helpers.debugfs(img, f"ls -p {path}").stdout
    return {line.split("/")[5] for line in out.splitlines()
            if line.count("/") >= 6}


# ----- names -----

BAD_WHITEOUTS = [".wh..", ".wh...", "d/.wh..", "d/.wh...", "d/sub/.wh..",
                 ".wh.", "d/.wh."]


@pytest.mark.parametrize("name", BAD_WHITEOUTS)
def test_whiteout_of_dot_refused_in_a_layer(name, base_tar, tmp_path):
    layer = write_tar(tmp_path / "l.tar", [(name, b"")])
    img = tmp_path / "img"
    res = mkfs("-d", base_tar, "-d", layer, img, "8M")
    refused(res, "l.tar", name)


@pytest.mark.parametrize("name", BAD_WHITEOUTS)
def test_whiteout_of_dot_refused_by_update(name, base_tar, tmp_path):
    img = tmp_path / "img"
    mkfs("-d", base_tar, img, "8M", check=True)
    before = helpers.sha256(img)
    # a good entry first: the refusal must undo it too
    layer = write_tar(tmp_path / "l.tar", [("new", b"n" * 5000),
                                           (name, b"")])
    res = mkfs("--update", "-d", layer, img)
    refused(res, name)
    assert helpers.sha256(img) == before, "the image changed"
    helpers.e2fsck_fn(img)
    assert helpers.debugfs_cat(img, "/d/x") == b"hello\n"


@pytest.mark.parametrize("path", ["d/.wh.q/f", ".wh.q/f"])
def test_whiteout_name_as_a_directory_refused(path, base_tar, tmp_path):
    layer = write_tar(tmp_path / "l.tar", [(path, b"f")])
    res = mkfs("-d", base_tar, "-d", layer, tmp_path / "img", "8M")
    refused(res, path)
    img = tmp_path / "u"
    mkfs("-d", base_tar, img, "8M", check=True)
    before = helpers.sha256(img)
    refused(mkfs("--update", "-d", layer, img), path)
    assert helpers.sha256(img) == before


@pytest.mark.skipif(not shutil.which("umoci"), reason="needs umoci")
def test_whiteout_of_dot_refused_in_an_oci_layout(base_tar, tmp_path):
    """The same check for an OCI layout's layers (umoci raw add-layer
    takes the layer as it is): the error names the blob and the entry."""
    oci = tmp_path / "oci"
    helpers.run(["umoci", "init", "--layout", oci])
    helpers.run(["umoci", "new", "--image", f"{oci}:t"])
    bad = write_tar(tmp_path / "bad.tar", [("d/.wh..", b"")])
    for layer in (base_tar, bad):
        helpers.run(["umoci", "raw", "add-layer", "--no-history", "--image",
                     f"{oci}:t", layer])
    res = mkfs("-d", f"oci:{oci}:t", tmp_path / "img", "8M")
    refused(res, "blobs/sha256/", "d/.wh..")


def test_name_longer_than_255_refused(base_tar, tmp_path):
    long = "n" * 256
    arch = write_tar(tmp_path / "long.tar", [(f"d/{long}", b"x")])
    refused(mkfs("-d", arch, tmp_path / "img", "8M"), "long.tar")
    ok = write_tar(tmp_path / "ok.tar", [("d/" + "n" * 255, b"x")])
    mkfs("-d", ok, tmp_path / "ok", "8M", check=True)
    helpers.e2fsck_fn(tmp_path / "ok")
    assert helpers.debugfs_cat(tmp_path / "ok", "/d/" + "n" * 255) == b"x"


def test_good_whiteouts_still_apply(base_tar, tmp_path):
    """The check refuses only what names nothing: ".wh.y" removes y,
    ".wh..wh..opq" empties its directory of the layers below's."""
    layer = write_tar(tmp_path / "l.tar", [(".wh.y", b""),
                                           ("d/.wh..wh..opq", b""),
                                           ("d/w", b"w\n")])
    img = tmp_path / "img"
    mkfs("-d", base_tar, "-d", layer, img, "8M", check=True)
    helpers.e2fsck_fn(img)
    assert "y" not in names_in(img, "/")
    assert names_in(img, "/d") == {".", "..", "w"}


def test_dot_names_in_a_plain_archive_are_plain(tmp_path):
    """Outside layers ".wh.." is an ordinary name (mke2fs -d would copy
    it): kept."""
    arch = write_tar(tmp_path / "a.tar", [(".wh..", b"a"), ("d/.wh...",
                                                             b"b")])
    img = tmp_path / "img"
    mkfs("-d", arch, img, "8M", check=True)
    helpers.e2fsck_fn(img)
    assert helpers.debugfs_cat(img, "/.wh..") == b"a"
    assert helpers.debugfs_cat(img, "/d/.wh...") == b"b"


# ----- sizes -----

def sparse(path, size, tail=b"tail"):
    """A sparse file of size bytes whose last bytes are tail."""
    with open(path, "wb") as f:
        f.truncate(size)
        f.seek(size - len(tail))
        f.write(tail)
    return path


@pytest.fixture
def huge_dir(tmp_path):
    d = tmp_path / "big"
    d.mkdir()
    try:
        sparse(d / "huge", 5 * 2**40)
    except OSError as e:
        pytest.skip(f"the host filesystem holds no 5 TiB sparse file: {e}")
    return d


def test_5tib_file_refused_at_1k_blocks(huge_dir, tmp_path):
    res = mkfs("-b", "1024", "-d", huge_dir, tmp_path / "img", "64M")
    refused(res, "huge", "2^32-1", "4 TiB - 1 KiB")


def test_5tib_file_kept_at_4k_blocks(huge_dir, tmp_path):
    """16 TiB - 4 KiB is the limit there: the tail lands where it is."""
    img = tmp_path / "img"
    mkfs("-b", "4096", "-d", huge_dir, img, "64M", check=True)
    helpers.e2fsck_fn(img)
    st = helpers.debugfs_stat(img, "/huge")
    assert f"({5 * 2**40 // 4096 - 1}):" in st, st
    assert "Size: 5497558138880" in st or "Size: 5497558138884" in st


def test_size_limit_boundary(tmp_path):
    """A file exactly ext4's largest at 1 KiB blocks is copied (its last
    block is logical block 2^32-2); one byte more is refused."""
    d = tmp_path / "edge"
    d.mkdir()
    try:
        sparse(d / "f", LIMIT_1K)
    except OSError as e:
        pytest.skip(f"no 4 TiB sparse file here: {e}")
    img = tmp_path / "img"
    mkfs("-b", "1024", "-d", d, img, "64M", check=True)
    helpers.e2fsck_fn(img)
    st = helpers.debugfs_stat(img, "/f")
    assert f"({2**32 - 2}):" in st and f"Size: {LIMIT_1K}" in st, st
    sparse(d / "f", LIMIT_1K + 1)
    refused(mkfs("-b", "1024", "-d", d, tmp_path / "img2", "64M"), "f")


def test_5tib_file_refused_from_a_tar_and_a_layer(huge_dir, tmp_path,
                                                  base_tar):
    arch = tmp_path / "big.tar"
    helpers.run(["tar", "-C", huge_dir, "-cSf", arch, "huge"])
    refused(mkfs("-b", "1024", "-d", arch, tmp_path / "a", "64M"),
            "huge", "at most 4398046510080")
    refused(mkfs("-b", "1024", "-d", base_tar, "-d", arch, tmp_path / "l",
                 "64M"), "huge", "at most 4398046510080")


def test_5tib_file_refused_by_update(huge_dir, tmp_path, base_tar):
    img = tmp_path / "img"
    mkfs("-b", "1024", "-d", base_tar, img, "64M", check=True)
    before = helpers.sha256(img)
    arch = tmp_path / "big.tar"
    helpers.run(["tar", "-C", huge_dir, "-cSf", arch, "huge"])
    for src in (huge_dir, arch):
        refused(mkfs("--update", "-d", src, img), "huge", "2^32-1")
        assert helpers.sha256(img) == before, f"{src} changed the image"
    helpers.e2fsck_fn(img)


def test_image_source_size_refused(tmp_path):
    """A source image whose file says i_size 2^63-1 (stock debugfs sif)
    is refused, naming the file, not copied."""
    d = tmp_path / "s"
    d.mkdir()
    (d / "f").write_bytes(b"hi\n")
    src = tmp_path / "src.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-d", d,
                 src, "8M"])
    helpers.run(["debugfs", "-w", "-R",
                 "sif /f size 0x7fffffffffffffff", src])
    res = mkfs("-d", src, tmp_path / "img", "16M")
    refused(res, "/f", "9223372036854775807")
    assert not (tmp_path / "img").exists() or \
        subprocess.run(["e2fsck", "-fn", tmp_path / "img"],
                       capture_output=True).returncode == 0
