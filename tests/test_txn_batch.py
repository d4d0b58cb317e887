"""Batches of the library (EXTREF_TX_BATCH, extref_tx_commit; libfs/txn/txn.c
and the savepoints of txio.c), called through libextref.so by a small
Python program (ctypes) in a process of its own.

A batch's steps stay in memory until it commits; a step that would make it
too big for the journal commits the batch before it apart first; a step
too big for the journal on its own fails alone (EXTREF_ERR_TXN_TOO_BIG),
the steps before it kept.  Oracles: stock debugfs for the contents, stock
e2fsck -fn and fsck.extref -n, stock dumpe2fs for the journal's sequence.
"""
import json
import os
import re
import subprocess
import sys

import crashlib
import helpers
from opsmodel import _write_at

PROGRAM = r'''
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
img, plan = sys.argv[2], sys.argv[3:]
vp = ctypes.c_void_p
lib.extref_fs_open.argtypes = [ctypes.c_char_p, ctypes.c_int,
                               ctypes.POINTER(vp), ctypes.c_void_p]
for f in ("extref_tx_begin2",):
    getattr(lib, f).argtypes = [vp, ctypes.c_int]
for f in ("extref_tx_commit", "extref_fs_close"):
    getattr(lib, f).argtypes = [vp]
lib.extref_tx_end.argtypes = [vp, ctypes.c_long]
lib.extref_namei.argtypes = [vp, ctypes.c_uint, ctypes.c_uint,
                             ctypes.c_char_p, ctypes.c_int,
                             ctypes.POINTER(ctypes.c_uint)]
lib.extref_pwrite.argtypes = [vp, ctypes.c_uint, ctypes.c_uint64,
                              ctypes.c_char_p, ctypes.c_uint64]
for f in ("extref_fs_open", "extref_tx_begin2", "extref_tx_commit",
          "extref_fs_close", "extref_tx_end", "extref_namei",
          "extref_pwrite"):
    getattr(lib, f).restype = ctypes.c_long
fs = vp()
assert lib.extref_fs_open(img.encode(), 1, ctypes.byref(fs), None) == 0
assert lib.extref_tx_begin2(fs, 2) == 0          # EXTREF_TX_BATCH
for step in plan:                                  # NAME:BYTE or commit
    if step == "commit":
        print("commit", lib.extref_tx_commit(fs))
        continue
    name, byte = step.split(":")
    ino = ctypes.c_uint()
    assert lib.extref_namei(fs, 2, 2, name.encode(), 0,
                            ctypes.byref(ino)) == 0
    size = os.path.getsize(os.path.join(os.environ["SRC"], name))
    print(step, lib.extref_pwrite(fs, ino, 0, bytes([int(byte)]) * size,
                                  size))
print("end", lib.extref_tx_end(fs, 0))
print("close", lib.extref_fs_close(fs))
'''

TOO_BIG = -892870578    # EXTREF_ERR_TXN_TOO_BIG


def lib_env(lib):
    """In a sanitizer build the library's runtimes go first (python is not
    built with them), and python's own leaks are not counted."""
    libs = helpers.run(["ldd", str(lib)]).stdout.split()
    runtimes = [p for p in libs if re.search(r"/lib(asan|ubsan)\.so", p)]
    if not runtimes:
        return {}
    return {"LD_PRELOAD": " ".join(runtimes), **helpers.no_leak_check_env()}


def run_plan(tmp_path, img, src, plan):
    lib = helpers.BUILD_DIR / "libextref.so.0"
    assert lib.exists(), f"{lib}: run make first"
    res = subprocess.run([sys.executable, "-c", PROGRAM, str(lib), str(img),
                          *plan], capture_output=True, text=True,
                         env={**os.environ, "SRC": str(src),
                              **lib_env(lib)})
    assert res.returncode == 0, res.stderr
    return dict(line.split() for line in res.stdout.splitlines())


def sequence(img):
    """The journal's next sequence number (stock dumpe2fs)."""
    out = helpers.run(["dumpe2fs", "-h", str(img)]).stdout
    return int(next(line.split(":")[1] for line in out.splitlines()
                    if line.startswith("Journal sequence")), 16)


def test_a_batch_commits_apart_and_a_step_too_big_fails_alone(tmp_path):
    """A 4 MiB journal (about 1,000 blocks a transaction); files rewritten
    in place (random bytes: nothing shared), which the journal holds block
    by block: a (400 blocks) in
    a first step, big (700) in a second, which does not fit beside the
    first and so commits it apart, huge (1,300) in a third, too big on
    its own: it fails alone; then small, and the end.  Every file but
    huge has its new bytes, huge its old ones (stock debugfs), both
    checkers clean; three commits: a's, big's, small's (dumpe2fs)."""
    src = tmp_path / "src"
    src.mkdir()
    sizes = {"a": 400, "big": 700, "huge": 1300, "small": 3}
    for name, blocks in sizes.items():
        (src / name).write_bytes(os.urandom(blocks * 4096))
    img = tmp_path / "b.img"
    helpers.mkfs(img, "64M", "-q", "-J", "size=4", "-d", str(src))
    seq0 = sequence(img)
    out = run_plan(tmp_path, img, src,
                   ["a:97", "big:98", "huge:104", "small:115"])
    assert out == {"a:97": "0", "big:98": "0", "huge:104": str(TOO_BIG),
                   "small:115": "0", "end": "0", "close": "0"}, out
    assert crashlib.checkers_clean(img) == []
    for name, blocks in sizes.items():
        want = (src / name).read_bytes() if name == "huge" else \
            {"a": b"a", "big": b"b", "small": b"s"}[name] * (blocks * 4096)
        assert helpers.debugfs_cat(img, f"/{name}") == want, name
    assert sequence(img) - seq0 == 3


def test_commit_between_steps_and_steps_kept_in_memory(tmp_path):
    """Steps a and small, extref_tx_commit, then big: one commit for the
    two first, one for the last (dumpe2fs's sequence), every file's new
    bytes, both checkers clean."""
    src = tmp_path / "src"
    src.mkdir()
    sizes = {"a": 40, "small": 3, "big": 70}
    for name, blocks in sizes.items():
        (src / name).write_bytes(os.urandom(blocks * 4096))
    img = tmp_path / "b.img"
    helpers.mkfs(img, "64M", "-q", "-d", str(src))
    seq0 = sequence(img)
    out = run_plan(tmp_path, img, src, ["a:97", "small:115", "commit",
                                        "big:98"])
    assert out["commit"] == "0" and out["end"] == "0", out
    assert crashlib.checkers_clean(img) == []
    for name, byte in (("a", b"a"), ("small", b"s"), ("big", b"b")):
        assert helpers.debugfs_cat(img, f"/{name}") == \
            byte * (sizes[name] * 4096)
    assert sequence(img) - seq0 == 2


REQUESTS = r'''
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
img, steps = sys.argv[2], json.loads(sys.argv[3])
vp, u64 = ctypes.c_void_p, ctypes.c_uint64
def sig(name, *args):
    getattr(lib, name).argtypes = list(args)
    getattr(lib, name).restype = ctypes.c_long
sig("extref_fs_open", ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp), vp)
sig("extref_tx_begin2", vp, ctypes.c_int)
sig("extref_tx_commit", vp)
sig("extref_tx_end", vp, ctypes.c_long)
sig("extref_fs_close", vp)
sig("extref_namei", vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_char_p,
    ctypes.c_int, ctypes.POINTER(ctypes.c_uint))
sig("extref_pwrite", vp, ctypes.c_uint, u64, ctypes.c_char_p, u64)
sig("extref_pread", vp, ctypes.c_uint, u64, ctypes.c_char_p, u64,
    ctypes.POINTER(u64))
sig("extref_truncate", vp, ctypes.c_uint, u64)
sig("extref_fallocate", vp, ctypes.c_uint, ctypes.c_int, u64, u64)
fs, ino = vp(), ctypes.c_uint()
assert lib.extref_fs_open(img.encode(), 1, ctypes.byref(fs), None) == 0
assert lib.extref_tx_begin2(fs, 2) == 0          # EXTREF_TX_BATCH
assert lib.extref_namei(fs, 2, 2, b"f", 0, ctypes.byref(ino)) == 0
for i, (op, *a) in enumerate(steps):
    if op == "write":
        data = bytes((a[0] + k) % 251 + 1 for k in range(a[1]))
        r = lib.extref_pwrite(fs, ino, a[0], data, a[1])
    elif op == "read":
        buf, got = ctypes.create_string_buffer(a[1]), u64()
        r = lib.extref_pread(fs, ino, a[0], buf, a[1], ctypes.byref(got))
        print("read", a[0], buf.raw[:got.value].hex())
    elif op == "trunc":
        r = lib.extref_truncate(fs, ino, a[0])
    elif op == "falloc":
        r = lib.extref_fallocate(fs, ino, *a)
    else:
        r = lib.extref_tx_commit(fs)
    assert r == 0, (i, op, r)
assert lib.extref_tx_end(fs, 0) == 0
assert lib.extref_fs_close(fs) == 0
'''


def model(steps):
    """The file's bytes after steps, by the rules of pwrite, truncate and
    fallocate (KEEP_SIZE 1, PUNCH_HOLE 2, ZERO_RANGE 0x10); the reads'
    expected bytes on the way."""
    f, reads = bytearray(), []
    for op, *a in steps:
        if op == "write":
            off, n = a
            _write_at(f, off, bytes((off + k) % 251 + 1 for k in range(n)))
        elif op == "trunc":
            f = (f + bytes(max(0, a[0] - len(f))))[:a[0]]
        elif op == "falloc":
            mode, off, n = a
            end = min(off + n, len(f))
            if mode & 0x12 and off < end:
                f[off:end] = bytes(end - off)
            if not mode & 1:
                f.extend(bytes(max(0, off + n - len(f))))
        elif op == "read":
            reads.append((a[0], bytes(f[a[0]:a[0] + a[1]])))
    return bytes(f), reads


def test_a_read_after_a_big_data_write_sees_it(tmp_path):
    """fsx (bench/fsx_fuse.sh -S 4 with commit=5) read zeros back: a
    commit wrote a block home through libext2fs's unix io, whose cache
    kept a clean copy; the block was then given to file data, written
    in one write of more than four blocks, which goes past that cache
    without dropping the copy (e2fsprogs 1.47); the next read of a block
    or two came from the copy.  The requests are fsx's (extref-fuse -d),
    reduced; each read is compared with a model, and the image after the
    batch with stock debugfs."""
    steps = [["falloc", 1, 0, 1], ["write", 380928, 17208],
             ["write", 786432, 43318], ["falloc", 0x11, 512103, 34246],
             ["write", 570792, 2648], ["falloc", 3, 572142, 34721],
             ["trunc", 476435], ["commit"],
             ["falloc", 0x11, 377847, 70469], ["write", 258048, 65681],
             ["read", 278528, 81920]]
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"")
    img = tmp_path / "r.img"
    helpers.mkfs(img, "1G", "-q", "-d", str(src))
    lib = helpers.BUILD_DIR / "libextref.so.0"
    res = subprocess.run([sys.executable, "-c", REQUESTS, str(lib),
                          str(img), json.dumps(steps)],
                         capture_output=True, text=True,
                         env={**os.environ, **lib_env(lib)})
    assert res.returncode == 0, res.stderr
    want, reads = model(steps)
    got = [line.split() for line in res.stdout.splitlines()]
    for (off, data), (_, roff, hexdata) in zip(reads, got, strict=True):
        have = bytes.fromhex(hexdata)
        bad = [i for i in range(len(data)) if have[i:i + 1] != data[i:i + 1]]
        assert not bad, f"read at {roff}: {len(bad)} bytes wrong from " \
            f"{off + bad[0]:#x}"
    assert crashlib.checkers_clean(img) == []
    assert helpers.debugfs_cat(img, "/f") == want
