"""extref-fuse's batches (fuse/loop.c, EXTREF_TX_BATCH in libfs/txn/txn.c):
every request is a step of one batch, atomic on its own, and the batch is
committed at fsync, every commit= seconds and at the unmount.

Oracles: stock e2fsck -fn and fsck.extref -n on every image left, a kernel
read-only loop mount or stock debugfs for the contents, stock dumpe2fs for
the journal's state.
"""
import errno
import os
import signal
import time

import pytest

import crashlib
import helpers
from test_fuse import clean, fuse, fuse_skip_reason, make_image  # noqa: F401

pytestmark = pytest.mark.skipif(fuse_skip_reason() is not None,
                                reason=str(fuse_skip_reason()))


def kill_and_recover(img, mnt, proc, fuse):
    """kill -9 of the server, then fsck.extref -p: both checkers clean."""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    fuse.stop(mnt)
    res = crashlib.fsck_run(img, "-p")
    assert res.returncode in (0, 1), helpers.describe(res)
    clean(img)


def names(img, path="/"):
    """The names in a directory, by stock debugfs ls -p."""
    out = helpers.debugfs(img, f"ls -p {path}").stdout
    return {f.split("/")[5] for f in out.splitlines() if f.count("/") >= 6} \
        - {".", "..", "lost+found"}


def test_fsync_is_durable_and_the_rest_all_or_nothing(tmp_path, fuse):
    """With commit=3600 (no commit by time), what fsync covered survives
    kill -9 and what came after it is gone whole: the files created after
    the fsync are not there, and the fsynced file has its bytes (stock
    debugfs), both checkers clean.  The same with commit=0 (every request
    committed): everything acknowledged survives."""
    for commit, after_survives in (("3600", False), ("0", True)):
        img = make_image(tmp_path)
        mnt, proc = fuse(img, "-o", f"commit={commit}")
        kept = os.urandom(200000)
        with open(mnt / "kept", "wb") as f:
            f.write(kept)
            os.fsync(f.fileno())
        os.mkdir(mnt / "later")
        (mnt / "later" / "x").write_bytes(os.urandom(50000))
        (mnt / "y").write_bytes(b"y" * 10)
        kill_and_recover(img, mnt, proc, fuse)
        assert helpers.debugfs_cat(img, "/kept") == kept
        want = {"kept", "later", "y"} if after_survives else {"kept"}
        assert names(img) == want, commit
        os.unlink(img)


def test_commit_interval_commits_without_fsync(tmp_path, fuse):
    """commit=1: a file written and left for 2.5 s survives kill -9
    without an fsync (the loop commits when the batch is due)."""
    img = make_image(tmp_path)
    mnt, proc = fuse(img, "-o", "commit=1")
    data = os.urandom(100000)
    (mnt / "f").write_bytes(data)
    time.sleep(2.5)
    kill_and_recover(img, mnt, proc, fuse)
    assert helpers.debugfs_cat(img, "/f") == data


def test_a_failed_request_is_rolled_back_alone(tmp_path, fuse, loop_mount):
    """In one batch (commit=3600): files made, then a fallocate too big
    for the free space (ENOSPC), then more files.  After the unmount the files before and after are there
    with their bytes and the failed write left nothing (a kernel
    read-only mount), both checkers clean."""
    img = make_image(tmp_path, "32M")
    mnt, _ = fuse(img, "-o", "commit=3600")
    want = {}
    for i in range(5):
        want[f"a{i}"] = os.urandom(30000 + i)
        (mnt / f"a{i}").write_bytes(want[f"a{i}"])
    os.mkdir(mnt / "d")
    fd = os.open(mnt / "big", os.O_WRONLY | os.O_CREAT, 0o644)
    with pytest.raises(OSError) as e:
        os.posix_fallocate(fd, 0, 64 << 20)
    assert e.value.errno == errno.ENOSPC
    os.close(fd)
    want["big"] = b""
    for i in range(3):
        want[f"b{i}"] = os.urandom(20000 + i)
        (mnt / f"b{i}").write_bytes(want[f"b{i}"])
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    got = {p.name: p.read_bytes() for p in ro.iterdir() if p.is_file()}
    assert got == want
    assert (ro / "d").is_dir()


@pytest.mark.parametrize("nth", [12, 25, 40])
def test_allocation_failures_inside_a_batch(tmp_path, fuse, loop_mount, nth,
                                            monkeypatch):
    """EXTREF_FAULT_NOMEM fails one array growth in the server (a
    fault-injection build): the request it falls in fails and is rolled
    back alone, the others stay.  Each file is written by one request
    after its create: after the unmount every file whose write
    succeeded has its bytes, every other one is absent or empty (a
    kernel read-only mount), both checkers clean."""
    if helpers.fault_injection_skip_reason():
        pytest.skip(helpers.fault_injection_skip_reason())
    img = make_image(tmp_path)
    monkeypatch.setenv("EXTREF_FAULT_NOMEM", str(nth))
    mnt, _ = fuse(img, "-o", "commit=3600")
    monkeypatch.delenv("EXTREF_FAULT_NOMEM")
    ok, failed = {}, set()
    for i in range(40):
        data = os.urandom(5000 + 997 * i)
        try:
            fd = os.open(mnt / f"f{i}", os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            failed.add(f"f{i}")
            continue
        try:
            os.write(fd, data)
            ok[f"f{i}"] = data
        except OSError:
            failed.add(f"f{i}")
        finally:
            os.close(fd)
        if i % 7 == 3:
            try:
                os.mkdir(mnt / f"d{i}")
                ok[f"d{i}"] = None
            except OSError:
                failed.add(f"d{i}")
    assert failed, "the failure fell in no request"
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    for name, data in ok.items():
        if data is None:
            assert (ro / name).is_dir(), name
        else:
            assert (ro / name).read_bytes() == data, name
    for name in failed:
        p = ro / name
        assert not p.exists() or (p.is_file() and p.stat().st_size == 0) \
            or p.is_dir(), name


def test_a_committed_batch_that_frees_blocks_is_consistent(tmp_path, fuse):
    """A batch (commit=3600) that frees blocks in one request and
    allocates in later ones (rm, truncate, a file made and removed, a
    copy-on-write of reflinked blocks), committed by fsync, then kill -9:
    stock e2fsck replays the journal alone (-E journal_only) and then
    finds nothing wrong (-fn: the bitmaps and free counts the batch wrote
    agree), fsck.extref -n too, every file's bytes as written (stock
    debugfs)."""
    img = make_image(tmp_path)
    mnt, proc = fuse(img, "-o", "commit=3600")
    a, b = os.urandom(200000), os.urandom(300000)
    (mnt / "a").write_bytes(a)
    (mnt / "b").write_bytes(b)
    os.sync()
    with open(mnt / "b", "rb") as f:
        os.fsync(f.fileno())
    os.unlink(mnt / "a")
    helpers.run(["cp", str(mnt / "b"), str(mnt / "c")])   # a reflink
    with open(mnt / "c", "r+b") as f:
        f.seek(8192)
        f.write(b"w" * 9000)                               # copy-on-write
    c = bytearray(b)
    c[8192:17192] = b"w" * 9000
    os.truncate(mnt / "b", 10000)
    (mnt / "d").write_bytes(os.urandom(150000))
    os.unlink(mnt / "d")
    e = os.urandom(120000)
    (mnt / "e").write_bytes(e)
    with open(mnt / "e", "rb") as f:
        os.fsync(f.fileno())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    fuse.stop(mnt)
    assert crashlib.needs_recovery(img)
    res = helpers.run(["e2fsck", "-E", "journal_only", "-p", str(img)],
                      check=False)
    assert res.returncode in (0, 1), helpers.describe(res)
    assert not crashlib.needs_recovery(img)
    clean(img)
    assert names(img) == {"b", "c", "e"}
    assert helpers.debugfs_cat(img, "/b") == b[:10000]
    assert helpers.debugfs_cat(img, "/c") == bytes(c)
    assert helpers.debugfs_cat(img, "/e") == e


def test_space_freed_in_the_batch_is_used_after_a_commit(tmp_path, fuse,
                                                          loop_mount):
    """Blocks a batch frees stay in use until it commits; a request that
    then runs out of space commits the batch and runs again, as ext4
    commits and retries (fstests generic/213).  On a 64 MiB image: a
    40 MiB file written and fsynced, removed, and another 40 MiB file
    written in the same batch (commit=3600): it is written whole, the
    first is gone, both checkers clean, the bytes as a kernel read-only
    mount reads them."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img, "-o", "commit=3600")
    first, second = os.urandom(40 << 20), os.urandom(40 << 20)
    fd = os.open(mnt / "a", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, first)
    os.fsync(fd)
    os.close(fd)
    os.unlink(mnt / "a")
    (mnt / "b").write_bytes(second)
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert sorted(p.name for p in ro.iterdir()) == ["b", "lost+found"]
    assert (ro / "b").read_bytes() == second
