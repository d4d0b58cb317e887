"""fallocate's modes (extref_fallocate) through debugfs.extref -w, against
the host kernel's fallocate(2) on a file of the host's filesystem.

Two reflinked files in an image and the same two files on the host take
the same fallocate requests (0, KEEP_SIZE, ZERO_RANGE with and without
KEEP_SIZE, PUNCH_HOLE, and the refused modes; UNSHARE_RANGE, which
ext4 lacks, is extref_unshare, test_ops_rules.py's): per step
the outcome (ok or the errno) must be the kernel's, and at the end a
read-only loop mount of the image must show each file's size and bytes
as the host does.  A range zeroed in one file of a shared pair leaves
the other's bytes as they were (nothing is written into a shared
block); stock e2fsck -fn and fsck.extref -n (the counts against every
mapping) find the image clean.  Every array growth of a ZERO_RANGE made
to fail in turn leaves both files as they were.
"""

import ctypes
import errno
import os
import re

import pytest

import helpers
from test_ops_namespace import failures_leave_files

KEEP, PUNCH, ZERO = 0x01, 0x02, 0x10
FLAG = {KEEP: "-k", PUNCH: "-p", ZERO: "-z"}

# (file, mode, offset, length, expected outcome)
STEPS = [
    ("a", 0, 30000, 10000, "ok"),              # past EOF: grows
    ("a", KEEP, 45000, 5000, "ok"),            # past EOF, size kept
    ("a", ZERO, 1000, 8000, "ok"),             # shared blocks
    ("b", ZERO | KEEP, 15000, 20000, "ok"),    # across EOF, size kept
    ("b", ZERO, 3000, 100, "ok"),              # inside one block
    ("a", PUNCH, 100, 100, "EOPNOTSUPP"),      # needs KEEP_SIZE
    ("a", PUNCH | KEEP, 2500, 7000, "ok"),
    ("a", PUNCH | ZERO | KEEP, 0, 10, "EOPNOTSUPP"),
    ("b", 0, 0, 0, "EINVAL"),                  # length 0
    ("b", 0, 5000, 60000, "ok"),               # holes and data
    ("b", ZERO, 60000, 5000, "ok"),            # grows
]


def host_fallocate(path, mode, off, length):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int,
                               ctypes.c_longlong, ctypes.c_longlong]
    fd = os.open(path, os.O_RDWR)
    try:
        if libc.fallocate(fd, mode, off, length):
            no = ctypes.get_errno()
            # ENOTSUP is EOPNOTSUPP on Linux: the name strerror's table
            # gives, as debugfs.extref prints it
            return "EOPNOTSUPP" if no == errno.EOPNOTSUPP else \
                errno.errorcode[no]
        return "ok"
    finally:
        os.close(fd)


def request(name, mode, off, length):
    flags = " ".join(f for bit, f in sorted(FLAG.items()) if mode & bit)
    return f"fallocate {flags} /{name} {off} {length}".replace("  ", " ")


def outcome(res):
    if res.returncode == 0:
        return "ok"
    m = re.search(r"\((E[A-Z]+)\)", res.stderr)
    return m.group(1) if m else "other: " + res.stderr.strip()


def test_modes_match_the_kernel(tmp_path):
    helpers.require_loop()
    img, host = tmp_path / "img", tmp_path / "host"
    host.mkdir()
    data = os.urandom(20000)
    (host / "a").write_bytes(data)
    (host / "b").write_bytes(data)
    helpers.mkfs(img, "16M")
    dbg = helpers.binary("debugfs.extref")
    helpers.run([dbg, "-w", "-f", "-", str(img)], input=(
        f"write {host / 'a'} /a\nreflink /a /b\n"))
    problems = []
    for name, mode, off, length, want in STEPS:
        kern = host_fallocate(host / name, mode, off, length)
        req = request(name, mode, off, length)
        res = helpers.run([dbg, "-w", "-R", req, str(img)], check=False)
        got = outcome(res)
        if got != kern or kern != want:
            problems.append(f"{req}: extref {got}, kernel {kern}, "
                            f"expected {want}")
    assert not problems, "\n".join(problems)
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    with helpers.loop_mount(img, tmp_path / "mnt"):
        for name in ("a", "b"):
            mine = (tmp_path / "mnt" / name).read_bytes()
            theirs = (host / name).read_bytes()
            assert len(mine) == len(theirs), name
            assert mine == theirs, name


def test_zero_range_never_writes_a_shared_block(tmp_path):
    img, src = tmp_path / "img", tmp_path / "src"
    data = os.urandom(64 << 10)
    src.write_bytes(data)
    helpers.mkfs(img, "16M")
    dbg = helpers.binary("debugfs.extref")
    helpers.run([dbg, "-w", "-f", "-", str(img)], input=(
        f"write {src} /a\nreflink /a /b\n"
        "fallocate -z /a 0 65536\nfallocate -z -k /b 4096 8192\n"))
    assert helpers.debugfs_cat(img, "/a") == bytes(65536)
    want = data[:4096] + bytes(8192) + data[12288:]
    assert helpers.debugfs_cat(img, "/b") == want
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    # a's blocks all went unwritten: nothing is shared any more
    assert " 0 shared blocks" in res.stdout, res.stdout


@pytest.mark.slow
def test_a_failed_zero_range_leaves_the_image(tmp_path):
    """Every allocation of a ZERO_RANGE over shared blocks made to fail in
    turn: both files read as before, counts exact."""
    img, src = tmp_path / "img", tmp_path / "src"
    src.write_bytes(os.urandom(64 << 10))
    helpers.mkfs(img, "16M")
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-f", "-",
                 str(img)], input=f"write {src} /a\nreflink /a /b\n")
    assert failures_leave_files(img, "fallocate -z /a 1000 40000",
                                ["/a", "/b"]) >= 1
