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

import shutil
from pathlib import Path

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = [pytest.mark.crash,
              pytest.mark.skipif(_NO_FAULTS is not None,
                                 reason=_NO_FAULTS or "")]

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
    res = crashlib.fsck_op(*opts)(img)
    if res.returncode not in (0, 1):
        probs.append(f"fsck.extref -fy exit {res.returncode}: "
                     f"{res.stdout[-400:]}{res.stderr[-400:]}")
    probs += [p + " (after -fy)"
              for p in crashlib.checkers_clean(img, tail=500)]
    if files_of(img, workdir) != files:
        probs.append("files changed by the repair")
    return probs


@pytest.mark.slow
@pytest.mark.parametrize("case,opts", CASES,
                         ids=[c + ("-unshare" if o and o[1] == "unshare"
                                   else "") for c, o in CASES])
def test_repair_crash_is_atomic(built, tmp_path, case, opts):
    img0 = built(case)
    planted, st = crashlib.fsck_problems(img0)
    assert planted and st == 4, (case, planted, st)
    files = files_of(img0, tmp_path)
    # without a fault: repaired, through the journal
    done = tmp_path / "done.img"
    crashlib.sparse_copy(img0, done)
    assert not check_repaired(done, opts, files, tmp_path)

    def oracle(img, how):
        probs = []
        got, st = crashlib.fsck_problems(img)
        if got and got != planted:
            probs.append(f"problems neither the planted ones nor none: "
                         f"{got}")
        if files_of(img, tmp_path) != files:
            probs.append("files changed")
        return probs + check_repaired(img, opts, files, tmp_path)
    # (the open replays before it verifies the tree, which may refuse)
    crashlib.sweep(img0, crashlib.fsck_op(*opts), oracle, tmp_path,
                   POINT_LIMIT, faults=crashlib.crash_or_powercut(3, 2),
                   count_status=1, e2fsck_worst=7,
                   extref_opens=False).assert_clean(case)


def committed_repair(img0, img):
    """Crash the repair of a copy of img0 at img at the first point that
    leaves it committed in the journal only; fails the test if none."""
    total, _ = crashlib.count(crashlib.fsck_op(), img, img.parent, 1)
    if crashlib.first_crash(
            img0, crashlib.fsck_op(), img,
            lambda i: crashlib.needs_recovery(i)
            and crashlib.fsck_problems(i)[0] == [],
            range(1, total + 1)) is None:
        pytest.fail("no crash point leaves a committed repair to replay")


def test_check_only_of_an_image_needing_recovery(built, tmp_path):
    """A repair crashed after its commit block leaves the image needing
    recovery: fsck.extref -n checks it as the replay leaves it (no
    problem: the repair committed), says so, and writes nothing; -y
    replays it for good."""
    img0 = built("f_0301_count_too_low")
    img = tmp_path / "crash.img"
    crashlib.sparse_copy(img0, img)
    committed_repair(img0, img)
    before = img.read_bytes()
    res = crashlib.fsck_run(img, "-fn", "-E", "no_e2fsck")
    assert res.returncode == 0, helpers.describe(res)
    assert "journal needs recovery: a change was interrupted after its " \
        "commit (1 transaction not yet replayed)" in res.stdout, res.stdout
    assert "checked as fsck.extref's verified replay of it" in res.stdout
    assert "leaves it, in memory only, nothing written" in res.stdout
    assert img.read_bytes() == before
    res = crashlib.fsck_op("-E", "no_e2fsck")(img)
    assert res.returncode == 0, helpers.describe(res)
    assert "journal recovered by fsck.extref (" in res.stdout, res.stdout
    assert not crashlib.needs_recovery(img)
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
        op = crashlib.fsck_op(env={"EXTREF_FAULT_TX_ROOM": room})
        flushes[room] = crashlib.count(op, img, tmp_path, 1)[1]
        assert not crashlib.needs_recovery(img)
        assert crashlib.fsck_problems(img) == ([], 0)
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
    img = tmp_path / "crash.img"
    crashlib.sparse_copy(img0, img)
    committed_repair(img0, img)
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
    assert not crashlib.needs_recovery(img)
    assert crashlib.fsck_problems(img) == ([], 0)
    helpers.e2fsck_fn(img)
    assert files_of(img, tmp_path) == files
