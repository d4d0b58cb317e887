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
from pathlib import Path

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = pytest.mark.skipif(_NO_FAULTS is not None,
                                reason=_NO_FAULTS or "")

FULL = os.environ.get("EXTREF_CRASH_FULL") == "1"
POINT_LIMIT = 400 if FULL else 24
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
    env = {"EXTREF_FAULT": fault} if fault else {}
    cmdfile = Path(str(img) + ".cmds")
    cmdfile.write_text("\n".join(cmds) + "\n")
    return crashlib._run([crashlib.debugfs_extref(), "-w", "-f",
                          str(cmdfile), str(img)], env=env)


def count_writes(img, cmds, workdir):
    out = Path(workdir) / "count.out"
    if out.exists():
        out.unlink()
    cmdfile = Path(str(img) + ".cmds")
    cmdfile.write_text("\n".join(cmds) + "\n")
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-f", str(cmdfile),
                         str(img)],
                        env={"EXTREF_FAULT": "count",
                             "EXTREF_FAULT_OUT": str(out)})
    assert res.returncode == 0, helpers.describe(res)
    line = out.read_text().splitlines()[0]
    return int(line.split()[0].split("=")[1])


def needs_recovery(img):
    res = crashlib._run(["dumpe2fs", "-h", str(img)])
    return "needs_recovery" in res.stdout


def replay(img, how):
    if how == "e2fsck":
        res = crashlib.e2fsck(img, "-fy")
        assert res.returncode in (0, 1), helpers.describe(res)
    else:
        res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R", "stats",
                             str(img)])
        assert res.returncode == 0, helpers.describe(res)


def check_point(img, before, after, workdir, how):
    problems = []
    replay(img, how)
    if needs_recovery(img):
        problems.append("still needs recovery after the replay")
    res = crashlib.e2fsck(img, "-fn")
    if res.returncode != 0:
        problems.append("e2fsck -fn: " + res.stdout[-800:])
    res = crashlib.fsck_run(img, "-fn")
    if res.returncode != 0:
        problems.append("fsck.extref -fn: " + res.stdout[-800:])
    got = state(img, workdir)
    if got != before and got != after:
        diff = [k for k in got if got[k] != before[k] and got[k] != after[k]]
        if "files" in diff:
            diff = [p for p in PATHS
                    if got["files"][p] not in (before["files"][p],
                                               after["files"][p])]
        problems.append(f"neither the state before nor after: {diff}")
    return problems


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
    assert not needs_recovery(done)
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    total = count_writes(probe, cmds, tmp_path)
    failures = []
    points = crashlib.crash_points(total, POINT_LIMIT)
    for i, n in enumerate(points):
        faults = [f"crash={n}"]
        if i % POWERCUT_EVERY == 0:
            faults.append(f"powercut={n},seed={n}")
        for fault in faults:
            img = tmp_path / "crash.img"
            crashlib.sparse_copy(img0, img)
            run(img, cmds, fault)
            how = "e2fsck" if (n + len(fault)) % 2 else "extref"
            probs = check_point(img, before, after, tmp_path, how)
            if probs:
                failures.append(f"{fault} (replayed by {how}): {probs}")
                shutil.copy(img, tmp_path / f"failed-{len(failures)}.img")
        if len(failures) >= 3:
            break
    assert not failures, f"{op} bs={bs} W={total}:\n" + "\n".join(failures)


def test_crash_in_a_session_that_wraps_the_journal(base, tmp_path):
    """120 reflinks in one session: more than the 1 MiB journal of a 16 MiB
    image with 1 KiB blocks holds, so the log is emptied and wraps while
    the session runs.  Crashed anywhere, the replayed image holds the
    first k of the new names for some k, each a copy of /keep, and both
    checkers are clean."""
    img0 = base(1024)
    n = 120
    cmds = [f"reflink /keep /r{i:03d}" for i in range(n)]
    keep = crashlib.dump_files(img0, ["/keep"], tmp_path)["/keep"]
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    total = count_writes(probe, cmds, tmp_path)
    failures = []
    for i, w in enumerate(crashlib.crash_points(total, POINT_LIMIT)):
        fault = f"crash={w}" if i % 2 else f"powercut={w},seed={w}"
        img = tmp_path / "crash.img"
        crashlib.sparse_copy(img0, img)
        run(img, cmds, fault)
        how = "e2fsck" if i % 4 < 2 else "extref"
        replay(img, how)
        probs = []
        for tool in (("e2fsck",), ("fsck",)):
            res = crashlib.e2fsck(img, "-fn") if tool[0] == "e2fsck" \
                else crashlib.fsck_run(img, "-fn")
            if res.returncode != 0:
                probs.append(f"{tool[0]} -fn: {res.stdout[-600:]}")
        names = sorted(x for x in (crashlib.ls_dir(img, "/") or {})
                       if x.startswith("r"))
        k = len(names)
        if names != [f"r{j:03d}" for j in range(k)]:
            probs.append(f"not a prefix of the session: {names[:5]}...")
        got = crashlib.dump_files(img, [f"/{x}" for x in names], tmp_path)
        if any(v != keep for v in got.values()):
            probs.append("a new name's content differs from /keep")
        if probs:
            failures.append(f"{fault} (replayed by {how}): {probs}")
        if len(failures) >= 3:
            break
    assert not failures, f"W={total}:\n" + "\n".join(failures)


def crash_committed(img0, cmds, img, tmp_path, look, want,
                    not_in_place=False):
    """Crash a copy of img0 into img at the first write point where the
    journal holds the committed result: img needs recovery, and look() of
    a copy replayed by stock e2fsck is want (with not_in_place, look(img)
    unreplayed is not: the result is in the journal only)."""
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    total = count_writes(probe, cmds, tmp_path)
    trial = tmp_path / "trial.img"
    for n in range(1, total + 1):
        crashlib.sparse_copy(img0, img)
        run(img, cmds, f"crash={n}")
        if not needs_recovery(img) or (not_in_place and look(img) == want):
            continue
        crashlib.sparse_copy(img, trial)
        replay(trial, "e2fsck")
        if look(trial) == want:
            return
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
    assert not needs_recovery(img)
    assert crashlib.e2fsck(img, "-fn").returncode == 0
    assert crashlib.fsck_run(img, "-fn").returncode == 0
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
        out = tmp_path / "count.out"
        if out.exists():
            out.unlink()
        res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R", req,
                             str(img)],
                            env={"EXTREF_FAULT": "count",
                                 "EXTREF_FAULT_OUT": str(out)})
        assert res.returncode == 0, helpers.describe(res)
        helpers.e2fsck_fn(img)
        return int(out.read_text().split()[1].split("=")[1])
    journaled, plain = flushes(()), flushes(("-O", "^has_journal"))
    assert journaled <= plain, (journaled, plain)


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
    mkfs = [helpers.binary("mkfs.extref"), "-q", "--convert",
            "--dedup=block"]
    done = tmp_path / "done.img"
    crashlib.sparse_copy(plain, done)
    helpers.run(mkfs + [str(done)])
    after = crashlib.refcount_records(done)
    assert after
    out = tmp_path / "count.out"
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(plain, probe)
    crashlib._run(mkfs + [str(probe)], env={"EXTREF_FAULT": "count",
                                            "EXTREF_FAULT_OUT": str(out)})
    total = int(out.read_text().split()[0].split("=")[1])
    failures = []
    for i, n in enumerate(crashlib.crash_points(total, POINT_LIMIT)):
        fault = f"crash={n}" if i % 3 else f"powercut={n},seed={n}"
        img = tmp_path / "crash.img"
        crashlib.sparse_copy(plain, img)
        crashlib._run(mkfs + [str(img)], env={"EXTREF_FAULT": fault})
        replay(img, "e2fsck")
        probs = []
        if crashlib.e2fsck(img, "-fn").returncode != 0:
            probs.append("e2fsck -fn")
        if crashlib.dump_files(img, paths, tmp_path) != want:
            probs.append("file contents changed")
        feats = crashlib._run(["dumpe2fs", "-h", str(img)]).stdout
        if "shared_blocks" in feats:
            if crashlib.fsck_run(img, "-fn").returncode != 0:
                probs.append("fsck.extref -fn")
            if crashlib.refcount_records(img) != after:
                probs.append("converted, but not shared as after")
        if probs:
            failures.append(f"{fault}: {probs}")
        if len(failures) >= 3:
            break
    assert not failures, f"W={total}:\n" + "\n".join(failures)


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
    assert needs_recovery(img)


def test_damaged_journal_is_refused_for_writing_shown_read_only(base,
                                                               tmp_path):
    """A committed transaction left in a journal whose superblock a stock
    tool then damaged (dd over its magic): a write open refuses, naming
    the journal, and changes nothing; a read-only open shows the image as
    it is on disk and says the journal could not be replayed."""
    img = tmp_path / "j.img"
    crashlib.sparse_copy(base(1024), img)
    run(img, ["reflink /src /src.copy"], "crash=12")
    assert needs_recovery(img)
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
