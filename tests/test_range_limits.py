"""The largest file size (EFBIG) and loff_t overflow (EINVAL) of the range
commands, against the kernel's ext4 (the same limits: extref images are
ext4).  XFS, with its 8 EiB files, cannot be the oracle here
(tests/test_kernel_diff.py covers the rest of the range rules).

Each request runs on a plain ext4 loop mount (truncate, pwrite,
fallocate) and through debugfs.extref; the errno classes must agree, a
refused request must leave the extref image byte-for-byte unchanged, and
stock e2fsck -fn must pass at the end.
"""

import ctypes
import errno
import os
import re
import subprocess

import pytest

import helpers

BS = 4096
MAX = ((1 << 32) - 1) * BS          # ext4_max_size() with huge_file
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_UNSHARE_RANGE = 0x40

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong,
                            ctypes.c_longlong]

# (shell request on /a, kernel call on fd); the file is 8 KiB to start.
CASES = [
    ("truncate /a {MAX}", lambda fd: os.ftruncate(fd, MAX)),
    ("truncate /a {MAX1}", lambda fd: os.ftruncate(fd, MAX + 1)),
    ("pwrite /a {MAX} 1", lambda fd: os.pwrite(fd, b"\xcd", MAX)),
    ("punch /a {MAXB} 8192",
     lambda fd: falloc(fd, FALLOC_FL_PUNCH_HOLE, MAX - BS, 2 * BS)),
    ("punch /a {MAXB} 4096",
     lambda fd: falloc(fd, FALLOC_FL_PUNCH_HOLE, MAX - BS, BS)),
    ("unshare /a {MAXB} 8192",
     lambda fd: falloc(fd, FALLOC_FL_UNSHARE_RANGE, MAX - BS, 2 * BS)),
    ("punch /a 4096 {BIG}",
     lambda fd: falloc(fd, FALLOC_FL_PUNCH_HOLE, BS, 1 << 63)),
    ("punch /a 4096 {LMAX}",
     lambda fd: falloc(fd, FALLOC_FL_PUNCH_HOLE, BS, (1 << 63) - 1)),
    ("truncate /a {BIG}", lambda fd: os.ftruncate(fd, -(1 << 63))),
    ("punch /a 0 0", lambda fd: falloc(fd, FALLOC_FL_PUNCH_HOLE, 0, 0)),
    ("truncate /a 0", lambda fd: os.ftruncate(fd, 0)),
]


def falloc(fd, mode, off, n):
    off = off - (1 << 64) if off >= 1 << 63 else off
    n = n - (1 << 64) if n >= 1 << 63 else n
    if _libc.fallocate(fd, mode | FALLOC_FL_KEEP_SIZE, off, n):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def request(text):
    return text.format(MAX=MAX, MAX1=MAX + 1, MAXB=MAX - BS, BIG=1 << 63,
                       LMAX=(1 << 63) - 1)


def kernel_outcomes(tmp_path):
    img = tmp_path / "ext4.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    helpers.run(["mkfs.ext4", "-q", "-F", "-b", "4096", "-O", "huge_file",
                 str(img)])
    mnt = tmp_path / "mnt"
    out = []
    with helpers.loop_mount(img, mnt, options="rw"):
        fd = os.open(mnt / "a", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, b"\x41" * 8192, 0)
            for _, call in CASES:
                try:
                    call(fd)
                    out.append("ok")
                except OSError as e:
                    out.append(errno.errorcode[e.errno])
        finally:
            os.close(fd)
    return out


def test_limits_as_ext4(tmp_path):
    helpers.require_loop()
    want = kernel_outcomes(tmp_path)
    img = tmp_path / "x.img"
    helpers.mkfs(img, "16M", "-b", "4096", "-q")
    assert "huge_file" in helpers.dumpe2fs_features(img)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    dbg = helpers.binary("debugfs.extref")
    helpers.run([dbg, "-w", "-R", f"write {empty} /a", str(img)])
    helpers.run([dbg, "-w", "-R", "pwrite -S 65 /a 0 8192", str(img)])
    for (text, _), kernel in zip(CASES, want):
        req = request(text)
        before = helpers.sha256(img)
        res = subprocess.run([dbg, "-w", "-R", req, str(img)],
                             capture_output=True, text=True)
        m = re.search(r"\((E[A-Z0-9]+)\): ", res.stderr)
        got = m.group(1) if m else ("ok" if res.returncode == 0
                                    else "unclassified")
        assert got == kernel, (f"{req}: ext4 says {kernel}, extref "
                               f"{got}\n" + helpers.describe(res))
        if got != "ok":
            assert helpers.sha256(img) == before, f"{req} changed the image"
            assert req.split()[0] + ": /a: " in res.stderr, res.stderr
    helpers.e2fsck_fn(img)


def test_builder_dedupes_files_over_1gib(tmp_path):
    """The library cuts a dedupe at 1 GiB as the kernel does; the image
    builder's whole-file dedupe goes on past it (one call per GiB): the
    last block of two equal 1 GiB + 8 KiB files is shared too."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a", "b"):
        fd = os.open(src / name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, b"Q" * BS, 0)
            os.pwrite(fd, b"R" * BS, (1 << 30) + BS)
        finally:
            os.close(fd)
    img = tmp_path / "o.img"
    helpers.mkfs(img, None, "-q", "-b", "4096", "-d", str(src),
                 "--dedup=file")
    last = ((1 << 30) + BS) // BS

    def bmap(path, blk):
        return int(helpers.debugfs(img, f"bmap {path} {blk}").stdout)
    assert bmap("/a", 0) == bmap("/b", 0) != 0
    assert bmap("/a", last) == bmap("/b", last) != 0
    with open(img, "rb") as f:
        f.seek(bmap("/b", last) * BS)
        assert f.read(BS) == b"R" * BS
    helpers.e2fsck_fn(img)
