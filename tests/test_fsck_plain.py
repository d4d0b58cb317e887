"""fsck.extref on damaged plain ext2/3/4 images (no shared_blocks, no tree
in inode 5): its result is stock e2fsck's, byte for byte.

Each image is made with stock tools only (mke2fs, debugfs -w, dd) and
damaged one way; a copy goes to stock e2fsck, the original to fsck.extref
in the same mode, both with the same E2FSCK_TIME so that e2fsck's own
writes (the last check time) agree.  The two images must then be equal
and the exits too: fsck.extref never sets shared_blocks on a plain image,
so cross-links (data, group metadata or an extent index block claimed
twice) are e2fsck's to clone, and no tree is written.  The library calls
it writes with (tests/unit/fsck_repairs) refuse a plain image too.
"""
import os
import re
import shutil
import subprocess

import pytest

import helpers

NOW = "1800000000"
ENV = {"E2FSCK_TIME": NOW}


def fsck():
    return helpers.binary("fsck/fsck.extref")


def _write(img, host, name):
    helpers.run(["debugfs", "-w", "-R", f"write {host} {name}", str(img)])


def _extents(img, name):
    """[(level, first physical block)] of `ex NAME`, by stock debugfs."""
    out = helpers.run(["debugfs", "-R", f"ex {name}", str(img)]).stdout
    rows = []
    for line in out.splitlines()[1:]:
        f = line.replace("/", " ").split()
        if len(f) >= 8 and f[0].isdigit():
            phys = [x for x in f[7:] if x.isdigit()]
            rows.append((int(f[0]), int(phys[0])))
    return rows


def _blocks(img, name):
    out = helpers.run(["debugfs", "-R", f"blocks {name}", str(img)]).stdout
    return [int(x) for x in out.split()]


def _plain(tmp_path, *mkfs_opts, size="8M"):
    """A plain image holding files a, b (8 KiB each) and c (20 extents:
    its extent tree has an index level, one leaf block)."""
    img = tmp_path / "plain.img"
    helpers.run(["truncate", "-s", size, str(img)])
    helpers.run(["mke2fs", "-qF", "-b", "1024", *mkfs_opts, str(img)])
    data = tmp_path / "data"
    data.write_bytes(os.urandom(8192))
    frag = tmp_path / "frag"
    frag.write_bytes(b"".join(os.urandom(1024) + bytes(1024)
                              for _ in range(20)))
    _write(img, data, "a")
    _write(img, data, "b")
    _write(img, frag, "c")
    return img


def _group0(img, field):
    """First block of group 0's FIELD ('Inode table', 'Block bitmap')."""
    out = helpers.run(["dumpe2fs", str(img)]).stdout
    for line in out.splitlines():
        line = line.strip()
        if line.startswith(field + " at "):
            return int(line.split()[len(field.split()) + 1].split("-")[0])
    raise AssertionError(f"no {field} in dumpe2fs output")


def _point_extent(img, name, pblk):
    """Make NAME's first (in-inode) extent start at pblk: i_block[5] is
    ee_start_lo of the first extent of an inode of depth 0."""
    helpers.run(["debugfs", "-w", "-R", f"sif {name} block[5] {pblk}",
                 str(img)])


def _point_block(img, name, pblk):
    """A block-mapped (no extents) file's first block becomes pblk."""
    helpers.run(["debugfs", "-w", "-R", f"sif {name} block[0] {pblk}",
                 str(img)])


def _features(img):
    return helpers.dumpe2fs_header(img)["Filesystem features"].split()


def _same_as_e2fsck(img, mode):
    """fsck.extref MODE on img, stock e2fsck MODE on a copy: same exit,
    same bytes, and no shared_blocks."""
    ref = img.with_name("stock.img")
    shutil.copyfile(img, ref)
    stock = helpers.run(["e2fsck", "-f", mode, str(ref)], check=False,
                        env=ENV)
    ours = helpers.run([fsck(), "-f", mode, str(img)], check=False, env=ENV)
    assert ours.returncode == stock.returncode, (
        helpers.describe(stock) + "\n" + helpers.describe(ours))
    assert "not an extref image" in ours.stdout, helpers.describe(ours)
    if mode == "-y":
        assert "shared_blocks" not in _features(img)
    assert helpers.sha256(img) == helpers.sha256(ref), (
        "fsck.extref left other bytes than e2fsck:\n" +
        helpers.describe(stock) + "\n" + helpers.describe(ours))
    ref.unlink()
    return stock.returncode, stock.stdout


def _damage_data(img):
    _point_extent(img, "b", _extents(img, "a")[0][1])


def _damage_itable(img):
    _point_extent(img, "b", _group0(img, "Inode table"))


def _damage_bitmap_block(img):
    _point_extent(img, "b", _group0(img, "Block bitmap"))


def _damage_index(img):
    leaf = [p for lvl, p in _extents(img, "c") if lvl == 0][0]
    _point_extent(img, "b", leaf)


def _damage_freeb(img):
    blk = _blocks(img, "a")[0]
    helpers.run(["debugfs", "-w", "-R", f"freeb {blk} 4", str(img)])


def _damage_setb(img):
    helpers.run(["debugfs", "-w", "-R", "setb 7000 20", str(img)])


def _damage_zap_leaf(img):
    leaf = [p for lvl, p in _extents(img, "c") if lvl == 0][0]
    helpers.run(["debugfs", "-w", "-R", f"zap_block -p 0x55 {leaf}",
                 str(img)])


def _damage_bg_checksum(img):
    """Group 0's descriptor checksum (bg_checksum, offset 0x1e of the
    descriptor in block 2 of a 1 KiB-block image) overwritten raw (debugfs
    set_bg would recompute it)."""
    with open(img, "r+b") as f:
        f.seek(2 * 1024 + 0x1e)
        old = f.read(2)
        f.seek(2 * 1024 + 0x1e)
        f.write(bytes(b ^ 0xff for b in old))


DAMAGE = {
    "data_cross_link": _damage_data,
    "inode_table_cross_link": _damage_itable,
    "bitmap_cross_link": _damage_bitmap_block,
    "index_block_cross_link": _damage_index,
    "blocks_freed": _damage_freeb,
    "blocks_set": _damage_setb,
    "extent_leaf_zapped": _damage_zap_leaf,
    "bad_group_checksum": _damage_bg_checksum,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("mode", ["-n", "-y"])
def test_damaged_ext4_is_e2fsck_s(tmp_path, damage, mode):
    img = _plain(tmp_path, "-t", "ext4")
    DAMAGE[damage](img)
    before = helpers.sha256(img)
    st, out = _same_as_e2fsck(img, mode)
    # e2fsck 1.47.0 exits 0 after a bad descriptor checksum, -n or -y
    assert st != 0 or "Fix?" in out, "the damage was not damage"
    if mode == "-n":
        assert helpers.sha256(img) == before
    else:
        helpers.e2fsck_fn(img)


@pytest.mark.parametrize("fstype", ["ext2", "ext3"])
def test_cross_link_without_extents(tmp_path, fstype):
    """No extent feature: the files are block-mapped; one is made to map
    the other's first block.  No extent-mapped inode 5 appears."""
    img = _plain(tmp_path, "-t", fstype)
    assert "extent" not in _features(img)
    _point_block(img, "b", _blocks(img, "a")[0])
    assert _same_as_e2fsck(img, "-y")[0] == 1
    helpers.e2fsck_fn(img)
    ino5 = helpers.run(["debugfs", "-R", "stat <5>", str(img)]).stdout
    assert "EXTENTS" not in ino5, ino5


def test_bigalloc_cross_link(tmp_path):
    img = _plain(tmp_path, "-t", "ext4", "-O", "bigalloc", "-C", "4096",
                 size="32M")
    _point_extent(img, "b", _extents(img, "a")[0][1])
    _same_as_e2fsck(img, "-y")
    helpers.e2fsck_fn(img)


def test_primary_superblock_zeroed(tmp_path):
    """e2fsck -n checks through a backup superblock; so does
    fsck.extref -n (it used to fail to open the image)."""
    img = _plain(tmp_path, "-t", "ext4", size="20M")   # backups: 3 groups
    with open(img, "r+b") as f:
        f.seek(1024)
        f.write(bytes(1024))
    assert _same_as_e2fsck(img, "-n")[0] == 4
    assert _same_as_e2fsck(img, "-y")[0] == 1
    helpers.e2fsck_fn(img)


def test_extref_image_primary_superblock_zeroed(tmp_path):
    """An extref image whose primary superblock is gone: -n checks the
    counts through the backup as e2fsck -n checks the rest, writes
    nothing; -y lets e2fsck restore the primary, then checks them."""
    img = tmp_path / "x.img"
    helpers.mkfs(img, "20M", "-q", "-b", "1024")
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "write /etc/services s", str(img)])
    with open(img, "r+b") as f:
        f.seek(1024)
        f.write(bytes(1024))
    before = helpers.sha256(img)
    ref = tmp_path / "stock.img"
    shutil.copyfile(img, ref)
    stock = helpers.run(["e2fsck", "-fn", str(ref)], check=False)
    ours = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert ours.returncode == stock.returncode == 4, helpers.describe(ours)
    assert "through the backup at block 8193" in ours.stdout
    assert "while opening" not in ours.stderr, helpers.describe(ours)
    assert helpers.sha256(img) == before
    ours = helpers.run([fsck(), "-fy", str(img)], check=False)
    assert ours.returncode == 1, helpers.describe(ours)
    helpers.e2fsck_fn(img)
    assert "shared_blocks" in _features(img)


def test_extref_image_data_on_an_index_block(tmp_path):
    """In an extref image a file block that is also another file's extent
    index block is not a share (e2fsck, with shared_blocks, says
    nothing): fsck.extref gives the file its own copy (0x0102), after
    which both checkers are clean and the other file reads as before."""
    img = tmp_path / "x.img"
    helpers.mkfs(img, "8M", "-q", "-b", "1024")
    data = tmp_path / "data"
    data.write_bytes(os.urandom(8192))
    frag = tmp_path / "frag"
    frag.write_bytes(b"".join(os.urandom(1024) + bytes(1024)
                              for _ in range(20)))
    _write(img, data, "b")
    _write(img, frag, "c")
    c_before = helpers.run(["debugfs", "-R", "cat c", str(img)],
                           text=False).stdout
    leaf = [p for lvl, p in _extents(img, "c") if lvl == 0][0]
    _point_extent(img, "b", leaf)
    b_now = helpers.run(["debugfs", "-R", "cat b", str(img)],
                        text=False).stdout
    # with shared_blocks e2fsck sees no cross-link (only b's old blocks,
    # now leaked)
    e2 = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert "multiply-claimed" not in e2.stdout
    assert "Block bitmap differences:  -(" in e2.stdout, helpers.describe(e2)
    res = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert res.returncode == 4 and "0x0102" in res.stdout, \
        helpers.describe(res)
    assert "index block" in res.stdout
    res = helpers.run([fsck(), "-fy", str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "give the file its own copy" in res.stdout
    helpers.e2fsck_fn(img)
    res = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert helpers.run(["debugfs", "-R", "cat c", str(img)],
                       text=False).stdout == c_before
    assert helpers.run(["debugfs", "-R", "cat b", str(img)],
                       text=False).stdout == b_now
    assert leaf not in _blocks(img, "b")


def test_shared_blocks_without_extents(tmp_path):
    """shared_blocks set by hand on an ext2 image: no tree can live there
    (inode 5 would be an extent file), so it is no extref image; the
    result is stock e2fsck's and inode 5 stays empty (it used to get an
    extent-mapped tree e2fsck then rejected)."""
    img = _plain(tmp_path, "-t", "ext2")
    _point_block(img, "b", _blocks(img, "a")[0])
    helpers.run(["debugfs", "-w", "-R", "feature shared_blocks", str(img)])
    ref = img.with_name("stock.img")
    shutil.copyfile(img, ref)
    stock = helpers.run(["e2fsck", "-fy", str(ref)], check=False, env=ENV)
    ours = helpers.run([fsck(), "-fy", str(img)], check=False, env=ENV)
    assert ours.returncode == stock.returncode, helpers.describe(ours)
    assert "not an extref image (shared_blocks without the extent " \
        "feature)" in ours.stdout, helpers.describe(ours)
    assert helpers.sha256(img) == helpers.sha256(ref)
    helpers.e2fsck_fn(img)
    ino5 = helpers.run(["debugfs", "-R", "stat <5>", str(img)]).stdout
    assert "Type: bad type" in ino5 or "Mode:  0000" in ino5, ino5


@pytest.mark.parametrize("victim", ["<2>", "<8>"])
def test_extref_image_data_on_a_directory_or_journal(tmp_path, victim):
    """In an extref image a file whose block is the root directory's (or
    the journal's) is not a share (it used to be recorded as one: 0x0304
    'record them as shared'): 0x0102, the file gets its own copy, the
    directory keeps its block (the journal is cleared and made again:
    0x0005); both checkers clean after."""
    img = tmp_path / "x.img"
    helpers.mkfs(img, "8M", "-q", "-b", "1024")
    data = tmp_path / "data"
    data.write_bytes(os.urandom(1024))
    _write(img, data, "b")
    target = _blocks(img, victim)[0]
    _point_extent(img, "b", target)
    helpers.run(["debugfs", "-w", "-R", "sif b block[4] 1", str(img)])
    b_now = helpers.run(["debugfs", "-R", "cat b", str(img)],
                        text=False).stdout
    res = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert res.returncode == 4, helpers.describe(res)
    assert "0x0102" in res.stdout and "0x0304" not in res.stdout, \
        helpers.describe(res)
    res_y = helpers.run([fsck(), "-fy", str(img)], check=False)
    assert res_y.returncode == 1, helpers.describe(res_y)
    helpers.e2fsck_fn(img)
    res = helpers.run([fsck(), "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    if victim == "<8>":
        # a journal whose blocks are not its own is cleared and made
        # again elsewhere (0x0005, as e2fsck treats a bad journal inode):
        # the file keeps the block and its bytes
        assert "0x0005" in res.stdout or "0x0005" in res_y.stdout
    else:
        assert target in _blocks(img, victim)
        assert target not in _blocks(img, "b")
    assert helpers.run(["debugfs", "-R", "cat b", str(img)],
                       text=False).stdout == b_now
    assert "b" in helpers.run(["debugfs", "-R", "ls /", str(img)]).stdout


def _features(img):
    return helpers.dumpe2fs_header(img).get("Filesystem features", "")


def _repairs(call, img):
    return helpers.run([helpers.binary("tests/unit/fsck_repairs"), call,
                        str(img)], check=False)


@pytest.mark.parametrize("call", ["feature", "feature_image"])
def test_library_sets_the_feature_on_extref_images_only(tmp_path, call):
    """The library calls fsck.extref sets shared_blocks with
    (extref_fsck_set_feature, _image; tests/unit/fsck_repairs) refuse a
    plain ext4 or ext2 image, which stays byte for byte as it was, and set
    the feature again on an extref image that lost it (stock dumpe2fs,
    e2fsck -fn clean)."""
    for fstype, why in (("ext4", "No reference-count tree in inode 5"),
                        ("ext2", "lacks the extent feature")):
        img = tmp_path / f"{fstype}.img"
        helpers.run(["truncate", "-s", "32M", str(img)])
        helpers.run(["mke2fs", "-qF", "-t", fstype, str(img)])
        before = img.read_bytes()
        res = _repairs(call, img)
        assert res.returncode == 1 and why in res.stdout, \
            helpers.describe(res)
        assert img.read_bytes() == before, f"{fstype}: the image changed"
    img = tmp_path / "extref.img"
    helpers.mkfs(img, "32M")
    helpers.run(["debugfs", "-w", "-R", "feature -shared_blocks", str(img)])
    assert "shared_blocks" not in _features(img)
    res = _repairs(call, img)
    assert res.returncode == 0 and "ok" in res.stdout, helpers.describe(res)
    assert "shared_blocks" in _features(img)
    helpers.e2fsck_fn(img)


def test_library_journal_clear_only_an_overlapping_journal(tmp_path):
    """extref_fsck_journal_clear (asked to write, answering yes) finds
    nothing on a plain image nor on an extref image whose journal is its
    own, and writes nothing to either; on the journal of
    tests/fsck/f_0005_journal_overlap it clears the journal (stock
    dumpe2fs: no has_journal) and the file that shared its blocks keeps
    its bytes (stock debugfs)."""
    plain = tmp_path / "plain.img"
    helpers.run(["truncate", "-s", "32M", str(plain)])
    helpers.run(["mke2fs", "-qF", "-t", "ext4", str(plain)])
    ours = tmp_path / "extref.img"
    helpers.mkfs(ours, "32M")
    for img in (plain, ours):
        assert "has_journal" in _features(img)
        before = img.read_bytes()
        res = _repairs("journal_clear", img)
        assert res.returncode == 0, helpers.describe(res)
        assert "found 0 cleared 0 nblocks 0" in res.stdout, res.stdout
        assert img.read_bytes() == before
    env = dict(os.environ, MKFS=helpers.binary("mkfs.extref"),
               DEBUGFS=helpers.binary("debugfs.extref"), TMP=str(tmp_path),
               IMG=str(ours))
    cases = helpers.REPO_ROOT / "tests/fsck"
    helpers.run(["sh", str(cases / "build.default")], env=env)
    helpers.run(["sh", str(cases / "f_0005_journal_overlap/corrupt")],
                env=env)
    g = helpers.debugfs_cat(ours, "/g")
    res = _repairs("journal_clear", ours)
    assert res.returncode == 0, helpers.describe(res)
    assert re.search(r"found 1 cleared 1 nblocks [1-9]", res.stdout), \
        res.stdout
    assert "has_journal" not in _features(ours)
    assert helpers.debugfs_cat(ours, "/g") == g
