"""fsck.extref rebuilds the tree through the tree layer's bulk loader
(libfs/tree/extref_stage.h, tree/stage.c).

Images: mkfs.extref --dedup=block over two files of N one-block pieces
that agree on every other piece, so the shared blocks alternate with
unshared ones and every shared block is a record of its own (N/2
records).  The tree's header is then damaged (one byte: its checksum
fails) and fsck.extref rebuilds it.

Oracles: the records the tree held before the damage (written one insert
at a time by the builder, not by the bulk loader); the mapping counts of
every block as stock debugfs reads the extents (crashlib.count_violations);
stock e2fsck -fn; the node layout a bottom-up load gives (every node full
but the last of each level).
"""

import math
import re
import shutil

import pytest

import crashlib
import helpers

BS = 1024


def build(tmp_path, pieces, name="img"):
    """An image whose tree holds pieces // 2 records; returns (img, recs)."""
    src = tmp_path / (name + ".src")
    src.mkdir()
    x = b"".join(b"X%07d" % i * (BS // 8) for i in range(pieces))
    y = b"".join((b"X%07d" % i if i % 2 == 0 else b"Y%07d" % i) * (BS // 8)
                 for i in range(pieces))
    (src / "x").write_bytes(x)
    (src / "y").write_bytes(y)
    img = tmp_path / (name + ".img")
    helpers.mkfs(img, "32M", "-q", "-b", str(BS), "--dedup=block",
                 "-d", str(src))
    recs = crashlib.refcount_records(img)
    assert len(recs) == pieces // 2, len(recs)
    return img, recs


def damage_header(img):
    """Flip a byte of the tree's header block (inode 5's block 0)."""
    out = helpers.debugfs(img, "bmap <5> 0").stdout.strip()
    pblk = int(out)
    with open(img, "r+b") as f:
        f.seek(pblk * BS + 100)
        b = f.read(1)
        f.seek(pblk * BS + 100)
        f.write(bytes([b[0] ^ 0xff]))


def stats(img):
    out = helpers.run([helpers.binary("debugfs.extref"), "-R", "stats",
                       str(img)]).stdout
    fields = {}
    for key in ("Records", "Depth", "Nodes", "Leaves", "Free nodes",
                "File blocks", "Entries per node"):
        m = re.search(rf"^\s*{key}:\s+(\d+)$", out, re.M)
        assert m, f"no {key} in stats:\n{out}"
        fields[key] = int(m.group(1))
    return fields


def tree_nodes(img):
    """[(level, entries)] of every node, from debugfs.extref refcount_tree
    (which also verifies each block's checksum)."""
    out = helpers.run([helpers.binary("debugfs.extref"), "-R",
                       "refcount_tree", str(img)]).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("header:"):
            assert "csum ok" in line, line
            continue
        m = re.match(r"lblk \d+\s+pblk \d+\s+level (\d+)\s+entries (\d+)",
                     line)
        if m:
            assert "csum ok" in line, line
            rows.append((int(m.group(1)), int(m.group(2))))
    return rows


def assert_repaired(img, recs, workdir):
    r = crashlib.fsck_run(img, "-fn")
    assert r.returncode == 0, helpers.describe(r)
    helpers.e2fsck_fn(img)
    assert crashlib.refcount_records(img) == recs
    assert crashlib.count_violations(img, workdir, exact=True) == []


def test_rebuild_loads_bottom_up(tmp_path):
    """A tree of depth 3 rebuilt: the same records, counts equal to the
    mappings stock debugfs sees, and the layout of a bulk load: each
    level's nodes full but its last, ceil(n / fanout) nodes a level, no
    free node, one file block a node plus the header."""
    img, recs = build(tmp_path, 8000)
    damage_header(img)
    r = crashlib.fsck_run(img, "-fy")
    assert r.returncode & ~1 == 0 and r.returncode & 1, helpers.describe(r)
    assert "0x0003 " in r.stdout, r.stdout
    assert_repaired(img, recs, tmp_path)

    st = stats(img)
    cap = st["Entries per node"]
    per_level, n = [], len(recs)
    while True:
        n = math.ceil(n / cap)
        per_level.append(n)
        if n == 1:
            break
    assert len(per_level) == 3, "the image must give a tree of depth 3"
    assert st["Depth"] == len(per_level)
    assert st["Leaves"] == per_level[0]
    assert st["Nodes"] == sum(per_level)
    assert st["Free nodes"] == 0
    assert st["File blocks"] == sum(per_level) + 1

    nodes = tree_nodes(img)
    assert len(nodes) == sum(per_level)
    below = len(recs)
    for level, count in enumerate(per_level):
        entries = [e for lv, e in nodes if lv == level]
        assert len(entries) == count
        assert sum(entries) == below
        assert all(e == cap for e in entries[:-1]), (level, entries)
        below = count


def test_rebuild_of_an_empty_expectation(tmp_path):
    """No block is shared any more: the rebuild loads nothing and commits
    the empty tree (root 0, one file block)."""
    img, _ = build(tmp_path, 8)
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R", "rm /y",
                 str(img)])
    damage_header(img)
    r = crashlib.fsck_run(img, "-fy")
    assert r.returncode & ~1 == 0, helpers.describe(r)
    assert_repaired(img, [], tmp_path)
    st = stats(img)
    assert (st["Records"], st["Depth"], st["Nodes"], st["File blocks"]) \
        == (0, 0, 0, 1), st


def visible_records(img):
    """The records the tree shows after a crash, or None when it cannot
    be read (inode 5 emptied, not yet formatted)."""
    try:
        return crashlib.refcount_records(img)
    except AssertionError:
        return None


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["crash", "powercut"])
def test_rebuild_crash_leaves_old_or_new(tmp_path, mode):
    """The rebuild stopped after any write (crash=N) or by a power cut
    (powercut=N, held writes applied at random): the tree shows no
    record or all of them, never a part (the header is the commit point),
    and a second fsck.extref -fy repairs the image: -fn and stock e2fsck
    clean, counts equal to the mappings."""
    reason = helpers.fault_injection_skip_reason()
    if reason:
        pytest.skip(reason)
    base, recs = build(tmp_path, 400, "base")
    damage_header(base)
    seen_states = set()

    def oracle(img, how):
        got = visible_records(img)
        if got not in (None, [], recs):
            return [f"a partial tree of {len(got)} records"]
        seen_states.add("none" if got is None else len(got))
        r = crashlib.fsck_run(img, "-fy")
        if r.returncode & 12:
            return [helpers.describe(r)]
        try:
            assert_repaired(img, recs, tmp_path)
        except AssertionError as e:
            return [str(e)]
        return []
    swept = crashlib.sweep(
        base, crashlib.tool_op([helpers.binary("tests/unit/rebuild_fault")]),
        oracle, tmp_path, 60, faults=crashlib.only(mode), replayers=(None,),
        crash_exits=(0, 1), stop_after=1)
    assert crashlib.refcount_records(swept.counted) == recs
    swept.assert_clean(mode)
    if mode == "crash":
        assert len(recs) in seen_states and \
            seen_states & {"none", 0}, seen_states
