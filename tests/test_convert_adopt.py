"""mkfs.extref --convert adopts the images Android's build makes (issue 30
section 4): e2fsdroid shares identical blocks between files and sets the
shared_blocks ro-compat feature, but writes no reference-count tree.

The image is made here as e2fsdroid leaves it, with stock tools only: a
plain ext4 image from stock mke2fs -d, then the extents of files b and e
pointed at file a's identical blocks with stock debugfs (sif), their own
blocks freed (freeb; the group's and the superblock's free counts set to
match), and shared_blocks set.  Stock e2fsck -fn accepts it first.  After
--convert: stock debugfs reads every file's bytes and still maps b and e
onto a's blocks, a read-only kernel mount reads them too, the tree counts
those blocks three times (debugfs.extref refcount), fsck.extref -n and
e2fsck -fn are clean, and a copy-on-write through the adopted tree
(unshare) leaves a's bytes alone.  Android's sparse format goes to a raw
image and back with simg2img and img2simg (the README's recipe).
"""

import os
import random
import re
import shutil

import pytest

import helpers

BS = 4096
NBLK = 10       # blocks of a, b and e


def _data(rnd, n):
    return bytes(rnd.randrange(1, 256) for _ in range(n))


def _source(root, seed=3):
    rnd = random.Random(seed)
    root.mkdir()
    a = _data(rnd, NBLK * BS)
    files = {"a": a, "b": a, "e": a, "h": a, "c": _data(rnd, 3 * BS + 77)}
    f = _data(rnd, 4 * BS)
    files["f"], files["g"] = f, f      # identical, left apart (--dedup)
    files["one"] = _data(rnd, BS)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return files


def _blocks(img, path):
    return [int(b) for b in helpers.debugfs(img, f"blocks {path}")
            .stdout.split()]


def _debugfs_w(img, *requests):
    script = "".join(r + "\n" for r in requests)
    res = helpers.run(["debugfs", "-w", "-f", "-", str(img)], input=script)
    assert "rror" not in res.stderr.replace("debugfs 1", ""), \
        helpers.describe(res)
    return res


def _free_counts(img):
    """{group: free blocks} and the superblock's free blocks (dumpe2fs)."""
    out = helpers.run(["dumpe2fs", str(img)]).stdout
    groups = {int(g): int(n) for g, n in
              re.findall(r"^Group (\d+):.*?\n\s+(\d+) free blocks", out,
                         re.M | re.S)}
    return groups, int(helpers.dumpe2fs_header(img)["Free blocks"])


def _contiguous(blocks):
    return blocks == list(range(blocks[0], blocks[0] + len(blocks)))


def point_at(img, path, target):
    """path's one extent made to name target's first block (stock debugfs:
    i_block[5] is the first extent's ee_start_lo), its own blocks freed
    (freeb) and counted free in their groups and the superblock."""
    own = _blocks(img, path)
    assert _contiguous(own), own
    groups, free = _free_counts(img)
    bpg = int(helpers.dumpe2fs_header(img)["Blocks per group"])
    fixes = []
    for g in sorted({b // bpg for b in own}):
        n = groups[g] + sum(1 for b in own if b // bpg == g)
        fixes += [f"set_bg {g} free_blocks_count {n}",
                  f"set_bg {g} checksum calc"]
    _debugfs_w(img, f"sif {path} block[5] {target[0]}",
               f"freeb {own[0]} {len(own)}", *fixes,
               f"ssv free_blocks_count {free + len(own)}")


def droid_image(tmp_path, journal=True):
    """An image as e2fsdroid leaves it: two copies of a (b and e, or h
    where mke2fs split one in two extents) share a's blocks, the third
    keeps its own; shared_blocks set, inode 5 untouched."""
    files = _source(tmp_path / "src")
    img = tmp_path / "droid.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", str(BS),
                 "-O", "has_journal" if journal else "^has_journal",
                 "-d", str(tmp_path / "src"), str(img), "16M"])
    a = _blocks(img, "/a")
    assert len(a) == NBLK and _contiguous(a), a
    sharers = [p for p in ("/b", "/e", "/h") if _contiguous(_blocks(img, p))]
    assert len(sharers) >= 2, "mke2fs split the copies of a"
    sharers = sharers[:2]
    for p in sharers:
        point_at(img, p, a)
    _debugfs_w(img, "feature shared_blocks")
    assert all(_blocks(img, p) == a for p in sharers)
    assert "shared_blocks" in helpers.dumpe2fs_features(img)
    helpers.e2fsck_fn(img)
    return img, files, a, sharers


def fsck_fn(img):
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    return res


def convert(img, *opts, check=True):
    return helpers.run([helpers.binary("mkfs.extref"), "--convert", *opts,
                        str(img)], check=check)


def same_files(img, files):
    for name, data in files.items():
        assert helpers.debugfs_cat(img, f"/{name}") == data, name


def refcount(img):
    """{start: (length, count)} of the tree's records (debugfs.extref)."""
    out = helpers.run([helpers.binary("debugfs.extref"), "-R", "refcount",
                       str(img)]).stdout
    return {int(s): (int(n), int(c)) for s, n, c in
            re.findall(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$", out, re.M)}


@pytest.mark.parametrize("journal", [True, False], ids=["journal", "none"])
def test_adopt_keeps_the_sharing(tmp_path, loop_mount, journal):
    img, files, a, sh = droid_image(tmp_path, journal)
    before = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn",
                          str(img)], check=False)
    assert "0x0002" in before.stdout, helpers.describe(before)
    res = convert(img)
    assert "converted to an extref image (adopted: the blocks its files " \
        "share kept shared)" in res.stdout, helpers.describe(res)
    assert not img.with_name(img.name + ".convert.e2undo").exists()
    # the sharing kept: stock debugfs maps both copies on a's blocks,
    # the tree counts them three times
    assert all(_blocks(img, p) == a for p in sh)
    assert refcount(img) == {a[0]: (NBLK, 3)}
    helpers.e2fsck_fn(img)
    out = fsck_fn(img).stdout
    assert f"{NBLK} shared blocks in 1 records; 0 problems" in out, out
    same_files(img, files)
    mnt, _ = loop_mount(img)
    for name, data in files.items():
        assert (mnt / name).read_bytes() == data, name


def test_adopted_tree_works(tmp_path):
    """A copy-on-write through the adopted tree: one copy gets its own
    blocks, a and the other keep theirs, the count drops to two."""
    img, files, a, sh = droid_image(tmp_path)
    convert(img)
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 f"unshare {sh[0]}", str(img)])
    assert not set(_blocks(img, sh[0])) & set(a)
    assert _blocks(img, sh[1]) == a
    assert refcount(img) == {a[0]: (NBLK, 2)}
    same_files(img, files)
    helpers.e2fsck_fn(img)
    fsck_fn(img)


def test_adopt_then_dedupe(tmp_path):
    """--dedup=block after the adoption shares what e2fsdroid left apart
    (f and g), and keeps what it shared."""
    img, files, a, sh = droid_image(tmp_path)
    res = convert(img, "--dedup=block")
    assert "(adopted: " in res.stdout, helpers.describe(res)
    assert _blocks(img, "/f") == _blocks(img, "/g")
    assert all(_blocks(img, p) == a for p in sh)
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    same_files(img, files)


def test_adopt_refuses_more_than_a_missing_tree(tmp_path):
    """A file that shares the root directory's block (which e2fsck lets
    pass under shared_blocks, and the checker calls 0x0102) is not
    adopted: refused before any write, the image as it was."""
    img, files, a, sh = droid_image(tmp_path)
    point_at(img, "/one", _blocks(img, "/"))
    helpers.e2fsck_fn(img)
    before = helpers.sha256(img)
    res = convert(img, check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "more wrong than the missing tree" in res.stderr and \
        "nothing was changed" in res.stderr, helpers.describe(res)
    assert "put back" not in res.stderr
    assert helpers.sha256(img) == before


def test_update_says_to_adopt(tmp_path):
    """A writer on such an image says the next step: --convert."""
    img, files, a, sh = droid_image(tmp_path)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "x").write_bytes(b"x\n")
    before = helpers.sha256(img)
    res = helpers.run([helpers.binary("mkfs.extref"), "--update", "-d",
                       str(tmp_path / "new"), str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "mkfs.extref --convert adopts the image" in res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == before


needs_sparse = pytest.mark.skipif(
    not (shutil.which("simg2img") and shutil.which("img2simg")),
    reason="simg2img/img2simg not installed (android-sdk-libsparse-utils)")


@needs_sparse
def test_android_sparse_round_trip(tmp_path):
    """The README's recipe: a sparse system.img to raw (simg2img),
    adopted, and back (img2simg); the raw image read back from the
    sparse one is the adopted image byte for byte."""
    img, files, a, sh = droid_image(tmp_path)
    sparse = tmp_path / "system.img"
    helpers.run(["img2simg", str(img), str(sparse)])
    raw = tmp_path / "raw.img"
    helpers.run(["simg2img", str(sparse), str(raw)])
    assert helpers.sha256(raw) == helpers.sha256(img)
    convert(raw)
    helpers.run(["img2simg", str(raw), str(sparse)])
    back = tmp_path / "back.img"
    helpers.run(["simg2img", str(sparse), str(back)])
    assert os.path.getsize(back) == os.path.getsize(raw)
    assert helpers.sha256(back) == helpers.sha256(raw)
    helpers.e2fsck_fn(back)
    fsck_fn(back)
    same_files(back, files)
