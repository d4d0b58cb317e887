"""debugfs.extref refcount_tree judges each tree block with the library's
own verifiers (extref_header_verify, extref_node_verify,
extref_free_verify): a block damaged in one field with the expert
commands is named by the check that failed, on the line after the
block's, and the command exits 1; a clean tree gives no such line and
exit 0.  A bad magic number or checksum is shown on the block's own line
("(BAD)", "bad magic", "csum BAD") and not named twice.

Oracles: the damage itself (one field set to a value FORMAT.md forbids),
the library's own refusal to load the tree (the shell's warning names the
same check; fsck.extref -fn names a damaged free block), stock e2fsck -fn (inode 5's data is opaque to it: the image
stays clean), and the image's hash (refcount_tree only reads).
"""

import shutil

import pytest

import helpers

T = 60


def dbx(img, *args, check=True):
    return helpers.run([helpers.binary("debugfs.extref"), *args, str(img)],
                       check=check, timeout=T)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The fsck cases' default image: header, a free block (lblk 1) and
    a single leaf (lblk 2) holding two records."""
    tmp = tmp_path_factory.mktemp("verify")
    img = tmp / "base.img"
    helpers.run(["sh", str(helpers.REPO_ROOT / "tests/fsck/build.default")],
                env={"MKFS": helpers.binary("mkfs.extref"),
                     "DEBUGFS": helpers.binary("debugfs.extref"),
                     "TMP": str(tmp), "IMG": str(img)})
    return img


def tree_lines(img):
    res = dbx(img, "-R", "refcount_tree", check=False)
    return res, res.stdout.splitlines()


def test_clean_tree_has_no_verdict(base):
    res, lines = tree_lines(base)
    assert res.returncode == 0, helpers.describe(res)
    assert [l.split()[:2] for l in lines] == \
        [["header:", "lblk"], ["lblk", "1"], ["lblk", "2"]], res.stdout
    assert "free" in lines[1] and "level 0" in lines[2]
    assert not any(l.startswith("  ") for l in lines), res.stdout


@pytest.mark.parametrize("edit,lblk,check", [
    ("set_tree_node 2 blkno 9", 2, "records another block number"),
    ("set_tree_node 2 nr 0", 2, "impossible entry count"),
    ("set_tree_node 2 nr 300", 2, "impossible entry count"),
    ("set_tree_node 2 level 9", 2, "wrong level"),
    ("set_tree_node 1 next 99", 1, "free list is damaged"),
    ("set_tree_node 1 blkno 2", 1, "free list is damaged"),
    ("set_tree_header version 9", 0, "unknown format version"),
    ("set_tree_header blocksize 4096", 0, "block size differs"),
    ("set_tree_header root 7", 0, "impossible root, depth or size"),
])
def test_damaged_block_named(base, tmp_path, edit, lblk, check):
    img = tmp_path / "t.img"
    shutil.copyfile(base, img)
    dbx(img, "-w", "-R", edit)
    helpers.e2fsck_fn(img)
    before = helpers.sha256(img)
    res, lines = tree_lines(img)
    assert res.returncode == 1, helpers.describe(res)
    at = 0 if lblk == 0 else next(
        i for i, l in enumerate(lines) if l.startswith(f"lblk {lblk} "))
    assert check in lines[at + 1] and lines[at + 1].startswith("  "), \
        helpers.describe(res)
    # Exactly one block is judged bad, and each verdict is named once.
    verdicts = [l for l in lines if l.startswith("  ") and
                not l.startswith("  entry count")]
    assert len(verdicts) == 1, res.stdout
    # The library's own load of the tree names the same check (a read-only
    # load reads no free block: fsck.extref names those).
    fsck = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                       check=False, timeout=T)
    assert check in res.stderr or check in fsck.stdout, \
        helpers.describe(res) + helpers.describe(fsck)
    assert helpers.sha256(img) == before


@pytest.mark.parametrize("edit,shown", [
    ("set_tree_node -n 2 checksum 1", "csum BAD"),
    ("set_tree_node -n 1 checksum 1", "csum BAD"),
    ("set_tree_node 2 magic 7", "bad magic 0x00000007"),
    ("set_tree_header -n checksum 1", "csum BAD"),
    ("set_tree_header magic 7", "magic 0x00000007 (BAD)"),
])
def test_magic_and_checksum_on_the_line(base, tmp_path, edit, shown):
    img = tmp_path / "t.img"
    shutil.copyfile(base, img)
    dbx(img, "-w", "-R", edit)
    res, lines = tree_lines(img)
    assert res.returncode == 1, helpers.describe(res)
    assert sum(shown in l for l in lines) == 1, res.stdout
    assert not any(l.startswith("  ") for l in lines), res.stdout
