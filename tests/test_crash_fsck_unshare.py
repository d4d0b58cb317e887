"""fsck.extref -E unshare committed in parts, crashed (issue 11).

The image (1 KiB blocks) holds /a (200 blocks) and 100 files /xNNN whose
one block is /a's block 2*NNN, mapped by hand (map_raw: no record, so
100 problems 0x0304).  `fsck.extref -fy -E unshare` gives each /xNNN a
copy of its block.  EXTREF_FAULT_TX_ROOM=10 (fault-injection builds) has
it commit as with a journal of 10 blocks: once 5 blocks are held, after
a whole range is copied (libfs/check/fsck_txn.c), so the run is several
commits.  Crashed after a sample of its writes (EXTREF_CRASH_FULL=1:
every write), as a crash or as a power cut, and replayed by stock
`e2fsck -fy` or by the next extref tool (alternately):

  - stock `e2fsck -fn` is clean;
  - `fsck.extref -fn` reports some of the planted problems (the ranges
    not yet copied) or none, never another;
  - every file reads back (stock debugfs) byte for byte as before;
  - `fsck.extref -fy -E unshare` then finishes: both checkers clean,
    nothing shared, every file as before.
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
POINT_LIMIT = 1000 if FULL else 16
NX = 100
ROOM = "10"
FILES = ["/a"] + [f"/x{i:03d}" for i in range(NX)]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    work = tmp_path_factory.mktemp("unshare")
    src = work / "src"
    src.mkdir()
    data = random.Random(5).randbytes(1024 * 2 * NX)
    (src / "a").write_bytes(data)
    for i in range(NX):
        (src / f"x{i:03d}").write_bytes(b"")
    img = work / "u.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-F", "-b", "1024",
                 "-d", str(src), str(img), "16M"])
    cmds = []
    for i in range(NX):
        blk = int(helpers.debugfs(img, f"bmap /a {2 * i}").stdout)
        cmds.append(f"map_raw /x{i:03d} 0 {blk} 1\n"
                    f"sif /x{i:03d} size 1024\n")
    (work / "cmds").write_text("".join(cmds))
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-f",
                         str(work / "cmds"), str(img)])
    assert res.returncode == 0, helpers.describe(res)
    files = crashlib.dump_files(img, FILES, work)
    assert files["/a"] == data
    for i in range(NX):
        assert files[f"/x{i:03d}"] == data[2048 * i:2048 * i + 1024]
    yield img, files
    shutil.rmtree(work, ignore_errors=True)


def unshare(room):
    """fsck.extref -fy -E unshare committing as with a journal of room
    blocks ("": the image's own)."""
    return crashlib.fsck_op("-E", "unshare",
                            env={"EXTREF_FAULT_TX_ROOM": room})


def _finished(img, files, workdir):
    """What is wrong after fsck.extref -fy -E unshare finishes."""
    probs = []
    res = unshare("")(img)
    if res.returncode not in (0, 1):
        probs.append(f"fsck.extref -fy exit {res.returncode}")
    if crashlib.fsck_problems(img) != ([], 0):
        probs.append(f"fsck.extref -fn after -fy: "
                     f"{crashlib.fsck_problems(img)}")
    res = crashlib.e2fsck(img, "-fn")
    if res.returncode != 0:
        probs.append(f"e2fsck -fn after -fy: {res.stdout[-400:]}")
    if crashlib.refcount_records(img):
        probs.append("blocks still shared")
    if crashlib.dump_files(img, FILES, workdir) != files:
        probs.append("files changed by the repair")
    return probs


def test_unshare_commits_in_parts(planted, tmp_path):
    """The small room makes several commits (more flushes than the one
    commit of the whole run); both repair alike."""
    img0, files = planted
    flushes = {}
    for room in ("", ROOM):
        img = tmp_path / f"r{room}.img"
        crashlib.sparse_copy(img0, img)
        flushes[room] = crashlib.count(unshare(room), img, tmp_path, 1)[1]
        assert not _finished(img, files, tmp_path)
    assert flushes[ROOM] >= flushes[""] + 4, flushes


@pytest.mark.slow
def test_unshare_in_parts_crash_keeps_every_file(planted, tmp_path):
    img0, files = planted
    planted_lines, st = crashlib.fsck_problems(img0)
    assert len(planted_lines) == NX and st == 4
    partial = []

    def oracle(img, how):
        probs = crashlib.checkers_clean(img, fsck=False, tail=400)
        got, st = crashlib.fsck_problems(img)
        if not set(got) <= set(planted_lines) or st not in (0, 4):
            probs.append(f"fsck.extref -fn: exit {st}, "
                         f"{sorted(set(got) - set(planted_lines))[:3]}")
        if 0 < len(got) < NX:
            partial.append(len(got))
        if crashlib.dump_files(img, FILES, tmp_path) != files:
            probs.append("files changed")
        return probs + _finished(img, files, tmp_path)
    crashlib.sweep(img0, unshare(ROOM), oracle, tmp_path, POINT_LIMIT,
                   faults=crashlib.crash_or_powercut(3, 2), count_status=1,
                   e2fsck_worst=3, extref_opens=False).assert_clean()
    # some crash left a part committed: the parts are real
    assert partial, "no crash point fell between two commits"
