"""mkfs.extref --convert --dedup=block is one transaction of the image
file: a run that fails after it started writing leaves the image byte for
byte as it was (saved through e2fsprogs' undo io manager, put back with
stock e2undo), a run that fails before writing says so, and either way a
second --convert then converts it.

The failures are made with EXTREF_FAULT_NOMEM=N (the N-th array growth
fails: test builds only), swept from the first growth to the end of the
run, on images with and without a journal.  Before this, a failure left
the feature and the bitmap rolled back but a tree in inode 5, and the
next --convert refused ("Inode 5 already holds data").
"""
import os

import pytest

import helpers

needs_faults = pytest.mark.skipif(
    helpers.fault_injection_skip_reason() is not None,
    reason=str(helpers.fault_injection_skip_reason()))


JOURNAL = {
    "none": ["-O", "^has_journal"],
    "journal": ["-O", "has_journal"],
    # the smallest journal and an inode table block per inode: the
    # sharing commits in several transactions
    "split": ["-J", "size=1", "-I", "1024", "-N", "2048"],
}


def _image(tmp_path, journal):
    src = tmp_path / "src"
    src.mkdir()
    blobs = [os.urandom(3072) for _ in range(8)]
    nfiles = 800 if journal == "split" else 24
    for i in range(nfiles):
        (src / f"f{i:04d}").write_bytes(blobs[i % 8] + bytes([i % 251]))
    img = tmp_path / "t.img"
    helpers.run(["mke2fs", "-qF", "-t", "ext4", "-b", "1024",
                 *JOURNAL[journal], "-d", str(src), str(img), "24M"])
    return img


def _convert(img, env=None):
    return helpers.run([helpers.binary("mkfs.extref"), "-q", "--convert",
                        "--dedup=block", str(img)], check=False, env=env)


@needs_faults
@pytest.mark.parametrize("journal", sorted(JOURNAL))
def test_failed_convert_leaves_the_image_as_it_was(tmp_path, journal):
    img = _image(tmp_path, journal)
    undo = img.with_name(img.name + ".convert.e2undo")
    before = helpers.sha256(img)
    put_back = 0
    for n in sorted({int(1.4 ** k) for k in range(1, 60)}):
        res = _convert(img, env={"EXTREF_FAULT_NOMEM": n})
        if res.returncode == 0:
            break
        assert res.returncode == 1, helpers.describe(res)
        assert "converted to an extref image" not in res.stdout
        assert helpers.sha256(img) == before, (
            f"growth {n} failed and left the image changed:\n" +
            helpers.describe(res))
        assert not undo.exists(), helpers.describe(res)
        put_back += "put back as it was (e2undo)" in res.stderr
    else:
        pytest.fail("the conversion never got through")
    # a failure once the image is open is put back by stock e2undo (the
    # undo file holds at least the superblock's block, written back as
    # it was when the undo io manager starts)
    assert put_back
    # the run that got through converted; a clean second image too
    assert "shared_blocks" in helpers.dumpe2fs_features(img)
    assert not undo.exists()
    helpers.e2fsck_fn(img)
    fres = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn",
                        str(img)], check=False)
    assert fres.returncode == 0, helpers.describe(fres)


@pytest.mark.parametrize("dedup", ["none", "block"])
def test_full_image_is_left_as_it_was(tmp_path, dedup):
    """No free block for the tree: the conversion fails and the image
    stays byte for byte as it was (no fault injection needed)."""
    img = tmp_path / "full.img"
    helpers.run(["mke2fs", "-qF", "-t", "ext4", "-b", "1024", "-O",
                 "^has_journal", str(img), "2M"])
    big = tmp_path / "big"
    big.write_bytes(os.urandom(3 << 20))
    helpers.run(["debugfs", "-w", "-R", f"write {big} big", str(img)])
    assert helpers.dumpe2fs_header(img)["Free blocks"] == "0"
    helpers.e2fsck_fn(img)
    before = helpers.sha256(img)
    res = _convert_mode(img, dedup)
    assert res.returncode == 1, helpers.describe(res)
    assert "not converted" in res.stderr, helpers.describe(res)
    assert helpers.sha256(img) == before
    assert not img.with_name(img.name + ".convert.e2undo").exists()


def _convert_mode(img, dedup):
    return helpers.run([helpers.binary("mkfs.extref"), "-q", "--convert",
                        f"--dedup={dedup}", str(img)], check=False)
