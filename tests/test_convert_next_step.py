"""Messages that give the next step (issue 30 section 5): a plain ext4
image opened by a writer (mkfs.extref --update, debugfs.extref -w,
extref-fuse) says to make it an extref image with mkfs.extref --convert; --convert of an extref image says so without claiming to have
put anything back; and the undo file a killed --convert leaves beside the
image is noticed by the next --convert, fsck.extref, debugfs.extref -w and
--update, which say the two ways out and change nothing.

The kill is a real SIGKILL, at the middle write of a --convert --dedup=block
(strace -e inject); the oracles are stock e2fsck -fn, stock debugfs (every
file's bytes), stock e2undo (the first way out) and fsck.extref -fy after
the file is deleted (the second).
"""

import os
import shutil

import pytest

import helpers
from test_convert_adopt import same_files


def _source(root, n=24):
    root.mkdir()
    blobs = [os.urandom(3072) for _ in range(8)]
    files = {}
    for i in range(n):
        files[f"f{i:04d}"] = blobs[i % 8] + bytes([i % 251 + 1])
        (root / f"f{i:04d}").write_bytes(files[f"f{i:04d}"])
    return files


def plain_image(tmp_path, journal=True):
    files = _source(tmp_path / "src")
    img = tmp_path / "t.img"
    helpers.run(["mke2fs", "-qF", "-t", "ext4", "-b", "1024",
                 "-O", "has_journal" if journal else "^has_journal",
                 "-d", str(tmp_path / "src"), str(img), "24M"])
    return img, files


def convert(img, *opts, check=False):
    return helpers.run([helpers.binary("mkfs.extref"), "--convert", *opts,
                        str(img)], check=check)


def test_plain_image_says_convert(tmp_path):
    img, _ = plain_image(tmp_path)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "x").write_bytes(b"x\n")
    before = helpers.sha256(img)
    res = helpers.run([helpers.binary("mkfs.extref"), "--update", "-d",
                       str(tmp_path / "new"), str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert (f"{img}: A plain ext4 image, not an extref image: "
            "mkfs.extref --convert makes it one") in res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == before
    res = helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                       "reflink /f0000 /copy", str(img)], check=False)
    assert "plain ext4 image, not an extref image: mkfs.extref --convert " \
        "makes it one" in res.stderr, helpers.describe(res)
    assert "copy" not in helpers.debugfs(img, "ls /").stdout
    # extref-fuse refuses at its open, before any mount (no /dev/fuse
    # needed), read-write and read-only alike
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    for opts in ([], ["-o", "ro"]):
        res = helpers.run([helpers.binary("fuse/extref-fuse"), str(img),
                           str(mnt), "-f", *opts], check=False, timeout=60)
        assert res.returncode == 1, helpers.describe(res)
        assert (f"{img}: A plain ext4 image, not an extref image: "
                "mkfs.extref --convert makes it one; not mounted") in \
            res.stderr, helpers.describe(res)
    assert helpers.sha256(img) == before and not os.listdir(mnt)
    helpers.e2fsck_fn(img)


def test_convert_twice_says_so(tmp_path):
    img, _ = plain_image(tmp_path)
    convert(img, check=True)
    before = helpers.sha256(img)
    for mode in ("none", "block"):
        res = convert(img, f"--dedup={mode}")
        assert res.returncode == 1, helpers.describe(res)
        assert (f"{img}: Filesystem is already an extref image; nothing "
                "was changed") in res.stderr, helpers.describe(res)
        assert "put back" not in res.stderr and "e2undo" not in res.stderr
        assert helpers.sha256(img) == before


def test_an_undo_file_without_a_record_is_no_leftover(tmp_path):
    """A run killed before its first write leaves an undo file without
    e2undo's header (nothing to put back): the next --convert goes on and
    drops it."""
    img, files = plain_image(tmp_path)
    undo = img.with_name(img.name + ".convert.e2undo")
    undo.write_bytes(b"")
    res = convert(img, check=True)
    assert "converted" in res.stdout, helpers.describe(res)
    assert not undo.exists()
    helpers.e2fsck_fn(img)


def _pwrites(cmd, tmp_path):
    """How many pwrite64 calls cmd makes (strace)."""
    out = tmp_path / "count.strace"
    helpers.run(["strace", "-f", "-qq", "-o", str(out), "-e",
                 "trace=pwrite64", *cmd], env=helpers.no_leak_check_env())
    return sum(1 for line in out.read_text().splitlines()
               if "pwrite64(" in line)


@pytest.fixture
def killed(tmp_path):
    """A --convert --dedup=block SIGKILLed at its middle write: the image,
    its files, its bytes before, and the undo file left."""
    if not shutil.which("strace"):
        pytest.skip("strace not installed")
    img, files = plain_image(tmp_path)
    before = helpers.sha256(img)
    spare = tmp_path / "spare.img"
    shutil.copyfile(img, spare)
    cmd = [helpers.binary("mkfs.extref"), "-q", "--convert",
           "--dedup=block"]
    n = _pwrites([*cmd, str(spare)], tmp_path)
    assert n > 20, n
    res = helpers.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e",
                       "trace=pwrite64", "-e",
                       f"inject=pwrite64:signal=KILL:when={n // 2}",
                       *cmd, str(img)], check=False,
                      env=helpers.no_leak_check_env())
    assert res.returncode != 0, helpers.describe(res)
    undo = img.with_name(img.name + ".convert.e2undo")
    assert undo.exists() and undo.read_bytes()[:8] == b"E2UNDO02"
    assert helpers.sha256(img) != before
    return img, files, before, undo


def test_leftover_is_said_and_nothing_changes(killed, tmp_path):
    img, files, _, undo = killed
    left = helpers.sha256(img)
    saved = helpers.sha256(undo)
    said = f"{undo} is left from an interrupted mkfs.extref --convert"
    res = convert(img, "--dedup=block")
    assert res.returncode == 1, helpers.describe(res)
    assert said in res.stderr and f"'e2undo {undo} {img}'" in \
        res.stderr and "nothing was changed" in res.stderr, \
        helpers.describe(res)
    fsck = helpers.binary("fsck/fsck.extref")
    res = helpers.run([fsck, "-fy", str(img)], check=False)
    assert res.returncode == 8 and said in res.stderr, helpers.describe(res)
    res = helpers.run([fsck, "-fn", str(img)], check=False)
    assert said in res.stdout, helpers.describe(res)
    res = helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                       "stats", str(img)], check=False)
    assert said in res.stderr and "not opened for writing" in res.stderr, \
        helpers.describe(res)
    (tmp_path / "new").mkdir()
    res = helpers.run([helpers.binary("mkfs.extref"), "--update", "-d",
                       str(tmp_path / "new"), str(img)], check=False)
    assert res.returncode == 1 and said in res.stderr and \
        "nothing was changed" in res.stderr, helpers.describe(res)
    assert helpers.sha256(img) == left and helpers.sha256(undo) == saved


def test_leftover_put_back_with_e2undo(killed):
    """The first way out: stock e2undo (-f when it refuses the newer
    superblock), e2fsck -fy as it asks: the files as before, a plain
    image again that --convert converts once the file is deleted."""
    img, files, _, undo = killed
    res = helpers.run(["e2undo", str(undo), str(img)], check=False)
    if "superblock doesn't match" in res.stdout + res.stderr:
        helpers.run(["e2undo", "-f", str(undo), str(img)], check=False)
    helpers.run(["e2fsck", "-fy", str(img)], check=False)
    helpers.e2fsck_fn(img)
    assert "shared_blocks" not in helpers.dumpe2fs_features(img)
    same_files(img, files)
    os.unlink(undo)
    res = convert(img, "--dedup=block", check=True)
    assert "converted" in res.stdout
    helpers.e2fsck_fn(img)


def test_leftover_deleted_and_repaired(killed):
    """The second way out: the file deleted, fsck.extref -fy replays the
    journal and repairs; both checkers clean, every file's bytes kept."""
    img, files, _, undo = killed
    os.unlink(undo)
    fsck = helpers.binary("fsck/fsck.extref")
    res = helpers.run([fsck, "-fy", str(img)], check=False)
    assert res.returncode in (0, 1), helpers.describe(res)
    helpers.e2fsck_fn(img)
    res = helpers.run([fsck, "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    same_files(img, files)
