"""fsck.extref's rebuild of a tree bigger than the room left in the
journal: still one commit (issue 11).

The image (1 KiB blocks) holds two files that share every other block:
3,000 records in a tree of 50 nodes.  One record's count is raised, so
fsck.extref -fy rebuilds the tree.  EXTREF_FAULT_TX_ROOM=N (fault-
injection builds) has the rebuild see at most N blocks of room in the
journal:

  - no limit: the whole rebuild fits and is journaled (every new node is
    written twice, to the journal and in place);
  - ROOM (30): the new tree does not fit but the blocks that were in use
    before do: the new nodes are written in place early, unjournaled,
    and the one commit holds inode 5's inode, bitmaps, descriptors and
    the superblock (libfs/check/fsck_txn.c, libfs/txn/txn_split.c);
  - 5: not even those fit: the rebuild takes the ordered path.

Crashed after a sample of its writes (EXTREF_CRASH_FULL=1: every write),
as a crash or as a power cut, with ROOM, and replayed by stock
`e2fsck -fy` or by the next extref tool (alternately): the tree is
exactly the planted one or the rebuilt one, stock `e2fsck -fn` is clean,
`fsck.extref -fn` reports exactly the planted problem or nothing, and
both files read back (stock debugfs) as they were.  The rebuilt tree is
checked against the mappings stock debugfs reads (crashlib
.count_violations).
"""

import os
import random
import re
import shutil

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = [pytest.mark.crash,
              pytest.mark.skipif(_NO_FAULTS is not None,
                                 reason=_NO_FAULTS or "")]

FULL = os.environ.get("EXTREF_CRASH_FULL") == "1"
POINT_LIMIT = 1000 if FULL else 18
BS = 1024
NBLOCKS = 6000        # per file: 3,000 shared blocks, 3,000 records
ROOM = 30             # above the commit's fixed part, below the tree
FILES = ["/a", "/b"]


def _write_sources(src):
    rng = random.Random(11)
    a, b = bytearray(), bytearray()
    for i in range(NBLOCKS):
        blk = rng.randbytes(BS)
        a += blk
        b += blk if i % 2 == 0 else rng.randbytes(BS)
    (src / "a").write_bytes(a)
    (src / "b").write_bytes(b)


def _a_leaf(img):
    """The logical block of one leaf of the tree (not the first)."""
    res = crashlib._run([crashlib.debugfs_extref(), "-R", "refcount_tree",
                         str(img)])
    leaves = re.findall(r"^lblk (\d+) .* level 0 ", res.stdout, re.M)
    assert len(leaves) > 40, res.stdout[:2000]
    return int(leaves[len(leaves) // 2])


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """(image with one count raised, records before, records planted,
    files)."""
    work = tmp_path_factory.mktemp("spill")
    src = work / "src"
    src.mkdir()
    _write_sources(src)
    img = work / "rb.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-F", "-b", str(BS),
                 "-d", str(src), "--dedup=block", str(img), "24M"])
    good = crashlib.refcount_records(img)
    assert len(good) == NBLOCKS // 2
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R",
                         f"set_tree_entry {_a_leaf(img)} 3 count 3",
                         str(img)])
    assert res.returncode == 0, helpers.describe(res)
    bad = crashlib.refcount_records(img)
    assert bad != good and len(bad) == len(good)
    files = crashlib.dump_files(img, FILES, work)
    assert files["/a"] == (src / "a").read_bytes()
    assert files["/b"] == (src / "b").read_bytes()
    yield img, good, bad, files
    shutil.rmtree(work, ignore_errors=True)


def fsck_fy(room):
    """fsck.extref -fy seeing at most room blocks of room in the journal
    ("": no limit)."""
    return crashlib.fsck_op(env={"EXTREF_FAULT_TX_ROOM": room})


def test_rebuild_bigger_than_the_room_is_one_commit(planted, tmp_path):
    """The three paths repair alike; the spilling one flushes as often as
    the journaled one (one commit) but writes the new nodes once, the
    ordered one flushes at each of its steps."""
    img0, good, _bad, files = planted
    counts = {}
    for room in ("", str(ROOM), "5"):
        img = tmp_path / f"r{room}.img"
        crashlib.sparse_copy(img0, img)
        counts[room] = crashlib.count(fsck_fy(room), img, tmp_path, 1)
        assert not crashlib.needs_recovery(img)
        assert crashlib.refcount_records(img) == good
        assert crashlib.fsck_problems(img) == ([], 0)
        helpers.e2fsck_fn(img)
        assert not crashlib.count_violations(img, tmp_path, exact=True)
        assert crashlib.dump_files(img, FILES, tmp_path) == files
    whole, spill, ordered = counts[""], counts[str(ROOM)], counts["5"]
    assert spill[1] == whole[1], counts
    # 50 nodes fewer through the journal
    assert spill[0] + 40 < whole[0], counts
    assert ordered[1] > whole[1], counts


@pytest.mark.slow
def test_rebuild_bigger_than_the_room_crash_is_atomic(planted, tmp_path):
    img0, good, bad, files = planted
    planted_lines, st = crashlib.fsck_problems(img0)
    assert planted_lines and st == 4
    seen = set()

    def oracle(img, how):
        probs = []
        recs = crashlib.refcount_records(img)
        seen.add("new" if recs == good else "old" if recs == bad else "?")
        if recs not in (good, bad):
            probs.append("the tree is neither the old nor the new one")
        got, st = crashlib.fsck_problems(img)
        want = ([], 0) if recs == good else (planted_lines, 4)
        if (got, st) != want:
            probs.append(f"fsck.extref -fn: exit {st}, {got}")
        probs += crashlib.checkers_clean(img, fsck=False, tail=400)
        if crashlib.dump_files(img, FILES, tmp_path) != files:
            probs.append("files changed")
        return probs
    crashlib.sweep(img0, fsck_fy(str(ROOM)), oracle, tmp_path, POINT_LIMIT,
                   faults=crashlib.crash_or_powercut(3, 2), count_status=1,
                   e2fsck_worst=3, extref_opens=False).assert_clean()
    # the sample reaches both sides of the commit
    assert seen == {"old", "new"}, seen
