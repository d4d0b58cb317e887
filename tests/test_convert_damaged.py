"""mkfs.extref --convert refuses an image stock e2fsck -fn calls damaged,
before any write, as --shrink does: the image stays byte-identical.

The damage is made with stock tools (debugfs -w, raw writes) on an image
made by stock mke2fs; stock e2fsck -fn on a copy must see it too.
"""
import os
import shutil

import pytest

import helpers


def _image(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    data = os.urandom(8192)
    (src / "a").write_bytes(data)
    (src / "b").write_bytes(data)
    img = tmp_path / "t.img"
    helpers.run(["mke2fs", "-qF", "-t", "ext4", "-b", "1024", "-d",
                 str(src), str(img), "32M"])
    return img


def _first_block(img, name):
    out = helpers.run(["debugfs", "-R", f"blocks {name}", str(img)]).stdout
    return int(out.split()[0])


def _bg_checksum(img):
    # bg_checksum at 0x1e of group 1's descriptor (64 bytes each, block 2)
    at = 2 * 1024 + 64 + 0x1e
    with open(img, "r+b") as f:
        f.seek(at)
        old = f.read(2)
        f.seek(at)
        f.write(bytes(x ^ 0xff for x in old))


def _resize_inode(img):
    helpers.run(["debugfs", "-w", "-R", "clri <7>", str(img)])


def _cross_link(img):
    helpers.run(["debugfs", "-w", "-R",
                 f"sif b block[5] {_first_block(img, 'a')}", str(img)])


def _freed(img):
    helpers.run(["debugfs", "-w", "-R",
                 f"freeb {_first_block(img, 'a')} 8", str(img)])


DAMAGE = {"bad_group_checksum": _bg_checksum, "resize_inode": _resize_inode,
          "cross_link": _cross_link, "blocks_freed": _freed}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("dedup", ["none", "block"])
def test_convert_refuses_damaged(tmp_path, damage, dedup):
    img = _image(tmp_path)
    DAMAGE[damage](img)
    ref = tmp_path / "stock.img"
    shutil.copyfile(img, ref)
    stock = helpers.run(["e2fsck", "-fn", str(ref)], check=False)
    assert stock.returncode != 0 or "Fix? no" in stock.stdout, \
        helpers.describe(stock)
    before = helpers.sha256(img)
    res = helpers.run([helpers.binary("mkfs.extref"), "--convert",
                       f"--dedup={dedup}", str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "nothing was changed" in res.stderr and str(img) in res.stderr
    assert "converted" not in res.stdout, helpers.describe(res)
    assert helpers.sha256(img) == before


def _journal_write(img, block, data, tmp_path):
    """A committed transaction writing data to block, left unreplayed
    (stock debugfs's journal writer): the image needs recovery."""
    blk = tmp_path / "jblk"
    blk.write_bytes(data)
    helpers.run(["debugfs", "-w", "-f", "-", str(img)],
                input=f"jo\njw -b {block} {blk}\njc\n")
    assert "needs_recovery" in helpers.dumpe2fs_features(img)


def _inode_block(img, ino):
    out = helpers.run(["debugfs", "-R", f"imap <{ino}>", str(img)]).stdout
    return int(out.split("located at block")[1].split(",")[0])


def _damage_in_journal(img, tmp_path):
    # the replay itself writes junk over inode 13's (b's) block
    _journal_write(img, _inode_block(img, 13), b"j" * 1024, tmp_path)


def _damage_then_journal(img, tmp_path):
    # damaged before, plus a harmless transaction to a free block
    _cross_link(img)
    free = 30000
    assert "not in use" in helpers.run(
        ["debugfs", "-R", f"testb {free}", str(img)]).stdout
    _journal_write(img, free, b"k" * 1024, tmp_path)


REPLAYED_DAMAGE = {"in_journal": _damage_in_journal,
                   "before_journal": _damage_then_journal}


@pytest.mark.parametrize("damage", sorted(REPLAYED_DAMAGE))
@pytest.mark.parametrize("dedup", ["none", "block"])
def test_convert_replays_then_refuses_damaged(tmp_path, damage, dedup):
    """A journal that needs recovery is replayed (as e2fsck does), then
    the replayed state is checked: damaged, it is refused, saying what
    the replay changed (not "nothing was changed"), and the image is
    what stock e2fsck's own replay (-E journal_only) makes of it, but
    for the superblock's write statistics."""
    img = _image(tmp_path)
    REPLAYED_DAMAGE[damage](img, tmp_path)
    ref = tmp_path / "stock.img"
    shutil.copyfile(img, ref)
    res = helpers.run(["e2fsck", "-E", "journal_only", "-y", str(ref)],
                      check=False)
    assert "recovering journal" in res.stdout + res.stderr, \
        helpers.describe(res)
    stock = helpers.run(["e2fsck", "-fn", str(ref)], check=False)
    assert stock.returncode != 0, helpers.describe(stock)
    res = helpers.run([helpers.binary("mkfs.extref"), "--convert",
                       f"--dedup={dedup}", str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert f"{img}: recovering journal" in res.stdout, helpers.describe(res)
    assert f"{img}: journal recovered (1 transaction)" in res.stdout
    assert "e2fsck -fn finds it damaged" in res.stderr, helpers.describe(res)
    assert "nothing was changed" not in res.stderr, res.stderr
    assert "the journal was replayed: 1 transaction" in res.stderr, \
        res.stderr
    assert "converted" not in res.stdout, helpers.describe(res)
    assert "needs_recovery" not in helpers.dumpe2fs_features(img)
    assert "shared_blocks" not in helpers.dumpe2fs_features(img)
    got, want = img.read_bytes(), ref.read_bytes()
    assert got[:1024] == want[:1024] and got[2048:] == want[2048:]
    again = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert again.returncode == stock.returncode, helpers.describe(again)


def test_convert_quiet_refusal_still_tells_the_replay(tmp_path):
    img = _image(tmp_path)
    _damage_in_journal(img, tmp_path)
    res = helpers.run([helpers.binary("mkfs.extref"), "--convert", "-q",
                       str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "the journal was replayed: 1 transaction" in res.stderr, \
        res.stderr
    assert "nothing was changed" not in res.stderr, res.stderr
