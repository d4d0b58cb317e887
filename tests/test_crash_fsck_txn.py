"""Crash tests of fsck.extref's repairs through the image's journal.

Each case is an fsck case of tests/fsck/ (the default image, which has a
journal, with one problem planted by the case's `corrupt` script).
fsck.extref -fy runs on a copy under the fault-injecting io manager
(EXTREF_FAULT=crash=N: the first N writes of its own open reach the
image; powercut=N,seed=S: the writes since the last flush reach it or
not at random), for write points spread over the whole repair.  Then the
copy is replayed, by stock `e2fsck -fy` or by the next extref tool that
opens it for writing (alternately), and:

  - the journal no longer needs recovery;
  - `fsck.extref -fn -E no_e2fsck` reports exactly the problems planted
    (the repair did not commit) or none (it did), never others;
  - every file reads (stock debugfs) as before the repair;
  - `fsck.extref -fy` then leaves both checkers clean, files unchanged.

A run without a fault is checked the same way.  Forcing the repair off
the journal (EXTREF_OPEN_NO_JOURNAL in fsck.extref's open) makes these
tests fail: crashes then leave a missing or unreadable tree.
"""

import re
import shutil
from pathlib import Path

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = pytest.mark.skipif(_NO_FAULTS is not None,
                                reason=_NO_FAULTS or "")

CASES_DIR = Path(__file__).resolve().parent / "fsck"
POINT_LIMIT = 14

# (case, extra fsck.extref options)
CASES = [
    ("f_0301_count_too_low", []),
    ("f_0302_count_too_high", []),
    ("f_0304_shared_no_record", []),
    ("f_0304_shared_no_record", ["-E", "unshare"]),
    ("f_0103_mapped_block_free", ["-E", "no_e2fsck"]),
    ("f_0201_tree_node", []),
]


def _script(path, img, tmp):
    env = {"MKFS": helpers.binary("mkfs.extref"),
           "DEBUGFS": helpers.binary("debugfs.extref"),
           "TMP": str(tmp), "IMG": str(img)}
    res = helpers.run(["sh", str(path)], env=env, check=False)
    assert res.returncode == 0, helpers.describe(res)


def files_of(img, workdir):
    """{path: bytes} of the root directory's regular files (stock debugfs)."""
    names = [n for n, (_i, mode) in (crashlib.ls_dir(img, "/") or {}).items()
             if mode & 0o170000 == 0o100000]
    return crashlib.dump_files(img, [f"/{n}" for n in sorted(names)],
                               workdir)


def problems(img):
    """The problem lines of fsck.extref -fn -E no_e2fsck, and its exit."""
    res = crashlib.fsck_run(img, "-fn", "-E", "no_e2fsck")
    lines = sorted(ln for ln in res.stdout.splitlines()
                   if re.match(r"^0x[0-9a-f]{4} ", ln))
    return lines, res.returncode


def needs_recovery(img):
    res = crashlib._run(["dumpe2fs", "-h", str(img)])
    return "needs_recovery" in res.stdout


def replay(img, how):
    if how == "e2fsck":
        res = crashlib.e2fsck(img, "-fy")
        assert res.returncode < 8, helpers.describe(res)
    else:
        # the open replays before it verifies the tree (which may refuse)
        crashlib._run([crashlib.debugfs_extref(), "-w", "-R", "stats",
                       str(img)])


def fsck_fy(img, opts, fault=None, out=None):
    env = {}
    if fault:
        env["EXTREF_FAULT"] = fault
    if out:
        env["EXTREF_FAULT_OUT"] = str(out)
    path = crashlib.fsck_path()
    return crashlib._run([path, "-fy", *opts, str(img)], env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("crash-fsck")
    made = {}

    def get(case):
        if case not in made:
            work = root / case
            work.mkdir()
            img = work / "case.img"
            _script(CASES_DIR / "build.default", img, work)
            _script(CASES_DIR / case / "corrupt", img, work)
            made[case] = img
        return made[case]
    yield get
    shutil.rmtree(root, ignore_errors=True)


def check_repaired(img, opts, files, workdir):
    """fsck.extref -fy, then both checkers clean and the files as they
    were; returns the problems found."""
    probs = []
    res = fsck_fy(img, opts)
    if res.returncode not in (0, 1):
        probs.append(f"fsck.extref -fy exit {res.returncode}: "
                     f"{res.stdout[-400:]}{res.stderr[-400:]}")
    res = crashlib.fsck_run(img, "-fn")
    if res.returncode != 0:
        probs.append(f"fsck.extref -fn after -fy: {res.stdout[-500:]}")
    res = crashlib.e2fsck(img, "-fn")
    if res.returncode != 0:
        probs.append(f"e2fsck -fn after -fy: {res.stdout[-500:]}")
    if files_of(img, workdir) != files:
        probs.append("files changed by the repair")
    return probs


@pytest.mark.parametrize("case,opts", CASES,
                         ids=[c + ("-unshare" if o and o[1] == "unshare"
                                   else "") for c, o in CASES])
def test_repair_crash_is_atomic(built, tmp_path, case, opts):
    img0 = built(case)
    planted, st = problems(img0)
    assert planted and st == 4, (case, planted, st)
    files = files_of(img0, tmp_path)
    # without a fault: repaired, through the journal
    done = tmp_path / "done.img"
    crashlib.sparse_copy(img0, done)
    assert not check_repaired(done, opts, files, tmp_path)
    out = tmp_path / "count.out"
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    res = fsck_fy(probe, opts, "count", out)
    assert res.returncode == 1, helpers.describe(res)
    m = re.match(r"writes=(\d+) flushes=(\d+)$",
                 out.read_text().splitlines()[0])
    total = int(m.group(1))
    failures = []
    for i, n in enumerate(crashlib.crash_points(total, POINT_LIMIT)):
        fault = f"powercut={n},seed={n}" if i % 3 == 2 else f"crash={n}"
        img = tmp_path / "crash.img"
        crashlib.sparse_copy(img0, img)
        fsck_fy(img, opts, fault)
        how = "e2fsck" if i % 2 else "extref"
        replay(img, how)
        probs = []
        if needs_recovery(img):
            probs.append("still needs recovery after the replay")
        got, st = problems(img)
        if got and got != planted:
            probs.append(f"problems neither the planted ones nor none: "
                         f"{got}")
        if files_of(img, tmp_path) != files:
            probs.append("files changed")
        probs += check_repaired(img, opts, files, tmp_path)
        if probs:
            failures.append(f"{fault} (replayed by {how}): {probs}")
            shutil.copy(img, tmp_path / f"failed-{len(failures)}.img")
        if len(failures) >= 3:
            break
    assert not failures, f"{case} W={total}:\n" + "\n".join(failures)


def test_check_only_of_an_image_needing_recovery(built, tmp_path):
    """A repair crashed after its commit block leaves the image needing
    recovery: fsck.extref -n checks it as the replay leaves it (no
    problem: the repair committed), says so, and writes nothing; -y
    replays it for good."""
    img0 = built("f_0301_count_too_low")
    out = tmp_path / "count.out"
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    fsck_fy(probe, [], "count", out)
    total = int(out.read_text().split()[0].split("=")[1])
    img = tmp_path / "crash.img"
    for n in range(1, total + 1):
        crashlib.sparse_copy(img0, img)
        fsck_fy(img, [], f"crash={n}")
        if needs_recovery(img) and problems(img)[0] == []:
            break
    else:
        pytest.fail("no crash point leaves a committed repair to replay")
    before = img.read_bytes()
    res = crashlib.fsck_run(img, "-fn", "-E", "no_e2fsck")
    assert res.returncode == 0, helpers.describe(res)
    assert "journal needs recovery: checked as fsck.extref's verified " \
        "replay of it (" in res.stdout, res.stdout
    assert "leaves it, in memory only, nothing written" in res.stdout
    assert img.read_bytes() == before
    res = fsck_fy(img, ["-E", "no_e2fsck"])
    assert res.returncode == 0, helpers.describe(res)
    assert "journal recovered by fsck.extref (" in res.stdout, res.stdout
    assert not needs_recovery(img)
    helpers.e2fsck_fn(img)


@pytest.mark.parametrize("case", ["f_0301_count_too_low",
                                  "f_0201_tree_node"])
def test_rebuild_larger_than_the_journal_takes_the_ordered_path(
        built, tmp_path, case):
    """A rebuild whose commit would not fit the journal even with its new
    nodes written in place early (made so on a small image by
    EXTREF_FAULT_TX_ROOM=1, fault-injection builds; the spilling path is
    tests/test_crash_fsck_spill.py) is written without the journal, in
    the ordered way: the repair still
    leaves both checkers clean and every file as it was, and the journal
    empty.  Counted by the fault-injecting io manager: the journaled
    repair flushes at its commit, the ordered one at each step."""
    img0 = built(case)
    files = files_of(img0, tmp_path)
    flushes = {}
    for room in ("", "1"):
        img = tmp_path / f"r{room}.img"
        crashlib.sparse_copy(img0, img)
        out = tmp_path / f"count{room}.out"
        res = crashlib._run([crashlib.fsck_path(), "-fy", str(img)],
                            env={"EXTREF_FAULT": "count",
                                 "EXTREF_FAULT_OUT": str(out),
                                 "EXTREF_FAULT_TX_ROOM": room})
        assert res.returncode == 1, helpers.describe(res)
        flushes[room] = int(re.search(r"flushes=(\d+)",
                                      out.read_text()).group(1))
        assert not needs_recovery(img)
        assert problems(img) == ([], 0)
        helpers.e2fsck_fn(img)
        assert files_of(img, tmp_path) == files
    assert flushes["1"] > flushes[""], flushes


def test_kernel_replays_a_crashed_repair(built, tmp_path):
    """A repair crashed after its commit block (the first write point
    whose replay is repaired: nothing of it is in place yet): the kernel,
    given a writable loop device, replays the journal at mount; the image
    is then repaired for both checkers, the files as they were."""
    helpers.require_loop()
    img0 = built("f_0301_count_too_low")
    files = files_of(img0, tmp_path)
    out = tmp_path / "count.out"
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    fsck_fy(probe, [], "count", out)
    total = int(out.read_text().split()[0].split("=")[1])
    img = tmp_path / "crash.img"
    for n in range(1, total + 1):
        crashlib.sparse_copy(img0, img)
        fsck_fy(img, [], f"crash={n}")
        if needs_recovery(img) and problems(img)[0] == []:
            break
    else:
        pytest.fail("no crash point leaves a committed repair to replay")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    dev = crashlib._run(["losetup", "-f", "--show", str(img)]).stdout.strip()
    assert dev.startswith("/dev/loop"), dev
    try:
        res = crashlib._run(["mount", "-o", "ro", dev, str(mnt)])
        assert res.returncode == 0, helpers.describe(res)
        crashlib._run(["umount", str(mnt)])
    finally:
        if helpers.mount_entry(mnt) is not None:
            crashlib._run(["umount", "-l", str(mnt)])
        crashlib._run(["losetup", "-d", dev])
    assert not needs_recovery(img)
    assert problems(img) == ([], 0)
    helpers.e2fsck_fn(img)
    assert files_of(img, tmp_path) == files
