"""Crash tests of the journal's transactions: every operation is atomic.

The operations of test_crash.py (and a batch of several, and the builder's
dedupe) run in debugfs.extref on images WITH a journal, on top of the
fault-injecting io manager (EXTREF_FAULT=crash=N: the first N writes reach
the image, the rest are dropped; powercut=N,seed=S: the writes since the
last flush reach it or not at random).  For each crash point a copy of the
image is replayed, by stock `e2fsck -fy` or by the next extref tool that
opens it for writing (alternately), and then:

  - stock `e2fsck -fn` and `fsck.extref -fn` exit 0 (nothing to repair:
    no over-count, no partial directory);
  - the journal no longer needs recovery;
  - the image's state is exactly the state before the operation or the
    state after it: every file's bytes, every name of the root directory,
    the reflinked tree, and the reference-count records.

The "after" state is that of the same operation run without a fault.
EXTREF_CRASH_FULL=1 sweeps every write point of every operation.
"""

import os
import random
import shutil

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = [pytest.mark.crash,
              pytest.mark.skipif(_NO_FAULTS is not None,
                                 reason=_NO_FAULTS or "")]

FULL = os.environ.get("EXTREF_CRASH_FULL") == "1"
POINT_LIMIT = 400 if FULL else 16
POWERCUT_EVERY = 2 if FULL else 4

FILES = {"/keep": 7000, "/src": 24676, "/shared": 32768, "/dst": 32768,
         "/dup1": 16384, "/dir/x": 3000, "/dir/y": 9000,
         "/dir/sub/z": 5000}


def _prepare(workdir, bs):
    workdir.mkdir(parents=True, exist_ok=True)
    img = workdir / f"base-{bs}.img"
    helpers.mkfs(img, "16M", "-q", "-b", str(bs))
    rng = random.Random(bs)
    host = workdir / "host"
    host.mkdir(exist_ok=True)
    cmds = ["mkdir /dir", "mkdir /dir/sub"]
    for i, (path, size) in enumerate(FILES.items()):
        hf = host / f"h{i}"
        hf.write_bytes(rng.randbytes(size))
        cmds.append(f"write {hf} {path}")
    cmds.append(f"write {host / 'h4'} /dup2")
    cmds.append("reflink /shared /shared.ref")
    junk = host / "junk"
    junk.write_bytes(b"\xee" * (1 << 20))
    cmds += [f"write {junk} /junk", "rm /junk"]
    cmdfile = workdir / "prepare.cmds"
    cmdfile.write_text("\n".join(cmds) + "\n")
    res = helpers.run([crashlib.debugfs_extref(), "-w", "-f", str(cmdfile),
                       str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    shutil.rmtree(host)
    helpers.e2fsck_fn(img)
    return img


PATHS = list(FILES) + ["/dup2", "/shared.ref", "/src.copy", "/dir.copy/x",
                       "/dir.copy/y", "/dir.copy/sub/z", "/new"]

OPS = {
    "reflink": ["reflink /src /src.copy"],
    "reflink_r": ["reflink -r /dir /dir.copy"],
    "clone_range": ["clone_range /src 0 /dst 8192 12288"],
    "dedupe": ["dedupe /dup1 0 /dup2 0 16384"],
    "pwrite": ["pwrite -S 90 /shared 5000 9000"],
    "pwrite_inplace": ["pwrite -S 91 /keep 100 5000"],
    "truncate": ["truncate /shared 10000"],
    "punch": ["punch /shared 3000 12000"],
    "rm": ["rm /shared"],
    "batch": ["begin", "reflink /src /src.copy", "rm /dup2",
              "pwrite -S 92 /dst 0 3000", "mkdir /new", "commit"],
}


def state(img, workdir):
    """Everything a crash may not tear: bytes, names, counts."""
    got = crashlib.dump_files(img, PATHS, workdir)
    names = sorted(crashlib.ls_dir(img, "/") or {})
    recs = crashlib.refcount_records(img)
    return {"files": got, "names": names, "refcount": recs}


def run(img, cmds, fault=None):
    return crashlib.shell_op(cmds)(img, {"EXTREF_FAULT": fault}
                                   if fault else None)


def atomic(before, after, workdir):
    """The oracle: both checkers clean, the state before or after."""
    def oracle(img, how):
        problems = crashlib.checkers_clean(img)
        got = state(img, workdir)
        if got != before and got != after:
            diff = [k for k in got
                    if got[k] != before[k] and got[k] != after[k]]
            if "files" in diff:
                diff = [p for p in PATHS
                        if got["files"][p] not in (before["files"][p],
                                                   after["files"][p])]
            problems.append(f"neither the state before nor after: {diff}")
        return problems
    return oracle


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("crash-txn")
    made = {}

    def get(bs):
        if bs not in made:
            made[bs] = _prepare(root / str(bs), bs)
        return made[bs]
    yield get
    shutil.rmtree(root, ignore_errors=True)


CASES = [(op, 1024) for op in OPS] + \
    [(op, 4096) for op in ("reflink_r", "pwrite", "batch")]


@pytest.mark.slow
@pytest.mark.parametrize("op,bs", CASES, ids=[f"{o}-{b}" for o, b in CASES])
def test_crash_is_atomic(base, tmp_path, op, bs):
    img0 = base(bs)
    cmds = OPS[op]
    before = state(img0, tmp_path)
    done = tmp_path / "done.img"
    crashlib.sparse_copy(img0, done)
    res = run(done, cmds)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(done)
    after = state(done, tmp_path)
    assert after != before
    assert not crashlib.needs_recovery(done)
    crashlib.sweep(img0, crashlib.shell_op(cmds),
                   atomic(before, after, tmp_path), tmp_path, POINT_LIMIT,
                   faults=crashlib.crash_and_powercut(POWERCUT_EVERY)
                   ).assert_clean(f"{op} bs={bs}")


@pytest.mark.slow
def test_crash_in_a_session_that_wraps_the_journal(base, tmp_path):
    """120 reflinks in one session: more than the 1 MiB journal of a 16 MiB
    image with 1 KiB blocks holds, so the log is emptied and wraps while
    the session runs.  Crashed anywhere, the replayed image holds the
    first k of the new names for some k, each a copy of /keep, and both
    checkers are clean."""
    img0 = base(1024)
    cmds = [f"reflink /keep /r{i:03d}" for i in range(120)]
    keep = crashlib.dump_files(img0, ["/keep"], tmp_path)["/keep"]

    def oracle(img, how):
        probs = crashlib.checkers_clean(img, tail=600)
        names = sorted(x for x in (crashlib.ls_dir(img, "/") or {})
                       if x.startswith("r"))
        if names != [f"r{j:03d}" for j in range(len(names))]:
            probs.append(f"not a prefix of the session: {names[:5]}...")
        got = crashlib.dump_files(img, [f"/{x}" for x in names], tmp_path)
        if any(v != keep for v in got.values()):
            probs.append("a new name's content differs from /keep")
        return probs
    crashlib.sweep(img0, crashlib.shell_op(cmds), oracle, tmp_path,
                   POINT_LIMIT, faults=crashlib.crash_or_powercut(2, 0)
                   ).assert_clean()


def crash_committed(img0, cmds, img, tmp_path, look, want,
                    not_in_place=False):
    """Crash a copy of img0 into img at the first write point where the
    journal holds the committed result: img needs recovery, and look() of
    a copy replayed by stock e2fsck is want (with not_in_place, look(img)
    unreplayed is not: the result is in the journal only)."""
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    total, _ = crashlib.count(crashlib.shell_op(cmds), probe, tmp_path)
    trial = tmp_path / "trial.img"

    def committed(img):
        if not crashlib.needs_recovery(img) or (
                not_in_place and look(img) == want):
            return False
        crashlib.sparse_copy(img, trial)
        return not crashlib.replay(trial, "e2fsck") and look(trial) == want
    if crashlib.first_crash(img0, crashlib.shell_op(cmds), img, committed,
                            range(1, total + 1)) is None:
        pytest.fail("no crash point leaves a committed transaction in the "
                    "journal")


def test_kernel_replays_a_committed_transaction(base, tmp_path):
    """An image left with a committed transaction not yet written in place
    (the crash point right after the commit block): the kernel, given a
    writable loop device, replays the journal at mount and shows the
    committed state; afterwards the image is clean for both checkers."""
    helpers.require_loop()
    img0 = base(4096)
    cmds = OPS["reflink_r"]
    done = tmp_path / "done.img"
    crashlib.sparse_copy(img0, done)
    assert run(done, cmds).returncode == 0
    after = state(done, tmp_path)
    img = tmp_path / "crash.img"
    crash_committed(img0, cmds, img, tmp_path,
                    lambda i: state(i, tmp_path), after)
    res = crashlib._run(["mount", "-o", "loop,ro", str(img),
                         str(tmp_path)])
    assert res.returncode != 0, "the kernel mounted an image needing recovery read-only"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    dev = crashlib._run(["losetup", "-f", "--show", str(img)]).stdout.strip()
    assert dev.startswith("/dev/loop"), dev
    try:
        res = crashlib._run(["mount", "-o", "ro", dev, str(mnt)])
        assert res.returncode == 0, helpers.describe(res)
        try:
            src = (mnt / "dir" / "x").read_bytes()
            assert (mnt / "dir.copy" / "x").read_bytes() == src
            assert (mnt / "dir.copy" / "sub" / "z").read_bytes() == \
                (mnt / "dir" / "sub" / "z").read_bytes()
        finally:
            crashlib._run(["umount", str(mnt)])
    finally:
        crashlib._run(["losetup", "-d", dev])
    assert not crashlib.needs_recovery(img)
    assert not crashlib.checkers_clean(img)
    assert state(img, tmp_path) == after


@pytest.mark.parametrize("req", ["reflink /src /src.copy",
                                 "pwrite -S 3 /shared 0 4096",
                                 "rm /shared"])
def test_small_operation_flushes_no_more_than_without_journal(tmp_path, req):
    """A single small operation through the journal costs no more flushes
    (fsyncs) than the ordered path of an image without one (counted by the
    fault-injecting io manager: every flush of the image, close included)."""
    def flushes(opts):
        img = tmp_path / "f.img"
        if img.exists():
            img.unlink()
        helpers.mkfs(img, "16M", "-q", *opts)
        f = tmp_path / "h"
        f.write_bytes(random.Random(1).randbytes(40000))
        res = run(img, [f"write {f} /src", "reflink /src /shared"])
        assert res.returncode == 0, helpers.describe(res)
        flushes = crashlib.count_writes(img, req, tmp_path)[1]
        helpers.e2fsck_fn(img)
        return flushes
    journaled, plain = flushes(()), flushes(("-O", "^has_journal"))
    assert journaled <= plain, (journaled, plain)


@pytest.mark.slow
def test_crash_during_convert_dedupe(tmp_path):
    """mkfs.extref --convert --dedup=block of a plain ext4 image, crashed
    after each of its writes: after stock e2fsck -fy, the image is either
    the plain one as it was or the converted and shared one exactly (one
    transaction, as it fits in half the journal); both checkers are clean
    and every file holds its bytes."""
    rng = random.Random(7)
    src = tmp_path / "src"
    src.mkdir()
    common = rng.randbytes(8192)
    for i in range(12):
        (src / f"f{i}").write_bytes(common + rng.randbytes(1000 * (i % 3))
                                    if i % 2 else common)
    plain = tmp_path / "plain.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", "1024", "-d", str(src),
                 str(plain), "16M"])
    paths = [f"/f{i}" for i in range(12)]
    want = crashlib.dump_files(plain, paths, tmp_path)
    mkfs = crashlib.tool_op([helpers.binary("mkfs.extref"), "-q",
                             "--convert", "--dedup=block"])
    done = tmp_path / "done.img"
    crashlib.sparse_copy(plain, done)
    assert mkfs(done).returncode == 0
    after = crashlib.refcount_records(done)
    assert after
    oracle = crashlib.converted_or_not(
        lambda img: crashlib.dump_files(img, paths, tmp_path), want,
        lambda recs: [] if recs == after else
        ["converted, but not shared as after"])
    crashlib.sweep(plain, mkfs, oracle, tmp_path, POINT_LIMIT,
                   faults=crashlib.crash_or_powercut(3, 0),
                   replayers=("e2fsck",)).assert_clean()


def test_read_only_open_shows_the_replayed_state(base, tmp_path):
    """debugfs.extref without -w on an image left with a committed
    transaction in its journal: it says so, shows the files as the replay
    leaves them (the same bytes stock e2fsck's replay gives), and does
    not change the image file."""
    img0 = base(1024)
    cmds = ["pwrite -S 77 /keep 0 7000", "rm /dup2"]
    done = tmp_path / "done.img"
    crashlib.sparse_copy(img0, done)
    assert run(done, ["begin"] + cmds + ["commit"]).returncode == 0
    after = crashlib.dump_files(done, ["/keep", "/dup2"], tmp_path)
    img = tmp_path / "crash.img"
    crash_committed(img0, ["begin"] + cmds + ["commit"], img, tmp_path,
                    lambda i: crashlib.dump_files(i, ["/keep", "/dup2"],
                                                  tmp_path),
                    after, not_in_place=True)
    digest = helpers.sha256(img)
    keep = tmp_path / "keep.out"
    res = crashlib._run([crashlib.debugfs_extref(), "-R",
                         f"dump /keep {keep}", str(img)])
    assert res.returncode == 0, helpers.describe(res)
    assert "journal needs recovery" in res.stderr
    assert "in memory only" in res.stderr
    assert keep.read_bytes() == after["/keep"]
    res = crashlib._run([crashlib.debugfs_extref(), "-R", "ls /",
                         str(img)])
    assert "dup2" not in res.stdout.split()
    assert helpers.sha256(img) == digest
    assert crashlib.needs_recovery(img)


def test_damaged_journal_is_refused_for_writing_shown_read_only(base,
                                                               tmp_path):
    """A committed transaction left in a journal whose superblock a stock
    tool then damaged (dd over its magic): a write open refuses, naming
    the journal, and changes nothing; a read-only open shows the image as
    it is on disk and says the journal could not be replayed."""
    img = tmp_path / "j.img"
    crashlib.sparse_copy(base(1024), img)
    run(img, ["reflink /src /src.copy"], "crash=12")
    assert crashlib.needs_recovery(img)
    jsb = min(helpers.journal_blocks(img))
    helpers.run(["dd", "if=/dev/zero", f"of={img}", "bs=1024",
                 f"seek={jsb}", "count=1", "conv=notrunc"])
    digest = helpers.sha256(img)
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R", "stats",
                         str(img)])
    assert res.returncode == 1
    assert "Journal superblock is corrupt" in res.stderr, res.stderr
    res = crashlib._run([crashlib.debugfs_extref(), "-R", "ls /",
                         str(img)])
    assert res.returncode == 0, helpers.describe(res)
    assert "cannot be replayed" in res.stderr
    assert "src" in res.stdout.split()
    assert helpers.sha256(img) == digest


def test_journal_inode_not_a_file_is_refused(base, tmp_path):
    """A journal inode a stock tool turned into a directory (debugfs -w
    sif): as e2fsck, the journal is not trusted; a write open refuses
    and changes nothing."""
    img = tmp_path / "j.img"
    crashlib.sparse_copy(base(1024), img)
    run(img, ["reflink /src /src.copy"], "crash=12")
    helpers.run(["debugfs", "-w", "-R", "sif <8> mode 040755", str(img)])
    digest = helpers.sha256(img)
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R", "stats",
                         str(img)])
    assert res.returncode == 1
    assert "journal inode is not a regular file" in res.stderr, res.stderr
    assert helpers.sha256(img) == digest
