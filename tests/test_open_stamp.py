"""The tree's stamp: a read-write open skips the full proof of the counts
only when the image is as a proving writer of this library left it
(FORMAT.md section 11, "The stamp").

Each test asks the library how the open trusted the tree
(tests/unit/open_proof: extref_fs_proof), after edits by this library,
by stock debugfs (the outside tools the stamp must see, and one it
documents it cannot), and after a crash; stock e2fsck -fn and the
refusal of a writer are the oracles where counts were made too low.
"""

import subprocess

import pytest

import crashlib
import helpers


def proof(img, *args):
    """How a read-write open that uses the stamp (EXTREF_OPEN_STAMP)
    trusted the tree."""
    tool = helpers.BUILD_DIR / "tests/unit/open_proof"
    res = subprocess.run([str(tool), str(img), *args], capture_output=True,
                         text=True)
    if res.returncode:
        return "refused: " + res.stderr.strip()
    return res.stdout.strip().removeprefix("proof: ")


def xdebugfs(img, *requests):
    return helpers.run([helpers.binary("debugfs.extref"), "-w",
                        "-f", "-", str(img)],
                       input="\n".join(requests) + "\n")


def stock(img, request):
    return helpers.run(["debugfs", "-w", "-R", request, str(img)])


@pytest.fixture
def image(tmp_path):
    """An extref image with /a and its reflink /b, closed by a writer that
    proved the counts: it carries a stamp."""
    data = tmp_path / "data"
    data.write_bytes(bytes(range(256)) * 400)
    img = tmp_path / "img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", str(img), "64M"])
    xdebugfs(img, f"write {data} /a", "reflink /a /b")
    return img


def test_stamp_after_a_clean_session(image, tmp_path):
    assert proof(image) == "stamp"
    assert proof(image, "verify") == "full"
    assert proof(image) == "stamp"
    small = tmp_path / "small"
    small.write_bytes(b"s" * 3000)
    xdebugfs(image, f"write {small} /c", "rm /b")
    assert proof(image) == "stamp"
    helpers.run(["e2fsck", "-fn", str(image)])


def test_verify_proves_in_full_and_leaves_a_stamp(tmp_path):
    """A fresh image carries no stamp: its first writer proves in full;
    --verify proves in full whatever the stamp says, and a session that
    wrote leaves one either way."""
    img = tmp_path / "plain"
    helpers.run([helpers.binary("mkfs.extref"), "-q", str(img), "32M"])
    assert proof(img) == "full"
    helpers.run([helpers.binary("debugfs.extref"), "-w", "--verify", "-R",
                 "mkdir /d", str(img)])
    assert proof(img) == "stamp"


def test_library_default_is_the_full_proof(image):
    """Without EXTREF_OPEN_STAMP (the library's default; the tools pass
    it) an open proves in full (tests/unit/open_proof's "nostamp")."""
    assert proof(image, "nostamp") == "full"


def test_without_a_journal_no_stamp(tmp_path):
    img = tmp_path / "img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-O", "^has_journal",
                 str(img), "32M"])
    xdebugfs(img, "mkdir /d")
    assert proof(img) == "full"
    assert proof(img) == "full"


@pytest.mark.parametrize("edit", [
    "write {small} /new", "rm /a", "mkdir /dir", "freeb {blk}",
    "setb {free}"])
def test_stock_allocation_is_seen(image, tmp_path, edit):
    small = tmp_path / "small"
    small.write_bytes(b"x" * 5000)
    blk = stock(image, "blocks /a").stdout.split()[0]
    free = int(stock(image, "ffb 1 10000").stdout.split()[-1])
    stock(image, edit.format(small=small, blk=blk, free=free))
    assert proof(image) in ("full",) or proof(image).startswith("refused")


def test_stock_freeb_then_write_is_refused(image, tmp_path):
    """The issue's case: a shared block freed by stock debugfs and taken
    by a new file: the open proves in full and refuses, and so does every
    writer; stock e2fsck sees nothing wrong."""
    blk = stock(image, "blocks /a").stdout.split()[0]
    small = tmp_path / "small"
    small.write_bytes(b"c" * 4000)
    stock(image, f"freeb {blk}")
    stock(image, f"write {small} /c")
    assert blk in stock(image, "blocks /c").stdout.split()
    assert "Reference counts disagree" in proof(image)
    res = helpers.run([helpers.binary("debugfs.extref"), "-w",
                       "-R", "rm /b", str(image)], check=False)
    assert res.returncode != 0 and "run fsck.extref -y" in res.stderr


def test_expert_edit_clears_the_stamp(image):
    xdebugfs(image, "sif /a mtime 12345")
    assert proof(image) == "full"
    assert proof(image) == "full"     # a session that wrote nothing
    xdebugfs(image, "mkdir /d")       # a proven one that writes
    assert proof(image) == "stamp"


def test_refused_operation_leaves_the_image(image):
    """A session that writes nothing (an operation refused) leaves the
    image byte for byte as it was, the stamp too."""
    before = image.read_bytes()
    res = helpers.run([helpers.binary("debugfs.extref"), "-w",
                       "-R", "rm /nonexistent", str(image)], check=False)
    assert res.returncode != 0
    assert image.read_bytes() == before


def test_stock_sif_is_not_seen(image):
    """The documented limit: stock set_inode_field leaves the descriptors
    and the superblock as they were, so the stamp still matches; --verify
    (EXTREF_OPEN_VERIFY) proves in full."""
    stock(image, "sif /a mtime 12345")
    assert proof(image) == "stamp"
    assert proof(image, "verify") == "full"


@pytest.mark.skipif(helpers.fault_injection_skip_reason() is not None,
                    reason="needs the test build")
def test_crash_never_leaves_a_stamp_that_lies(image, tmp_path):
    """Killed after any of its writes, a session over a stamped image
    leaves either no matching stamp (its first commit cleared it; its
    writes changed the state) or one over an image the full proof
    accepts too (nothing committed reached the disk)."""
    probe = tmp_path / "probe"
    probe.write_bytes(image.read_bytes())
    request = "reflink /a /e"
    writes, _ = crashlib.count_writes(probe, request, tmp_path)
    seen = set()
    for n in sorted({1, writes // 3, writes // 2, writes - 1}):
        if n < 1:
            continue
        img = tmp_path / f"crash{n}"
        img.write_bytes(image.read_bytes())
        crashlib.run_op(img, request, f"crash={n}")
        got = proof(img)
        if got == "stamp":
            assert proof(img, "verify") == "full", n
        else:
            assert got == "full", (n, got)
        seen.add(got)
    assert "full" in seen
