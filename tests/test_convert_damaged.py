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
