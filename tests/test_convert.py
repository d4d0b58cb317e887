"""mkfs.extref --convert: an ext4 image made by stock mke2fs -d becomes an
extref image in place, and --dedup shares the identical data it holds.

Oracles: stock mke2fs builds the image, stock e2fsck -fn and debugfs read
it, a read-only loop mount of the kernel compares every file with the
source tree, and the freed block count is computed from the source data.
"""

import hashlib
import os
import random
import re
import filecmp

import pytest

import helpers


def source_tree(root, bs, seed=7):
    """Files with duplicates of every kind; no zero blocks (mke2fs -d
    would leave them as holes)."""
    rnd = random.Random(seed)

    def data(n):
        return bytes(rnd.randrange(1, 256) for _ in range(n))

    root.mkdir()
    (root / "sub").mkdir()
    a = data(37 * bs + 123)
    (root / "a").write_bytes(a)
    (root / "a_copy").write_bytes(a)                  # identical file
    (root / "sub" / "a_again").write_bytes(a)         # and once more
    blk = data(bs)
    # identical blocks at different aligned offsets of different files
    (root / "b").write_bytes(data(3 * bs) + blk + data(2 * bs))
    (root / "c").write_bytes(blk + data(5 * bs))
    # a block that differs from blk in one byte: must stay apart
    near = bytearray(blk)
    near[100] ^= 0x01
    (root / "d").write_bytes(bytes(near) + data(bs))
    # a file that repeats its own blocks
    rep = data(bs)
    (root / "e").write_bytes(rep + data(bs) + rep + rep)
    (root / "small").write_bytes(b"hello\n")
    os.symlink("a", root / "link")
    return root


def whole_blocks(root, bs):
    """Every whole block (inside the size) of every regular file."""
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                continue
            b = open(p, "rb").read()
            out += [b[i:i + bs] for i in range(0, len(b) - bs + 1, bs)]
    return out


def used_blocks(img):
    h = helpers.dumpe2fs_header(img)
    return int(h["Block count"]) - int(h["Free blocks"])


def tree_blocks(img):
    out = helpers.debugfs(img, "stat <5>").stdout
    m = re.search(r"Blockcount: (\d+)", out)
    bs = int(helpers.dumpe2fs_header(img)["Block size"])
    return int(m.group(1)) * 512 // bs


def mke2fs_d(img, src, bs):
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", str(bs),
                 "-d", str(src), str(img), "32M"])


def convert(img, *opts, check=True):
    return helpers.run([helpers.binary("mkfs.extref"), "--convert", *opts,
                        str(img)], check=check)


def same_tree(mnt, src):
    for dirpath, dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for f in files:
            a, b = os.path.join(dirpath, f), mnt / rel / f
            if os.path.islink(a):
                assert os.readlink(b) == os.readlink(a)
            else:
                assert filecmp.cmp(a, b, shallow=False), f"{rel}/{f}"


@pytest.mark.parametrize("bs", [1024, 4096])
@pytest.mark.parametrize("mode", ["none", "file", "block"])
def test_convert_and_dedupe(tmp_path, loop_mount, bs, mode):
    src = source_tree(tmp_path / "src", bs)
    img = tmp_path / "t.img"
    mke2fs_d(img, src, bs)
    used0 = used_blocks(img)
    res = convert(img, f"--dedup={mode}")
    assert "converted" in res.stdout
    assert "shared_blocks" in helpers.dumpe2fs_features(img)
    helpers.e2fsck_fn(img)
    fres = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", "-f",
                        str(img)], check=False)
    assert fres.returncode == 0, helpers.describe(fres)
    mnt, _ = loop_mount(img)
    same_tree(mnt, src)

    saved = used0 + tree_blocks(img) - used_blocks(img)
    blocks = whole_blocks(src, bs)
    if mode == "none":
        assert saved == 0
    elif mode == "block":
        # exactly the duplicate whole blocks are gone, and the partial
        # last blocks of the two copies of "a" (identical files share
        # everything: block mode runs a file pass first)
        assert saved == len(blocks) - len(set(blocks)) + 2, res.stdout
        assert re.search(r"saved: +[\d.]+ MiB", res.stdout)
    else:
        # the two copies of "a" (whole blocks and tail) are gone
        a_blocks = -(-(37 * bs + 123) // bs)
        assert saved == 2 * a_blocks, res.stdout


def test_refusals_leave_the_image_alone(tmp_path):
    src = source_tree(tmp_path / "src", 1024)
    cases = {}
    img = tmp_path / "twice.img"
    mke2fs_d(img, src, 1024)
    convert(img)
    cases[img] = "already an extref image"
    img = tmp_path / "bigalloc.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-O", "bigalloc",
                 "-C", "16384", str(img), "64M"])
    cases[img] = "bigalloc"
    img = tmp_path / "ino5.img"
    mke2fs_d(img, src, 1024)
    helpers.run(["debugfs", "-w", "-R", "sif <5> size 4096", str(img)])
    cases[img] = "Inode 5 already holds data"
    for img, msg in cases.items():
        before = helpers.sha256(img)
        res = convert(img, "--dedup=block", check=False)
        assert res.returncode == 1, helpers.describe(res)
        assert msg in res.stderr and str(img) in res.stderr, \
            helpers.describe(res)
        # refused before any write: nothing to put back, none claimed
        assert "nothing was changed" in res.stderr and \
            "put back" not in res.stderr, helpers.describe(res)
        assert helpers.sha256(img) == before, img


def test_dedup_needs_convert(tmp_path):
    res = helpers.run([helpers.binary("mkfs.extref"), "--dedup=block",
                       str(tmp_path / "x.img"), "16M"], check=False)
    assert res.returncode == 1 and "--convert" in res.stderr
    assert not (tmp_path / "x.img").exists()
