"""A block shared against the record: said, every owner named, a way out
(issue 23, section 6).

The cross-link is made as the issue found it, with stock tools only:
stock `debugfs -w` frees the first block of /c, which /c /d /e /f share
(count 4), then writes a new file, /intruder, which takes that block.
The block is then mapped 5 times against a record of 4: 0x0301.  The
checks read the result with stock debugfs and stock e2fsck.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

import helpers

CASES = Path(__file__).resolve().parent / "fsck"
SHARERS = ["/c", "/d", "/e", "/f"]


def fsck(img, *opts):
    res = helpers.run([helpers.binary("fsck/fsck.extref"), *opts, str(img)],
                      check=False)
    return res.returncode, res.stdout + res.stderr


def build_default(img, tmp):
    env = dict(os.environ, MKFS=helpers.binary("mkfs.extref"),
               DEBUGFS=helpers.binary("debugfs.extref"), TMP=str(tmp),
               IMG=str(img))
    res = subprocess.run(["sh", str(CASES / "build.default")],
                         capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, helpers.describe(res)


def blocks(img, path):
    return [int(b) for b in helpers.debugfs(img, f"blocks {path}").stdout
            .split()]


def stock(img, req):
    helpers.run(["debugfs", "-w", "-R", req, str(img)])


@pytest.fixture
def crosslinked(tmp_path):
    """/intruder took /c's first block after stock debugfs freed it.  The
    sharers are made older than anything else (crtime 2001) and /g is
    removed first, so that the intruder reuses its lower inode number:
    which owner is newest is its creation time, not its number."""
    img = tmp_path / "x.img"
    build_default(img, tmp_path)
    for p in SHARERS:
        stock(img, f"sif {p} crtime 20010101000000")
    stock(img, "rm /g")
    first = blocks(img, "/c")[0]
    stock(img, f"freeb {first}")
    content = tmp_path / "intruder"
    content.write_bytes(b"".join(b"intruder %06d\n" % i
                                 for i in range(400)))
    stock(img, f"write {content} /intruder")
    assert blocks(img, "/intruder")[0] == first      # the cross-link
    return img, first, content.read_bytes()


def test_crosslink_names_every_owner(crosslinked):
    """-n: 0x0301 says it is a cross-link whose data may be overwritten,
    names all five owners with their paths (the intruder among them; the
    old message cut at four with "..."), offers -E unshare, and the summary
    line is printed without -v.  Nothing changes."""
    img, first, _ = crosslinked
    before = helpers.sha256(img)
    st, out = fsck(img, "-n", "-f")
    assert st == 4, out
    line = next(l for l in out.splitlines() if l.startswith("0x0301"))
    assert "cross-link" in line and "overwritten" in line, line
    assert f"block {first}: recorded 4, mapped 5 times" in line, line
    for p in SHARERS + ["/intruder"]:
        assert re.search(r"\d+ \(%s\)" % re.escape(p), line), (p, line)
    assert "..." not in line and "-E unshare" in line, line
    # the intruder is also a foreign write on shared blocks
    line = next(l for l in out.splitlines() if l.startswith("0x0305"))
    assert re.search(r"\d+ \(/intruder\) maps 1 shared block", line), line
    assert re.search(r"x\.img: \d+ inodes, \d+ extent mappings, .*; "
                     r"2 problems, 0 fixed$", out, re.M), out
    assert helpers.sha256(img) == before


def test_crosslink_unshare_copies_the_newest(crosslinked):
    """-y -E unshare gives the newest owner (the intruder: created last,
    though its inode number is lower) a private copy of what the block
    holds, its own data; the four sharers keep the block at count 4.  A
    second run is clean, stock e2fsck -fn is clean, the intruder reads
    back as written.  The old repair made it a fifth sharer."""
    img, first, content = crosslinked
    st, out = fsck(img, "-y", "-f", "-E", "unshare")
    assert st == 1, out
    assert "(give the newest owners their own copies)" in out, out
    st, out = fsck(img, "-n", "-f")
    assert st == 0, out
    assert "0 problems, 0 fixed" in out, out
    helpers.e2fsck_fn(img)
    assert blocks(img, "/intruder")[0] != first
    for p in SHARERS:
        assert blocks(img, p)[0] == first, p
    assert helpers.debugfs_cat(img, "/intruder") == content
    shared = {helpers.debugfs_cat(img, p) for p in SHARERS}
    assert len(shared) == 1


def test_crosslink_default_raises_count(crosslinked):
    """Without -E unshare, -y still raises the count (nothing is lost that
    is not lost already), and says so."""
    img, first, content = crosslinked
    st, out = fsck(img, "-y", "-f")
    assert st == 1 and "(raise the count)" in out, out
    st, out = fsck(img, "-n", "-f")
    assert st == 0, out
    assert blocks(img, "/intruder")[0] == first


def test_owners_cut_at_four_but_with_v(tmp_path):
    """Other problems name four owners and how many more; -v names all.
    /c has five reflinks here (six owners) and a record raised to 7."""
    img = tmp_path / "m.img"
    build_default(img, tmp_path)
    dbg = [helpers.binary("debugfs.extref"), "-w", "-R"]
    for name in ("/h", "/i"):
        helpers.run(dbg + [f"reflink /c {name}", str(img)])
    root = re.search(r"^header:.* root (\d+) ",
                     helpers.run([helpers.binary("debugfs.extref"), "-R",
                                  "refcount_tree", str(img)]).stdout,
                     re.M).group(1)
    helpers.run(dbg + [f"set_tree_entry {root} 1 count 7", str(img)])
    st, out = fsck(img, "-n", "-f")
    line = next(l for l in out.splitlines() if l.startswith("0x0302"))
    assert "mapped 6 times" in line, line
    assert len(re.findall(r"\d+ \(/\w+\)", line)) == 4, line
    assert "and 2 more (-v names all)" in line, line
    st, out = fsck(img, "-n", "-f", "-v")
    line = next(l for l in out.splitlines() if l.startswith("0x0302"))
    names = re.findall(r"\d+ \((/\w+)\)", line)
    assert sorted(names) == ["/c", "/d", "/e", "/f", "/h", "/i"], line
