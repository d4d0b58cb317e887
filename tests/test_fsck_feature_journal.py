"""fsck.extref sets shared_blocks before stock e2fsck runs, on the
replayed image and through its journal (issue 11; fsck/main.c
set_feature).

Without the feature e2fsck takes every shared block for a cross-link and,
under -y, clones them all.  A journal that needs recovery and holds a
superblock without the feature (written here with stock debugfs's
journal commands: jo, jw, jc) used to undo a feature set straight on the
disk: e2fsck replayed it, then cloned.  Now the journal is replayed
first, the feature set on the replayed image as one transaction, and
e2fsck finds nothing to clone.  Crashed at its writes (fault-injection
builds) and run again, fsck.extref still never lets e2fsck clone.
"""

import re
import shutil

import pytest

import crashlib
import helpers


def _image(work):
    img = work / "j.img"
    src = work / "a"
    src.write_bytes(b"".join(b"%07d\n" % i for i in range(20000)))
    helpers.mkfs(img, "16M")
    helpers.run([crashlib.debugfs_extref(), "-w", "-f", "/dev/stdin",
                 str(img)], input=f"write {src} /a\nreflink /a /b\n")
    return img, src.read_bytes()


def _features(img):
    return helpers.dumpe2fs_header(img)["Filesystem features"].split()


def _clear_feature(img):
    res = helpers.run(["debugfs", "-w", "-R", "feature -shared_blocks",
                       str(img)])
    assert res.returncode == 0
    assert "shared_blocks" not in _features(img)


def _superblock_block(img):
    return 1 if helpers.dumpe2fs_header(img)["Block size"] == "1024" else 0


def _journal_superblock(img, work):
    """Log the superblock as it is (no feature) in a committed journal
    transaction, with stock debugfs: the image then needs recovery."""
    bs = int(helpers.dumpe2fs_header(img)["Block size"])
    blk = _superblock_block(img)
    copy = work / "sb.blk"
    with open(img, "rb") as f:
        f.seek(blk * bs)
        copy.write_bytes(f.read(bs))
    res = helpers.run(["debugfs", "-w", "-f", "/dev/stdin", str(img)],
                      input=f"jo\njw -b {blk} {copy}\njc\n")
    assert res.returncode == 0
    assert "needs_recovery" in _features(img)


def _check_kept(img, records, data, out):
    """Nothing cloned, the sharing and the files as they were, both
    checkers clean, the feature set and the journal empty."""
    assert "ultiply-claimed" not in out, out
    assert crashlib.refcount_records(img) == records
    feats = _features(img)
    assert "shared_blocks" in feats and "needs_recovery" not in feats
    helpers.e2fsck_fn(img)
    res = crashlib.fsck_run(img, "-fn")
    assert res.returncode == 0, helpers.describe(res)
    got = crashlib.dump_files(img, ["/a", "/b"], img.parent)
    assert got == {"/a": data, "/b": data}


@pytest.mark.parametrize("primary", ["unset", "set"])
def test_feature_survives_a_journal_needing_recovery(tmp_path, primary):
    """The journal holds a superblock without the feature; the primary
    lacks it too, or has it (the replay would take it away)."""
    img, data = _image(tmp_path)
    records = crashlib.refcount_records(img)
    assert records and records[0][2] == 2
    _clear_feature(img)
    _journal_superblock(img, tmp_path)
    if primary == "set":
        helpers.run(["debugfs", "-w", "-R", "feature shared_blocks",
                     str(img)])
        assert "shared_blocks" in _features(img)
    res = crashlib.fsck_run(img, "-fy")
    assert res.returncode == 1, helpers.describe(res)
    assert "journal recovered" in res.stdout
    assert re.search(r"^0x0001 shared_blocks feature is not set",
                     res.stdout, re.M), res.stdout
    _check_kept(img, records, data, res.stdout)


def test_feature_with_a_journal_that_cannot_be_replayed(tmp_path):
    """A journal superblock that does not read (a field flipped) fails the
    library's open: the journal is left to e2fsck, which rebuilds it
    rather than replay it, and the feature is written straight; nothing
    is cloned."""
    img, data = _image(tmp_path)
    records = crashlib.refcount_records(img)
    _clear_feature(img)
    _journal_superblock(img, tmp_path)
    jblk = int(helpers.debugfs(img, "bmap <8> 0").stdout)
    bs = int(helpers.dumpe2fs_header(img)["Block size"])
    with open(img, "r+b") as f:
        f.seek(jblk * bs + 12)                # s_blocksize
        f.write(b"\xff\xff\xff\xff")
    res = crashlib.fsck_run(img, "-fy")
    assert res.returncode == 1, helpers.describe(res)
    assert "journal not replayed by fsck.extref" in res.stdout, res.stdout
    assert "Journal superblock is corrupt" in res.stdout, res.stdout
    _check_kept(img, records, data, res.stdout)


_NO_FAULTS = helpers.fault_injection_skip_reason()


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.skipif(_NO_FAULTS is not None, reason=_NO_FAULTS or "")
def test_feature_set_crashed_then_run_again(tmp_path):
    """fsck.extref -fy on an image without the feature, crashed after
    each write of its opens (crash=N: the first N writes of each open
    reach the image) or cut at it, then run again: the feature is set,
    nothing is cloned, the files and their sharing are kept."""
    img0, data = _image(tmp_path)
    records = crashlib.refcount_records(img0)
    _clear_feature(img0)
    out = tmp_path / "count.out"
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    res = crashlib._run([crashlib.fsck_path(), "-fy", str(probe)],
                        env={"EXTREF_FAULT": "count",
                             "EXTREF_FAULT_OUT": str(out)})
    assert res.returncode == 1, helpers.describe(res)
    # the feature's own open, then the check's
    writes = [int(m) for m in re.findall(r"writes=(\d+)", out.read_text())]
    assert len(writes) == 2, writes
    failures = []
    for n in range(1, writes[0] + 2):
        for fault in (f"crash={n}", f"powercut={n},seed={n}"):
            img = tmp_path / "crash.img"
            crashlib.sparse_copy(img0, img)
            crashlib._run([crashlib.fsck_path(), "-fy", "-E", "no_e2fsck",
                           str(img)], env={"EXTREF_FAULT": fault})
            res = crashlib.fsck_run(img, "-fy")
            try:
                assert res.returncode in (0, 1), helpers.describe(res)
                _check_kept(img, records, data, res.stdout)
            except AssertionError as e:
                failures.append(f"{fault}: {str(e)[:300]}")
                shutil.copy(img, tmp_path / f"failed-{len(failures)}.img")
    assert not failures, "\n".join(failures[:4])
