"""Every write verifies what it touches (issue 29, section 1): the
filesystem's system zone (libfs/txn/zone.c), as the kernel's
block_validity keeps it, checked whatever the tree's stamp says.

Each test damages an image with stock tools (debugfs -w sif / set_bg,
dd) in a way the stamp cannot see (tests/unit/open_proof still says
"stamp": the default open would trust the image), then runs a default
writer (debugfs.extref -w, mkfs.extref --update, mkfs.extref -d of a
source image).  The oracles: the writer exits non-zero naming the
problem, the image is byte-identical (sha256 before and after), and
stock e2fsck -fn says what it said before.

Classes (one test each, some over several targets):
  * data written into metadata: a file's extent moved onto the inode
    table, the superblock and descriptors, a bitmap, the journal, a
    block of the tree's file (inode 5);
  * metadata freed: rm and --update of such a file;
  * a block freed twice: the bitmap zeroed by dd (no metadata_csum: the
    stamp binds the bitmap there, so the default open refuses; an open
    that trusts the tree, tests/unit/trusted_op, meets the zone), rm;
  * the journal trusted: inode 8's extent moved onto a reflinked file's
    blocks or onto the inode table;
  * allocation trusted: the bitmap zeroed by dd (as above), a write, a
    mkdir, a pwrite in place; the tree's
    blocks freed by stock freeb, a write (also with --verify);
  * descriptors that alias: set_bg points group 1's block bitmap at
    group 0's;
  * an image source whose file maps its own inode table.
"""

import re
import subprocess

import pytest

import helpers

DATA_C = bytes(range(256)) * 80          # 20480 bytes: 5 blocks of 4 KiB
DATA_D = b"d" * 9000


def xdebugfs(img, *requests, check=True):
    return helpers.run([helpers.binary("debugfs.extref"), "-w",
                        "-f", "-", str(img)],
                       input="\n".join(requests) + "\n", check=check)


def stock(img, request):
    return helpers.run(["debugfs", "-w", "-R", request, str(img)])


def proof(img):
    """How a default (stamped) read-write open trusts the tree."""
    tool = helpers.BUILD_DIR / "tests/unit/open_proof"
    res = subprocess.run([str(tool), str(img)], capture_output=True,
                         text=True)
    return res.stdout.strip().removeprefix("proof: ") if not res.returncode \
        else "refused: " + res.stderr.strip()


def e2fsck_status(img):
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    return res.returncode, res.stdout


def extents(img, spec):
    """[(lblk, pblk, len)] of a file, by stock debugfs."""
    out = helpers.run(["debugfs", "-R", f"dump_extents {spec}",
                       str(img)]).stdout
    res = []
    for m in re.finditer(r"(\d+) - +(\d+) +(\d+) - +(\d+) +(\d+)", out):
        res.append((int(m.group(1)), int(m.group(3)), int(m.group(5))))
    return res


def group0(img):
    """Group 0's metadata, by stock dumpe2fs."""
    out = helpers.run(["dumpe2fs", str(img)], check=False).stdout
    g = out[out.index("Group 0:"):]
    return {
        "block_bitmap": int(re.search(r"Block bitmap at (\d+)", g).group(1)),
        "inode_bitmap": int(re.search(r"Inode bitmap at (\d+)", g).group(1)),
        "inode_table": int(re.search(r"Inode table at (\d+)", g).group(1)),
    }


def tree_blocks(img):
    """The blocks of inode 5, the tree's file, by stock debugfs."""
    return [int(x) for x in helpers.run(
        ["debugfs", "-R", "blocks <5>", str(img)]).stdout.split()
        if x.isdigit()]


def zero_bitmap_but_tree(img):
    """Group 0's block bitmap zeroed by dd but for inode 5's blocks (a
    tree block the bitmap calls free is refused at the open, before the
    checks these tests are about: test_allocation_never_a_tree_block)."""
    tree = tree_blocks(img)
    bits = bytearray(4096)
    for b in tree:
        assert b < 4096 * 8, b
        bits[b // 8] |= 1 << (b % 8)
    with open(img, "r+b") as f:
        f.seek(group0(img)["block_bitmap"] * 4096)
        f.write(bytes(bits))


def make_image(tmp_path, *opts, size="8M"):
    """An extref image with /c (5 blocks), /d and a reflink /c2 of /c,
    closed by a proving writer: the next default open uses the stamp."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "c").write_bytes(DATA_C)
    (src / "d").write_bytes(DATA_D)
    img = tmp_path / "img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", *opts, "-d", str(src),
                 str(img), size])
    xdebugfs(img, "reflink /c /c2", "mkdir /x")
    assert proof(img) == "stamp"
    return img


def refused(img, run, pattern):
    """run() must fail naming the problem (pattern), leaving the image
    byte-identical and stock e2fsck -fn as it was."""
    before = helpers.sha256(img)
    fsck_before = e2fsck_status(img)
    res = run()
    assert res.returncode != 0, helpers.describe(res)
    assert re.search(pattern, res.stderr + res.stdout), helpers.describe(res)
    assert helpers.sha256(img) == before
    assert e2fsck_status(img) == fsck_before
    return res


ZONE_MAP = r"extent maps the filesystem's own metadata"


@pytest.mark.parametrize("target", ["superblock", "descriptors",
                                    "block_bitmap", "inode_table",
                                    "journal", "tree"])
def test_data_into_metadata(tmp_path, target):
    img = make_image(tmp_path)
    g = group0(img)
    blk = {"superblock": 0, "descriptors": 1,
           "block_bitmap": g["block_bitmap"],
           "inode_table": g["inode_table"],
           "journal": sorted(helpers.journal_blocks(img))[40],
           "tree": min(tree_blocks(img))}[target]
    # /d's one extent (i_block[5]: its start) moved onto the target
    stock(img, f"sif /d block[5] {blk}")
    assert extents(img, "/d")[0][1] == blk
    assert proof(img) == "stamp"        # the stamp cannot see it
    for req in ("pwrite /d 0 1024", "truncate /d 100", "punch /d 0 1",
                "reflink /d /d2", "clone_range /c 0 /d 0 4096"):
        refused(img, lambda: xdebugfs(img, req, check=False), ZONE_MAP)


def test_metadata_not_freed(tmp_path):
    img = make_image(tmp_path)
    stock(img, f"sif /d block[5] {group0(img)['inode_table']}")
    refused(img, lambda: xdebugfs(img, "rm /d", check=False), ZONE_MAP)
    # --update replacing it (a new /d in the source) frees the old one
    src2 = tmp_path / "src2"
    src2.mkdir()
    (src2 / "c").write_bytes(DATA_C)
    (src2 / "d").write_bytes(b"new" * 5000)
    refused(img, lambda: helpers.run(
        [helpers.binary("mkfs.extref"), "--update", "-d", str(src2),
         str(img)], check=False), ZONE_MAP)


UNTRUSTED = r"Reference counts disagree with the extent mappings"


def trusted(img, *args):
    """One operation through an open that skips the proof of the counts
    (EXTREF_OPEN_TRUSTED, tests/unit/trusted_op): only the operation's
    own checks and the zone's stand."""
    return helpers.run([helpers.binary("tests/unit/trusted_op"), str(img),
                        *args], check=False)


def zeroed_without_csum(tmp_path):
    """A bitmap zeroed by dd where no descriptor holds its checksum (no
    metadata_csum): the stamp binds the bitmap's contents there, so the
    default open proves the counts in full and refuses (the files' blocks
    are free in the bitmap: 0x0103)."""
    img = make_image(tmp_path, "-O", "^metadata_csum")
    zero_bitmap_but_tree(img)
    assert proof(img).startswith("refused: "), proof(img)
    refused(img, lambda: xdebugfs(img, "rm /d", check=False), UNTRUSTED)
    return img


def test_block_already_free(tmp_path):
    """The bitmap says /d's blocks are free: rm must not free them
    again, even through an open that trusts the tree."""
    img = zeroed_without_csum(tmp_path)
    refused(img, lambda: trusted(img, "rm", "/", "d"),
            r"already free in the block bitmap|the block bitmap calls free")


def test_allocation_never_metadata(tmp_path):
    img = zeroed_without_csum(tmp_path)
    pattern = r"block bitmap marks the filesystem's own metadata"
    refused(img, lambda: xdebugfs(img, "mkdir /m", check=False), UNTRUSTED)
    for req in (("write", "/", "n", "10000"), ("mkdir", "/", "m")):
        refused(img, lambda: trusted(img, *req), pattern)
    # a write in place into /c meets its own blocks free first
    refused(img, lambda: trusted(img, "pwrite", "/c", "0", "100"),
            r"the block bitmap calls free")


@pytest.mark.parametrize("verify", [False, True])
def test_allocation_never_a_tree_block(tmp_path, verify):
    """A block of inode 5 (the tree's file) marked free by stock freeb:
    the next allocation must not take it (the stamp sees the freeb and
    the open proves the counts in full, which does not look at the
    bitmap's view of inode 5)."""
    img = make_image(tmp_path)
    tree = tree_blocks(img)
    assert tree
    for b in tree:
        stock(img, f"freeb {b}")
    new = tmp_path / "new"
    new.write_bytes(b"n" * 40000)
    args = ["--verify"] if verify else []
    refused(img, lambda: helpers.run(
        [helpers.binary("debugfs.extref"), "-w", *args, "-R",
         f"write {new} /n", str(img)], check=False),
        r"a block of the reference-count tree, free|not the tree's own")


@pytest.mark.parametrize("onto", ["reflinked", "inode_table"])
def test_journal_checked_at_attach(tmp_path, onto):
    img = make_image(tmp_path)
    # the journal's second extent (i_block[8]: its start), moved
    ext = extents(img, "<8>")
    assert len(ext) >= 2, ext
    blk = extents(img, "/c")[0][1] if onto == "reflinked" \
        else group0(img)["inode_table"]
    stock(img, f"sif <8> block[8] {blk}")
    assert extents(img, "<8>")[1][1] == blk
    refused(img, lambda: xdebugfs(img, "mkdir /y", check=False),
            r"journal inode's blocks are also used")


def test_descriptors_that_alias(tmp_path):
    img = make_image(tmp_path, "-b", "1024", "-O", "^metadata_csum",
                     size="32M")
    out = helpers.run(["dumpe2fs", str(img)], check=False).stdout
    bb0 = int(re.search(r"Group 0:.*?Block bitmap at (\d+)", out,
                        re.S).group(1))
    stock(img, f"set_bg 1 block_bitmap {bb0}")
    refused(img, lambda: xdebugfs(img, "mkdir /y", check=False),
            r"[Cc]orrupt group descriptor: bad block for block bitmap")


def test_image_source_mapping_its_metadata(tmp_path):
    """mkfs.extref -d SOURCE.img: a source file whose extent covers the
    source's own inode table is refused, not copied as data."""
    img = make_image(tmp_path)
    stock(img, f"sif /d block[5] {group0(img)['inode_table']}")
    before = helpers.sha256(img)
    out = tmp_path / "out.img"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(img),
                       str(out)], check=False)
    assert res.returncode != 0, helpers.describe(res)
    assert "maps blocks outside its filesystem's data" in res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == before
