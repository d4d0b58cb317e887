"""Safety of debugfs.extref and the recursive reflink on hostile input.

    /usr/bin/python3 -m pytest tests/test_safety_shell.py

Each test builds its image with mkfs.extref and, for the hostile parts,
stock debugfs -w or dd; it checks that what the shell refuses leaves the
image byte for byte as it was (files read back through stock debugfs),
that stock e2fsck -fn and fsck.extref -fn stay clean, and that nothing
hangs (every run has a timeout).
"""

import subprocess

import pytest

import helpers as H

SHELL = "debugfs.extref"
TIMEOUT = 60
DATA = b"extref payload " * 300     # 4.5 KiB: several 1 KiB blocks
MAX_DEPTH = 1024                    # docs/debugfs.extref.8, reflink -r


# ----- helpers -----

def dbg(img, *requests, rw=False, extra=(), text=True):
    """debugfs.extref [-w] -R REQUEST, or -f - with several requests."""
    cmd = [H.binary(SHELL), *extra]
    if rw:
        cmd.append("-w")
    if len(requests) == 1:
        cmd += ["-R", requests[0]]
        inp = None
    else:
        cmd += ["-f", "-"]
        inp = "\n".join(requests) + "\n"
        if not text:
            inp = inp.encode("latin-1")
    cmd.append(str(img))
    return H.run(cmd, check=False, input=inp, text=text, timeout=TIMEOUT)


def stock_w(img, requests):
    """Stock debugfs -w -f with raw request lines (bytes)."""
    return H.run(["debugfs", "-w", "-f", "-", str(img)], check=True,
                 input=b"\n".join(requests) + b"\n", text=False,
                 timeout=TIMEOUT)


def fsck_extref_fn(img):
    res = H.run([H.binary("fsck/fsck.extref"), "-fn", str(img)],
                check=False, timeout=TIMEOUT)
    assert res.returncode == 0, "fsck.extref -fn: " + H.describe(res)


def all_clean(img):
    H.e2fsck_fn(img)
    fsck_extref_fn(img)


def refused(res, *words):
    """Exit 1, one clear message naming the problem, no crash."""
    assert res.returncode == 1, H.describe(res)
    err = res.stderr if isinstance(res.stderr, str) else res.stderr.decode()
    for w in words:
        assert w in err, f"{w!r} not in stderr:\n" + H.describe(res)


@pytest.fixture
def base(tmp_path, mkfs):
    """/a (a file with a reflinked copy, a subdirectory) on a clean image."""
    img = tmp_path / "fs.img"
    H.mkfs(img, "16M", "-q")
    host = tmp_path / "data"
    host.write_bytes(DATA)
    res = dbg(img, "mkdir /a", "mkdir /a/b", f"write {host} /a/f",
              "reflink /a/f /a/b/g", rw=True)
    assert res.returncode == 0, H.describe(res)
    all_clean(img)
    return img


def unchanged(img, digest):
    """The image is byte for byte as before, its files read back whole."""
    assert H.sha256(img) == digest, f"{img} changed"
    assert H.debugfs_cat(img, "/a/f") == DATA
    assert H.debugfs_cat(img, "/a/b/g") == DATA


# ----- 1. reflink -r into itself, loops, depth -----

@pytest.mark.parametrize("src,dst", [
    ("/a", "/a/x"),
    ("/a", "/a/b/x"),
    ("/", "/c"),
    ("/a/b", "/a/b/x"),
])
def test_reflink_r_into_itself_refused(base, src, dst):
    digest = H.sha256(base)
    res = dbg(base, f"reflink -r {src} {dst}", rw=True)
    refused(res, "Cannot copy a directory into itself")
    unchanged(base, digest)
    all_clean(base)


def test_reflink_r_beside_itself_still_works(base):
    res = dbg(base, "reflink -r /a /c", rw=True)
    assert res.returncode == 0, H.describe(res)
    assert H.debugfs_cat(base, "/c/f") == DATA
    assert H.debugfs_cat(base, "/c/b/g") == DATA
    all_clean(base)


def test_reflink_r_directory_loop_refused(base):
    """A directory hard link (made by stock debugfs) would copy forever."""
    stock_w(base, [b"ln /a /a/b/loop"])
    digest = H.sha256(base)
    res = dbg(base, "reflink -r /a /c", rw=True)
    refused(res, "Directory reached twice")
    unchanged(base, digest)


def _chain(img, depth):
    """/d/d/.../d, depth directories, made by stock debugfs."""
    reqs = []
    for _ in range(depth):
        reqs += [b"mkdir d", b"cd d"]
    stock_w(img, reqs)


def test_reflink_r_too_deep_refused(tmp_path, mkfs):
    img = tmp_path / "deep.img"
    H.mkfs(img, "16M", "-q")
    _chain(img, MAX_DEPTH + 2)      # /d and MAX_DEPTH + 1 levels below
    all_clean(img)
    digest = H.sha256(img)
    res = dbg(img, "reflink -r /d /c", rw=True)
    refused(res, "too deep")
    assert H.sha256(img) == digest
    all_clean(img)


def test_reflink_r_at_depth_limit_copies(tmp_path, mkfs):
    img = tmp_path / "deep.img"
    H.mkfs(img, "16M", "-q")
    _chain(img, MAX_DEPTH + 1)      # /d and MAX_DEPTH levels below
    res = dbg(img, "reflink -r /d /c", rw=True)
    assert res.returncode == 0, H.describe(res)
    deepest = "/c" + "/d" * MAX_DEPTH
    st = H.debugfs(img, f"stat {deepest}").stdout
    assert "Type: directory" in st, st
    all_clean(img)
