"""Reflinks through the extref-fuse mount (issue 31): the kernel answers
FICLONE, FICLONERANGE, FIDEDUPERANGE and FS_IOC_FIEMAP itself on any
FUSE mount (EOPNOTSUPP, the server never asked); with the shim
libextref-preload.so in LD_PRELOAD, cp --reflink=always, xfs_io's
reflink, dedupe and fiemap, and filefrag work, through extref-fuse's
private ioctls.  Judged by a loop-mounted XFS given the same steps
(xfs_io's answers and the files' bytes), stock debugfs after the
unmount (the physical blocks), stock e2fsck -fn and fsck.extref.
"""

import errno
import fcntl
import os
import re
import shutil
import subprocess
import time

import pytest

import helpers
from test_fuse import (clean, fuse, fuse_skip_reason,  # noqa: F401
                       mounted, stop)
from test_kernel_diff import xfs_mnt  # noqa: F401

FICLONE = 0x40049409


def skip_reason():
    why = fuse_skip_reason()
    if why is None and not shutil.which("xfs_io"):
        why = "no xfs_io (xfsprogs: scripts/install-deps)"
    return why


pytestmark = pytest.mark.skipif(skip_reason() is not None,
                                reason=str(skip_reason()))


def make_image(tmp_path, size="64M"):
    """An image of 4 KiB blocks, as the XFS of test_kernel_diff.py."""
    img = tmp_path / "f.img"
    helpers.mkfs(img, size, "-q", "-b", "4096")
    return img


def shim_env():
    """The environment with the shim preloaded; in a sanitizer build the
    shim needs its sanitizer runtimes loaded first (the programs it goes
    into are not built with them), and their leaks are not ours."""
    shim = helpers.BUILD_DIR / "fuse" / "libextref-preload.so"
    assert shim.exists(), f"{shim}: run make first"
    libs = helpers.run(["ldd", str(shim)]).stdout.split()
    runtimes = [p for p in libs if re.search(r"/lib(asan|ubsan)\.so", p)]
    env = dict(os.environ, LD_PRELOAD=" ".join(runtimes + [str(shim)]))
    if runtimes:
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") +
                               ":detect_leaks=0").lstrip(":")
    return env


def xfs_io(args, env=None):
    """xfs_io's output (stdout and stderr), timing lines left out."""
    res = subprocess.run(["xfs_io", *args], capture_output=True, text=True,
                         env=env, timeout=60)
    lines = (res.stdout + res.stderr).splitlines()
    return [ln for ln in lines if " ops; " not in ln]


def test_without_the_shim_the_kernel_refuses(tmp_path, fuse):
    """The measured fact: no FUSE server sees these ioctls."""
    img = make_image(tmp_path, "32M")
    mnt, _ = fuse(img)
    (mnt / "src").write_bytes(os.urandom(8192))
    (mnt / "dst").write_bytes(b"")
    with open(mnt / "src", "rb") as s, open(mnt / "dst", "r+b") as d:
        with pytest.raises(OSError) as e:
            fcntl.ioctl(d.fileno(), FICLONE, s.fileno())
        assert e.value.errno == errno.EOPNOTSUPP
    res = subprocess.run(["cp", "--reflink=always", str(mnt / "src"),
                          str(mnt / "c")], capture_output=True, text=True)
    assert res.returncode != 0 and "not supported" in res.stderr, res
    for cmd in (f"reflink {mnt}/src 0 0 4096", f"dedupe {mnt}/src 0 0 4096",
                "fiemap -v"):
        out = xfs_io(["-c", cmd, str(mnt / "dst")])
        assert out and "Operation not supported" in out[-1], (cmd, out)
    res = helpers.run(["filefrag", str(mnt / "src")])
    assert "0 extents found" in res.stdout, res.stdout
    # --help says what to do; the same with the shim then works
    assert "LD_PRELOAD=libextref-preload.so" in helpers.run(
        [helpers.binary("fuse/extref-fuse"), "--help"]).stdout
    res = subprocess.run(["cp", "--reflink=always", str(mnt / "src"),
                          str(mnt / "c")], capture_output=True, text=True,
                         env=shim_env())
    assert res.returncode == 0, helpers.describe(res)
    assert fuse.stop(mnt) == 0
    clean(img)


def blocks(img, path):
    out = helpers.debugfs(img, f"blocks {path}").stdout.split()
    return [int(b) for b in out]


def test_cp_reflink_always_clones(tmp_path, fuse, loop_mount):
    img = make_image(tmp_path)
    data = os.urandom((1 << 20) + 1000)
    mnt, _ = fuse(img)
    (mnt / "big").write_bytes(data)
    res = helpers.run(["cp", "--reflink=always", str(mnt / "big"),
                       str(mnt / "copy")], env=shim_env())
    assert (mnt / "copy").read_bytes() == data, helpers.describe(res)
    assert fuse.stop(mnt) == 0
    clean(img)
    a = blocks(img, "/big")
    assert len(a) == 257 and blocks(img, "/copy") == a
    ro, _ = loop_mount(img)
    assert (ro / "copy").read_bytes() == data


# Files the steps start from (name: bytes), and the steps: (file the
# command is run on, xfs_io command, {d} the directory).
def start_files():
    src = os.urandom(3 * 4096 + 100)
    return {"src": src, "same": src, "other": os.urandom(len(src)),
            "dst": os.urandom(4 * 4096), "whole": b""}


STEPS = [
    ("dst", "reflink {d}/src 0 0 8192"),
    ("dst", "reflink {d}/src 100 0 4096"),          # unaligned: EINVAL
    ("dst", "reflink {d}/src 8192 0 4196"),         # tail inside dst
    ("dst", "reflink {d}/src 0 4096 0"),            # to EOF, grows dst
    ("dst", "reflink {d}/src 0 0 20000"),           # past EOF: EINVAL
    ("same", "dedupe {d}/src 0 0 8192"),
    ("other", "dedupe {d}/src 0 0 8192"),           # differs
    ("same", "dedupe {d}/src 0 0 5000"),            # rounded down
    ("same", "dedupe {d}/src 4096 0 12288"),        # past src EOF
    ("same", "dedupe {d}/src 0 0 12388"),           # both EOFs
    ("dst", "fiemap -v"),
    ("src", "fiemap -v"),
    ("same", "fiemap -v 0 8192"),
    ("other", "fiemap -v"),
    ("src", "reflink {d}/src 0 0 4096"),            # overlaps itself
    ("whole", "reflink {d}/src"),                   # FICLONE
    ("whole", "fiemap -v"),
    ("whole", "dedupe {d}/same 0 0 12388"),
]


def run_steps(d, env=None):
    """Each step's xfs_io output (paths and disk addresses left out),
    then each file's bytes."""
    for name, data in start_files.cache.items():
        (d / name).write_bytes(data)
    outs = []
    for name, cmd in STEPS:
        out = xfs_io(["-c", cmd.format(d=d), str(d / name)], env=env)
        out = [ln.replace(str(d), "D") for ln in out]
        # the BLOCK-RANGE column: disk addresses differ
        out = [re.sub(r"(\]:\s+)\d+\.\.\d+", r"\1B", ln) for ln in out]
        out = [" ".join(ln.split()) for ln in out]     # column widths
        outs.append((name, cmd, out))
    return outs, {n: (d / n).read_bytes() for n in start_files.cache}


def test_xfs_io_answers_as_on_xfs(tmp_path, fuse, xfs_mnt):
    start_files.cache = start_files()
    xd = xfs_mnt / "fuse_reflink"
    xd.mkdir()
    try:
        # the shim loaded there too: on a file not of extref-fuse it
        # leaves every ioctl to the kernel
        want, want_bytes = run_steps(xd, env=shim_env())
    finally:
        shutil.rmtree(xd)
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    got, got_bytes = run_steps(mnt, env=shim_env())
    assert fuse.stop(mnt) == 0
    clean(img)
    diffs = [f"{n}: {c}\n  xfs: {w}\n  extref: {g}"
             for (n, c, w), (_, _, g) in zip(want, got) if w != g]
    assert not diffs, "\n".join(diffs)
    assert got_bytes == want_bytes
    # what the steps shared, by stock debugfs
    assert blocks(img, "/same") == blocks(img, "/src")
    assert blocks(img, "/dst")[1:] == blocks(img, "/src")
    assert blocks(img, "/dst")[0] == blocks(img, "/src")[0]


# A reflink or dedupe whose other side is not a regular file (fstests
# generic/157 and generic/158): (command, file it is run on, its options).
SPECIAL_STEPS = [
    ("reflink {d}/dev 0 0 4096", "file", []),
    ("reflink {d}/file 0 0 4096", "dev", []),
    ("reflink {d}/file 0 0 4096", "fifo", ["-n"]),
    ("dedupe {d}/dev 0 0 4096", "file", []),
    ("dedupe {d}/file 0 0 4096", "dev", []),
    ("dedupe {d}/file 0 0 4096", "fifo", ["-n"]),
    ("dedupe {d}/file 0 0 4096", "dir", ["-r"]),
]


def run_special_steps(d, data):
    """xfs_io's answer to each of SPECIAL_STEPS in d, then file's bytes."""
    (d / "file").write_bytes(data)
    os.mknod(d / "dev", 0o666 | 0o020000, os.makedev(1, 3))
    os.mkfifo(d / "fifo")
    (d / "dir").mkdir()
    outs = []
    for cmd, name, opts in SPECIAL_STEPS:
        out = xfs_io([*opts, "-c", cmd.format(d=d), str(d / name)],
                     env=shim_env())
        outs.append((cmd, name, [ln.replace(str(d), "D") for ln in out]))
    return outs, (d / "file").read_bytes()


def test_special_files_answer_as_on_xfs(tmp_path, fuse, xfs_mnt):
    """A device, a FIFO or a directory on either side of a reflink or a
    dedupe gets the kernel's errno, as the same xfs_io commands get on
    XFS (EINVAL for a device or FIFO: no remap there; EISDIR), and the
    file is left as it was."""
    data = os.urandom(8192)
    xd = xfs_mnt / "fuse_special"
    xd.mkdir()
    try:
        want, want_bytes = run_special_steps(xd, data)
    finally:
        shutil.rmtree(xd)
    img = make_image(tmp_path, "32M")
    mnt, _ = fuse(img, "-o", "dev")     # (as mount -t fuse.extref does)
    got, got_bytes = run_special_steps(mnt, data)
    assert fuse.stop(mnt) == 0
    clean(img)
    diffs = [f"{n}: {c}\n  xfs: {w}\n  extref: {g}"
             for (c, n, w), (_, _, g) in zip(want, got) if w != g]
    assert not diffs, "\n".join(diffs)
    assert got_bytes == want_bytes == data


def test_filefrag_maps_many_shared_extents(tmp_path, fuse):
    """80 extents, from two files in turn (more than one private ioctl
    holds: the shim asks piece by piece): filefrag -v shows every one,
    shared, the last one last, at the blocks stock debugfs reads."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    n = 80
    for name in ("a", "b"):
        (mnt / name).write_bytes(os.urandom(n * 4096))
    (mnt / "mix").write_bytes(b"")
    cmds = []
    for i in range(n):
        cmds += ["-c", f"reflink {mnt}/{'ab'[i % 2]} {i * 4096} "
                       f"{i * 4096} 4096"]
    out = xfs_io([*cmds, str(mnt / "mix")], env=shim_env())
    assert len([ln for ln in out if ln.startswith("linked 4096/")]) == n, out
    res = helpers.run(["filefrag", "-v", str(mnt / "mix")], env=shim_env())
    plain = helpers.run(["filefrag", "-v", str(mnt / "mix")], check=False)
    assert fuse.stop(mnt) == 0
    clean(img)
    rows = re.findall(r"^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):"
                      r"\s+\d+:\s*(?:\d+:)?\s*(\S*)$", res.stdout, re.M)
    assert len(rows) == n and f"{n} extents found" in res.stdout, res.stdout
    assert all("shared" in r[4] for r in rows)
    assert "last" in rows[-1][4] and not any("last" in r[4]
                                               for r in rows[:-1])
    # stock debugfs's leaf extents: (logical, physical) each
    ex = re.findall(r"^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+) -\s+\d+"
                    r"\s+(\d+) -", helpers.debugfs(img, "ex /mix").stdout,
                    re.M)
    leaves = [(int(lo), int(p)) for lvl, depth, lo, p in ex if lvl == depth]
    assert [(int(r[0]), int(r[2])) for r in rows] == leaves
    # without the shim filefrag gets no extent map from the kernel
    assert "shared" not in plain.stdout, plain.stdout


def test_other_users_may_not_name_a_source(tmp_path, fuse):
    """-o allow_other: a source named by inode number would skip the
    search permission of its directories, so the server clones and
    dedupes only for root and its own user: another gets EPERM, and the
    file is left as it was; a fiemap (of a file it can open, and of a
    directory) is answered."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img, "-o", "allow_other")
    os.chmod(mnt, 0o755)
    (mnt / "pub").mkdir()
    os.chmod(mnt / "pub", 0o1777)
    data = os.urandom(8192)
    (mnt / "pub/src").write_bytes(data)
    os.chmod(mnt / "pub/src", 0o644)
    script = (f"cd {mnt}/pub && echo mine > dst && "
              f"xfs_io -c 'reflink src 0 0 8192' "
              f"-c 'dedupe src 0 0 4096' dst; cat dst; "
              f"filefrag src . | sed 's/:.*:/:/'")
    res = helpers.run(["setpriv", "--reuid=65534", "--regid=65534",
                       "--clear-groups", "sh", "-c", script], check=False,
                      env=shim_env())
    out = res.stdout + res.stderr
    assert out.count("Operation not permitted") == 2, out
    assert "mine\n" in out, out
    assert "src: 1 extent found" in out and ".: 1 extent found" in out, out
    assert fuse.stop(mnt) == 0
    clean(img)
    assert helpers.debugfs_cat(img, "/pub/dst") == b"mine\n"


@pytest.mark.skipif(shutil.which("fuse2fs") is None, reason="no fuse2fs")
def test_other_fuse_servers_are_left_to_the_kernel(tmp_path):
    """On another FUSE server (stock fuse2fs) the shim's probe is refused
    (ENOTTY) and the calls go to the real ioctl: the kernel's
    EOPNOTSUPP, as without the shim."""
    img = tmp_path / "plain.img"
    helpers.run(["mkfs.ext4", "-q", "-F", str(img), "32M"])
    mnt = tmp_path / "p"
    mnt.mkdir()
    proc = subprocess.Popen(["fuse2fs", str(img), str(mnt), "-o",
                             "rw,fakeroot", "-f"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if mounted(mnt) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert mounted(mnt)
        (mnt / "a").write_bytes(os.urandom(8192))
        (mnt / "b").write_bytes(b"")
        out = xfs_io(["-c", f"reflink {mnt}/a 0 0 4096", "-c",
                      f"dedupe {mnt}/a 0 0 4096", "-c", "fiemap",
                      str(mnt / "b")], env=shim_env())
        assert len([ln for ln in out if "Operation not supported" in ln]) \
            == 3, out
    finally:
        assert stop(mnt, proc) == 0
    helpers.e2fsck_fn(img)


def test_clones_into_a_file_being_read_do_not_hang(tmp_path, fuse):
    """384 clones through the shim into a file another process keeps
    reading: the server drops the kernel's cached pages of the
    destination after each from a thread of its own (fuse/inval.c).
    From the request's handler, as before, the notification waited on a
    page locked by a read queued behind it: xfs_io and the server hung
    (fstests generic/168).  Every clone answered within the timeout, the
    destination's bytes the source's, both checkers clean."""
    img = make_image(tmp_path, "64M")
    mnt, _ = fuse(img)
    src = os.urandom(64 * 4096)
    (mnt / "a").write_bytes(src)
    (mnt / "dst").write_bytes(os.urandom(64 * 4096))
    reader = subprocess.Popen(
        ["sh", "-c", f"while :; do cat {mnt}/dst >/dev/null; "
         f"dd if={mnt}/dst of=/dev/null bs=4k iflag=direct 2>/dev/null; "
         "done"])
    try:
        cmds = []
        for _ in range(6):
            for i in range(64):
                cmds += ["-c", f"reflink {mnt}/a {i * 4096} {i * 4096} 4096"]
        out = xfs_io([*cmds, str(mnt / "dst")], env=shim_env())
    finally:
        reader.kill()
        reader.wait()
    assert len([ln for ln in out if ln.startswith("linked 4096/")]) == 384
    assert (mnt / "dst").read_bytes() == src
    assert fuse.stop(mnt) == 0
    clean(img)
