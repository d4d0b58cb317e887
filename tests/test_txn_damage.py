"""A corrupt block met half-way (issue 11): the operation fails, names the
inode and the block, and its transaction is rolled back.

The open's verification checks the reference counts against every
extent mapping, but not the checksums of the files' own blocks (those
are e2fsck's).  A recursive reflink checks every directory and extent
tree of the source before it changes anything (a bad checksum there is
refused up front); with -p it copies each file's extended attributes as
it goes, so an attribute block whose checksum fails is met half-way,
after the files before it were copied.  A clone into a file whose
extent block is damaged, and an rm of a file whose attribute block is,
meet it half-way too (the counts raised, the name removed); a clone from
it and a punch meet it before changing anything.  The corruptions are
made with dd-style writes of the image file, at blocks found by stock
debugfs.

Each test checks: the command fails (exit 1) naming the inode and the
block, every block in use before is byte-identical after (free blocks
and the journal may differ), every file reads as before (stock debugfs),
and both checkers report the planted corruption only: stock e2fsck -fn
exactly one problem, fsck.extref's own passes none.
"""

import hashlib
import re

import pytest

import helpers

NFILES = 60
BAD = 50


def shell(img, *reqs, check=True, verify=False):
    cmd = [helpers.binary("debugfs.extref"), "-w"] + \
        (["--verify"] if verify else [])
    script = img.parent / "cmds"
    script.write_text("\n".join(reqs) + "\n")
    return helpers.run(cmd + ["-f", str(script), str(img)], check=check)


def used_digest(img, bs=1024):
    """sha256 over every block in use (stock dumpe2fs's free lists),
    the journal's blocks left out."""
    out = helpers.run(["dumpe2fs", str(img)], check=False).stdout
    free = set()
    for m in re.finditer(r"Free blocks: ([0-9, -]*)", out):
        for part in filter(None, (p.strip() for p in m.group(1).split(","))):
            a, _, b = part.partition("-")
            free.update(range(int(a), int(b or a) + 1))
    skip = free | helpers.journal_blocks(img)
    h = hashlib.sha256()
    data = img.read_bytes()
    for blk in range(len(data) // bs):
        if blk not in skip:
            h.update(blk.to_bytes(8, "little") + data[blk * bs:(blk + 1) * bs])
    return h.hexdigest()


def files(img, paths):
    return {p: helpers.run(["debugfs", "-R", f"cat {p}", str(img)],
                           text=False, check=False).stdout for p in paths}


def stat_field(img, path, pattern):
    out = helpers.debugfs(img, f"stat {path}").stdout
    m = re.search(pattern, out)
    assert m, out
    return int(m.group(1))


def flip(img, off, n=4):
    """Invert n bytes of the image file at byte offset off (as dd would
    write them)."""
    with open(img, "r+b") as f:
        f.seek(off)
        b = f.read(n)
        f.seek(off)
        f.write(bytes(x ^ 0xFF for x in b))


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """/d with 60 files (1 KiB blocks, a journal); /d/f50 has an extent
    block (seven extents) and a 700-byte attribute (an attribute block);
    /d/s1/s2/s3 holds more files."""
    top = tmp_path_factory.mktemp("damage")
    img = top / "t.img"
    helpers.mkfs(img, "16M", "-q", "-b", "1024")
    reqs = ["mkdir /d", "mkdir /d/s1", "mkdir /d/s1/s2", "mkdir /d/s1/s2/s3"]
    for i in range(NFILES):
        h = top / f"h{i}"
        h.write_bytes(bytes([i + 1]) * (2000 + 37 * i))
        reqs.append(f"write {h} /d/f{i}")
        if i < 5:
            reqs.append(f"write {h} /d/s1/s2/s3/g{i}")
    for k in range(1, 7):
        reqs.append(f"pwrite -S 9 /d/f{BAD} {k * 8192} 1000")
    val = top / "val"
    val.write_bytes(b"v" * 700)
    reqs.append(f"setxattr -f {val} /d/f{BAD} user.big")
    shell(img, *reqs)
    helpers.e2fsck_fn(img)
    return img


PATHS = [f"/d/f{i}" for i in range(NFILES)] + \
    [f"/d/s1/s2/s3/g{i}" for i in range(5)]


def damaged(tree, tmp_path, where):
    img = tmp_path / "t.img"
    img.write_bytes(tree.read_bytes())
    bad = f"/d/f{BAD}"
    ino = stat_field(img, bad, r"Inode: (\d+)")
    if where == "xattr":
        blk = stat_field(img, bad, r"File ACL: (\d+)")
        flip(img, blk * 1024 + 16)            # h_checksum
    elif where == "extent":
        ex = helpers.debugfs(img, f"ex {bad}").stdout
        blk = int(re.search(r"^\s*0/\s*1\s+1/\s*1\s+\d+ -\s+\d+\s+(\d+)",
                            ex, re.M).group(1))
        flip(img, blk * 1024 + 1020)          # the extent tail's checksum
    else:
        ino = stat_field(img, "/d/s1/s2/s3", r"Inode: (\d+)")
        blk = int(helpers.debugfs(img, "bmap /d/s1/s2/s3 0").stdout)
        flip(img, blk * 1024 + 1020)          # the dirent tail's checksum
    return img, ino, blk


def only_the_planted_problem(img, text):
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 4, helpers.describe(res)
    assert text in res.stdout, res.stdout
    assert res.stdout.count("? no") == 1, res.stdout
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", "-E",
                       "no_e2fsck", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)


@pytest.mark.parametrize("where,req,halfway,text", [
    ("xattr", "reflink -r -p /d /copy", True,
     "extended attribute block {blk} passes checks, but checksum"),
    ("extent", "reflink -r /d /copy", False,
     "extent block passes checks, but checksum does not match"),
    ("dir", "reflink -r /d /copy", False,
     "Directory inode {ino}, block #0: directory passes checks but "
     "fails checksum"),
])
def test_damage_met_by_a_recursive_reflink(tree, tmp_path, where, req,
                                           halfway, text):
    img, ino, blk = damaged(tree, tmp_path, where)
    before = used_digest(img)
    want = files(img, PATHS)
    res = shell(img, req, check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert f"inode {ino}, block {blk}: " in res.stderr, res.stderr
    assert "checksum does not match" in res.stderr, res.stderr
    # half-way: copies were made and undone, and it says so; up front:
    # nothing was changed, so there is nothing to roll back
    assert ("rolled back: the image is as it was" in res.stderr) == \
        halfway, res.stderr
    assert used_digest(img) == before
    assert files(img, PATHS) == want
    assert "File not found" in helpers.run(
        ["debugfs", "-R", "stat /copy", str(img)], check=False).stderr
    only_the_planted_problem(img, text.format(ino=ino, blk=blk))
    out = helpers.run(["dumpe2fs", "-h", str(img)]).stdout
    assert "needs_recovery" not in out


@pytest.mark.parametrize("where,req,halfway,text", [
    # the destination's extent block: the counts are raised first
    ("extent", f"clone_range /d/f1 0 /d/f{BAD} 16384 1024", True,
     "extent block passes checks, but checksum does not match"),
    # the source's: met before anything changes
    ("extent", f"clone_range /d/f{BAD} 0 /d/f1 0 1024", False,
     "extent block passes checks, but checksum does not match"),
    # the name is gone, the attribute block is met as the inode is freed
    ("xattr", f"rm /d/f{BAD}", True,
     "extended attribute block {blk} passes checks, but checksum"),
    ("extent", f"punch /d/f{BAD} 8192 1024", False,
     "extent block passes checks, but checksum does not match"),
])
def test_damage_met_by_a_clone_rm_or_punch(tree, tmp_path, where, req,
                                           halfway, text):
    """The same for one-file operations: the error names the inode and
    the block (extref_damage_where), what was changed is rolled back,
    every block in use and every file as before."""
    img, ino, blk = damaged(tree, tmp_path, where)
    before = used_digest(img)
    want = files(img, PATHS)
    # the open trusting the tree's stamp (the default) and proving the
    # counts in full (--verify, which reads every extent tree first, so
    # that the damage is met half-way where the table says)
    for verify in (False, True):
        res = shell(img, req, check=False, verify=verify)
        assert res.returncode == 1, helpers.describe(res)
        assert f"inode {ino}, block {blk}: " in res.stderr, res.stderr
        assert "checksum does not match" in res.stderr, res.stderr
        if verify or not halfway:
            assert ("rolled back: the image is as it was" in
                    res.stderr) == halfway, res.stderr
        assert used_digest(img) == before
        assert files(img, PATHS) == want
    only_the_planted_problem(img, text.format(ino=ino, blk=blk))
    out = helpers.run(["dumpe2fs", "-h", str(img)]).stdout
    assert "needs_recovery" not in out


def test_without_the_damage_the_same_copy_succeeds(tree, tmp_path):
    """The control: the same command on the undamaged image copies the
    tree, attributes included."""
    img = tmp_path / "t.img"
    img.write_bytes(tree.read_bytes())
    res = shell(img, "reflink -r -p /d /copy")
    assert "linked directory tree" in res.stdout
    got = files(img, [p.replace("/d/", "/copy/", 1) for p in PATHS])
    assert list(got.values()) == list(files(img, PATHS).values())
    helpers.e2fsck_fn(img)


@pytest.mark.parametrize("req", [f"clone_range /d/f1 0 /d/f{BAD} 16384 1024",
                                 f"clone_range /d/f{BAD} 0 /d/f1 0 1024",
                                 f"rm /d/f{BAD}",
                                 f"punch /d/f{BAD} 8192 1024"])
def test_without_the_damage_the_same_change_succeeds(tree, tmp_path, req):
    img = tmp_path / "t.img"
    img.write_bytes(tree.read_bytes())
    res = shell(img, req)
    assert "rolled back" not in res.stderr, res.stderr
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", "-E",
                       "no_e2fsck", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
