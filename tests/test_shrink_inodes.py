"""mkfs.extref --convert --shrink of images that keep several groups:
the copy (extref_build_shrink: a fresh -d IMAGE build) has the inodes
per group a fresh build would have, and numbers the inodes afresh.

The sources are made as users make them:
- "spread": an ext4 image populated through the kernel (a read-write
  loop mount and cp -a), whose allocator spreads top-level directories
  over the groups, so inode numbers run up to the last group;
- "tight": mke2fs -d with few inodes per group (-N), fewer than the
  groups that stay could hold.

Oracles: stock e2fsck -fn, fsck.extref -fn, a read-only kernel mount
compared with the source byte for byte, stock debugfs for inode numbers,
and a fresh mkfs.extref -d build of the same tree for the sizes.
"""
import os
import random

import pytest

import helpers
from test_convert_shrink import (BS, EPOCH, compare_with_source, convert,
                                 fsck_fn, header, make_tree, mappings,
                                 sharing)

# about a minute: run by bench/long_tests.sh, not by make check
pytestmark = pytest.mark.long

GROUP = 32768 * BS          # a group of 4 KiB blocks: 128 MiB


def add_files(src, seed=5):
    """About 1,000 small files in four top-level directories, and
    140 MiB in large ones: the image keeps two groups."""
    rnd = random.Random(seed)
    for d in range(4):
        p = src / f"many{d}"
        p.mkdir()
        for i in range(250):
            (p / f"f{i}").write_bytes(rnd.randbytes(600 + i))
    big = src / "big"
    big.mkdir()
    for i in range(35):
        (big / f"b{i}").write_bytes(rnd.randbytes(4 << 20))
    return src


def plain_image(img, size, *opts):
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", str(BS),
                 "-J", "size=4", *opts, str(img), size],
                env={"E2FSPROGS_FAKE_TIME": EPOCH})


@pytest.fixture(scope="module")
def spread(tmp_path_factory):
    """(source tree, image populated through the kernel)."""
    helpers.require_loop()
    d = tmp_path_factory.mktemp("shrink-spread")
    src = add_files(make_tree(d / "src"))
    img = d / "spread.img"
    plain_image(img, "512M")
    with helpers.loop_mount(img, d / "mnt", options="rw"):
        helpers.run(["cp", "-a", f"{src}/.", str(d / "mnt")])
    return src, img


@pytest.fixture(scope="module", params=["flex_bg", "^flex_bg"])
def tight(request, tmp_path_factory):
    """With flex_bg the new tables go anywhere below the new end (as a
    rule where the old ones were); without it each must lie in its own
    group (the kernel and e2fsck refuse it elsewhere)."""
    d = tmp_path_factory.mktemp("shrink-tight")
    src = add_files(make_tree(d / "src"))
    img = d / "tight.img"
    plain_image(img, "512M", "-N", "1216", "-O", request.param, "-d",
                str(src))
    return src, img, request.param == "flex_bg"


def copy(img, tmp_path, name="t.img"):
    out = tmp_path / name
    helpers.run(["cp", "--sparse=always", str(img), str(out)])
    return out


def inode_numbers(img, src):
    """{path: inode number} of every entry, read with stock debugfs."""
    nums = {}
    for dirpath, dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for name in dirs + files:
            p = "/" + os.path.normpath(os.path.join(rel, name))
            out = helpers.debugfs(img, f"stat {p}").stdout
            nums[p] = int(out.split("Inode:", 1)[1].split()[0])
    return nums


def fresh_build(src, tmp_path):
    fresh = tmp_path / "fresh.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(src),
                 "--dedup=block", str(fresh)],
                env={"SOURCE_DATE_EPOCH": EPOCH})
    return header(fresh)


def check_as_fresh(img, src, tmp_path):
    """The shrunk image is a fresh build's size, with its inode count."""
    hs, hf = header(img), fresh_build(src, tmp_path)
    assert hs["Block count"] > GROUP // BS, "one group: proves nothing"
    assert hs["Inode count"] == hf["Inode count"], (hs, hf)
    extra_gdt = hs["Reserved GDT blocks"] - hf["Reserved GDT blocks"]
    few = max(16, hf["Block count"] // 100)
    assert -few <= hs["Block count"] - hf["Block count"] <= \
        extra_gdt + few, (hs, hf)
    assert os.path.getsize(img) == hs["Block count"] * BS


def check_sound(img, src, loop_mount):
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)
    ss, _ = sharing(mappings(img, src))
    assert any(("late/z1", 0) in s for s in ss), "z1 and z2 no longer share"


def test_spread_inodes_are_renumbered(spread, tmp_path, loop_mount):
    """Inodes past the groups that stay take free numbers below; every
    directory entry follows (stock debugfs and the kernel find every
    file, hard links still one inode), checksums too (e2fsck -fn)."""
    src, base = spread
    img = copy(base, tmp_path)
    before = inode_numbers(img, src)
    assert max(before.values()) > 8192, "the kernel spread nothing"
    res = convert(img, "--shrink")
    assert "shrunk from 131072 to" in res.stdout, res.stdout
    after = inode_numbers(img, src)
    moved = [p for p in before if before[p] != after[p]]
    assert moved
    limit = header(img)["Inode count"]
    assert max(after.values()) <= limit
    assert after["/late/z1"] == after["/late/z1_hard"]
    check_sound(img, src, loop_mount)
    check_as_fresh(img, src, tmp_path)


def test_tight_inodes_get_a_larger_table(tight, tmp_path, loop_mount):
    """Fewer inodes per group than a fresh build has: the copy has a
    fresh build's table, and its size, with flex_bg or without."""
    src, base, _ = tight
    img = copy(base, tmp_path)
    ipg_before = int(helpers.dumpe2fs_header(img)["Inodes per group"])
    convert(img, "--shrink")
    ipg = int(helpers.dumpe2fs_header(img)["Inodes per group"])
    check_sound(img, src, loop_mount)
    assert ipg > ipg_before, (ipg, ipg_before)
    check_as_fresh(img, src, tmp_path)


_sha = helpers.sha256


def test_refuses_what_renumbering_cannot_follow(tmp_path):
    """stable_inodes (encryption tied to inode numbers, which the copy
    changes): refused before anything is written, the image byte for
    byte as it was."""
    src = make_tree(tmp_path / "src")
    img = tmp_path / "t.img"
    plain_image(img, "64M", "-O", "stable_inodes", "-d", str(src))
    before = _sha(img)
    res = convert(img, "--shrink", check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "stable_inodes" in res.stderr and \
        "nothing was changed" in res.stderr, res.stderr
    assert _sha(img) == before


@pytest.fixture(scope="module")
def big_journal(tmp_path_factory):
    """mke2fs's own journal for 256 MiB (8 MiB), twice a build's."""
    d = tmp_path_factory.mktemp("shrink-journal")
    src = make_tree(d / "src")
    img = d / "j.img"
    plain_image(img, "256M", "-J", "size=8", "-d", str(src))
    return src, img


def test_journal_cut_to_a_builds(big_journal, tmp_path, loop_mount):
    """The journal is made again at a fresh build's size (4 MiB): stock
    e2fsck and the kernel accept it, and a transaction goes through it."""
    src, base = big_journal
    img = copy(base, tmp_path)
    convert(img, "--shrink")
    h = helpers.dumpe2fs_header(img)
    assert int(h["Total journal blocks"]) == (4 << 20) // BS, h
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "reflink /late/z1 /z1_copy", str(img)])
    check_sound(img, src, loop_mount)


def test_inline_directories_renumbered(tmp_path, loop_mount):
    """inline_data: small directories live in their inode, ".." as a
    number in i_block; populated through the kernel so that they sit
    past the group that stays, they are renumbered with their entries."""
    helpers.require_loop()
    src = make_tree(tmp_path / "src")
    img = tmp_path / "inline.img"
    plain_image(img, "256M", "-O", "inline_data")
    with helpers.loop_mount(img, tmp_path / "fill", options="rw"):
        helpers.run(["cp", "-a", f"{src}/.", str(tmp_path / "fill")])
    before = inode_numbers(img, src)
    inline = [p for p in before if "Size of inline data" in
              helpers.debugfs(img, f"stat {p}").stdout]
    assert any(before[p] > 8192 for p in inline), (inline, before)
    convert(img, "--shrink")
    after = inode_numbers(img, src)
    assert any(before[p] != after[p] for p in inline)
    check_sound(img, src, loop_mount)


def small_files(src, n, seed, big=0):
    rnd = random.Random(seed)
    src.mkdir()
    for d in range(max(1, n // 1000)):
        p = src / f"d{d}"
        p.mkdir()
        for i in range(min(n, 1000)):
            (p / f"f{i}").write_bytes(rnd.randbytes(rnd.randint(0, 200)))
    if big:
        (src / "big").write_bytes(rnd.randbytes(big))
    return src


def same_tree(mnt, src):
    for dirpath, dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        assert sorted(os.listdir(mnt / rel)) == sorted(dirs + files) or \
            rel == "." and sorted(os.listdir(mnt)) == \
            sorted(dirs + files + ["lost+found"]), rel
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as a:
                assert a.read() == (mnt / rel / name).read_bytes(), name


def test_cut_groups_tables_stay_out_of_the_way(tmp_path, loop_mount):
    """2 KiB blocks, 20,000 tiny files (inline_data) and 48 MiB: the
    inodes per group grow (2048 to some 7000) and the image is cut (the
    image's measure counts a block for each inline file, which the copy
    writes as a build does)."""
    src = small_files(tmp_path / "src", 20000, 7, big=48 << 20)
    img = tmp_path / "t.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "2048", "-O",
                 "inline_data", "-d", str(src), str(img), "1G"])
    ipg = int(helpers.dumpe2fs_header(img)["Inodes per group"])
    res = convert(img, "--shrink")
    h = helpers.dumpe2fs_header(img)
    assert int(h["Inodes per group"]) > ipg
    # tiny files take a block each, as in any build (48 MiB + 20,000
    # blocks + the inode tables and the journal)
    assert int(h["Block count"]) * 2048 < 110 << 20, h
    assert "shrunk from" in res.stdout
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    same_tree(mnt, src)


def test_1k_image_with_a_resize_inode_is_cut(tmp_path, loop_mount):
    """1 KiB blocks and a resize inode (mke2fs's default below 512 MiB),
    25 groups: cut to a fresh build's size, with a fresh build's reserved
    GDT blocks."""
    src = small_files(tmp_path / "src", 400, 8, big=20 << 20)
    img = tmp_path / "t.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-d",
                 str(src), str(img), "200M"])
    assert "resize_inode" in helpers.dumpe2fs_header(img)[
        "Filesystem features"]
    before = header(img)
    convert(img, "--shrink")
    h = header(img)
    assert h["Block count"] < before["Block count"] // 4, (h, before)
    assert h["Reserved GDT blocks"] < before["Reserved GDT blocks"]
    assert not [p for p in os.listdir(tmp_path) if ".shrink-" in p]
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    same_tree(mnt, src)
