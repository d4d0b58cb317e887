"""The reference-count tree: model test, structural checks, bad headers.

The model test (tests/unit/tree_model) drives the library's raise/lower
operations against an array of expected counts.  The corruption tests edit
single fields of the tree's blocks in an image (located with stock debugfs,
checksums recomputed in Python where the test wants to get past the
checksum) and assert which check the library reports.
"""

import re
import struct
import subprocess

import pytest

import helpers
from crc32c import crc32c_le

NODE_HDR = struct.Struct("<IHHIIQII")       # struct extref_disk_node
REC = struct.Struct("<QII")                 # struct extref_disk_rec / key
NODE_CSUM_OFF = 0x1C


def unit(name):
    return helpers.binary(f"tests/unit/{name}")


def make_image(tmp_path, size="64M", *opts):
    img = tmp_path / "tree.img"
    helpers.mkfs(img, size, "-q", *opts)
    return img


def run_model(img, *args, timeout=900):
    res = helpers.run([unit("tree_model"), str(img), *map(str, args)],
                      check=False, timeout=timeout)
    assert res.returncode == 0, helpers.describe(res)
    assert "ok" in res.stdout.splitlines()[-1], helpers.describe(res)
    return res


def tree_check(img):
    return helpers.run([unit("tree_check"), str(img)], check=False)


@pytest.mark.parametrize("bs,fanout,seed,ops", [
    (4096, 0, 1, 200000),       # full-size nodes: shallow tree
    (1024, 0, 2, 50000),        # 62 entries a node
    (4096, 6, 3, 50000),        # tiny nodes: deep tree, many splits/merges
    (1024, 8, 4, 30000),        # small nodes on small blocks
])
def test_model(tmp_path, bs, fanout, seed, ops):
    img = make_image(tmp_path, "64M", "-b", str(bs))
    res = run_model(img, "-n", ops, "-s", seed, "-f", fanout, "-b", 500,
                    "-r", 10, "-c", 3)
    # Both cycles drained to an empty tree without growing the file.
    drained = re.findall(r"cycle (\d+) drained: file (\d+) blocks", res.stdout)
    assert len(drained) == 3, res.stdout
    helpers.e2fsck_fn(img)
    assert tree_check(img).returncode == 0


def test_model_reaches_depth(tmp_path):
    """With 6 entries a node the model builds a tree several levels deep."""
    img = make_image(tmp_path)
    res = run_model(img, "-n", 20000, "-f", 6, "-c", 1, "-k")
    depth = int(re.search(r"depth (\d+)", res.stdout).group(1))
    assert depth >= 5, res.stdout
    assert tree_check(img).returncode == 0, tree_check(img).stdout
    helpers.e2fsck_fn(img)


# ----- locating and editing the tree's blocks -----

class Tree:
    """The tree of an image as stock debugfs shows it, editable in place."""

    def __init__(self, img, tmp_path):
        self.img = img
        hdr = helpers.dumpe2fs_header(img)
        self.bs = int(hdr["Block size"])
        self.seed = helpers.csum_seed(img, hdr)
        data, self.hdr = helpers.read_tree_header(img, tmp_path)
        assert self.hdr["magic"] == helpers.EXTREF_HDR_MAGIC

    def pblk(self, lblk):
        res = helpers.debugfs(self.img, f"bmap <5> {lblk}")
        return int(res.stdout.strip())

    def read(self, lblk):
        with open(self.img, "rb") as f:
            f.seek(self.pblk(lblk) * self.bs)
            return bytearray(f.read(self.bs))

    def write(self, lblk, block, fix_csum=True):
        if fix_csum:
            if lblk == 0:
                csum = crc32c_le(self.seed, bytes(block[:0x7C]))
                struct.pack_into("<I", block, 0x7C, csum)
            else:
                struct.pack_into("<I", block, NODE_CSUM_OFF, 0)
                struct.pack_into("<I", block, NODE_CSUM_OFF,
                                 crc32c_le(self.seed, bytes(block)))
        with open(self.img, "r+b") as f:
            f.seek(self.pblk(lblk) * self.bs)
            f.write(block)

    @staticmethod
    def node(block):
        magic, level, nr, blkno, nxt, gen, _, csum = NODE_HDR.unpack_from(block)
        ents = [REC.unpack_from(block, NODE_HDR.size + i * REC.size)
                for i in range(nr)]
        return level, nr, ents

    def leftmost_leaf(self):
        lblk = self.hdr["root"]
        while True:
            level, nr, ents = self.node(self.read(lblk))
            if level == 0:
                return lblk
            lblk = ents[0][1]


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    """An image whose tree has thousands of records in 6-entry nodes."""
    d = tmp_path_factory.mktemp("populated")
    img = d / "tree.img"
    helpers.mkfs(img, "64M", "-q", "-b", "4096")
    run_model(img, "-n", 6000, "-f", 6, "-c", 1, "-k", "-s", 9)
    assert tree_check(img).returncode == 0
    return img


@pytest.fixture
def tree(populated, tmp_path):
    img = tmp_path / "copy.img"
    subprocess.run(["cp", "--sparse=always", str(populated), str(img)],
                   check=True)
    return Tree(img, tmp_path)


def expect(img, message, opens=False):
    res = tree_check(img)
    assert res.returncode == 1, helpers.describe(res)
    assert message in res.stdout, helpers.describe(res)
    if not opens:
        assert "open ro: ok" not in res.stdout, helpers.describe(res)
    # The ext4 part is untouched: stock e2fsck still passes.
    helpers.e2fsck_fn(img)
    return res.stdout


def test_intact_tree_checks_clean(tree):
    res = tree_check(tree.img)
    assert res.returncode == 0, helpers.describe(res)
    assert "open rw: ok" in res.stdout


def test_header_magic(tree):
    b = tree.read(0)
    b[0] ^= 0xFF
    tree.write(0, b)
    expect(tree.img, "bad magic number")


def test_header_checksum(tree):
    b = tree.read(0)
    b[0x48] ^= 0x01                        # a reserved byte
    tree.write(0, b, fix_csum=False)
    expect(tree.img, "header checksum does not match")


def test_header_unknown_version(tree):
    b = tree.read(0)
    struct.pack_into("<H", b, 0x04, 2)
    tree.write(0, b)
    expect(tree.img, "unknown format version")


def test_header_unknown_incompat(tree):
    b = tree.read(0)
    struct.pack_into("<I", b, 0x10, 0x80000000)
    tree.write(0, b)
    expect(tree.img, "unknown incompatible features")


def test_header_unknown_ro_compat_is_read_only(tree):
    b = tree.read(0)
    struct.pack_into("<I", b, 0x0C, 0x1)
    tree.write(0, b)
    res = tree_check(tree.img)
    assert "open ro: ok" in res.stdout, helpers.describe(res)
    assert "open rw: Reference-count tree has unknown read-only features" \
        in res.stdout, helpers.describe(res)


def test_header_other_uuid(tree):
    b = tree.read(0)
    b[0x18] ^= 0xFF
    tree.write(0, b)
    expect(tree.img, "belongs to another filesystem")


def test_header_record_count(tree):
    b = tree.read(0)
    n = struct.unpack_from("<Q", b, 0x30)[0]
    struct.pack_into("<Q", b, 0x30, n + 1)
    tree.write(0, b)
    expect(tree.img, "header record count is wrong", opens=True)


def test_node_magic(tree):
    b = tree.read(tree.hdr["root"])
    b[0] ^= 0xFF
    tree.write(tree.hdr["root"], b)
    expect(tree.img, "node has a bad magic number")


def test_node_checksum(tree):
    leaf = tree.leftmost_leaf()
    b = tree.read(leaf)
    b[NODE_HDR.size] ^= 0x01
    tree.write(leaf, b, fix_csum=False)
    expect(tree.img, "node checksum does not match", opens=True)


def test_node_own_block_number(tree):
    leaf = tree.leftmost_leaf()
    b = tree.read(leaf)
    struct.pack_into("<I", b, 0x08, leaf + 1)
    tree.write(leaf, b)
    expect(tree.img, "node records another block number", opens=True)


def test_node_level(tree):
    root = tree.hdr["root"]
    b = tree.read(root)
    struct.pack_into("<H", b, 0x04, struct.unpack_from("<H", b, 4)[0] + 1)
    tree.write(root, b)
    expect(tree.img, "node has the wrong level")


def test_record_count_below_two(tree):
    leaf = tree.leftmost_leaf()
    b = tree.read(leaf)
    struct.pack_into("<I", b, NODE_HDR.size + 12, 1)
    tree.write(leaf, b)
    expect(tree.img, "record has a count below 2", opens=True)


def test_record_zero_length(tree):
    leaf = tree.leftmost_leaf()
    b = tree.read(leaf)
    struct.pack_into("<I", b, NODE_HDR.size + 8, 0)
    tree.write(leaf, b)
    expect(tree.img, "zero length or runs past the filesystem", opens=True)


def test_records_out_of_order(tree):
    leaf = tree.leftmost_leaf()
    b = tree.read(leaf)
    level, nr, ents = tree.node(b)
    assert nr >= 2
    # Second record overlaps the first.
    struct.pack_into("<Q", b, NODE_HDR.size + REC.size, ents[0][0])
    tree.write(leaf, b)
    expect(tree.img, "out of order or overlap", opens=True)


def test_records_not_merged(tree):
    leaf = tree.leftmost_leaf()
    b = tree.read(leaf)
    level, nr, ents = tree.node(b)
    assert nr >= 2
    start0, len0, count0 = ents[0]
    struct.pack_into("<QII", b, NODE_HDR.size + REC.size,
                     start0 + len0, ents[1][1], count0)
    tree.write(leaf, b)
    expect(tree.img, "equal counts are not merged", opens=True)


def test_key_outside_parent_range(tree):
    root = tree.hdr["root"]
    b = tree.read(root)
    level, nr, ents = tree.node(b)
    assert level >= 1 and nr >= 2
    # The second child's key no longer equals its first record's start.
    struct.pack_into("<Q", b, NODE_HDR.size + REC.size, ents[1][0] - 1)
    tree.write(root, b)
    expect(tree.img, "outside its parent's key range", opens=True)


def test_free_list_damaged(tree):
    b = tree.read(0)
    count = struct.unpack_from("<I", b, 0x3C)[0]
    assert count >= 1, "the populated tree has free nodes"
    nblocks = struct.unpack_from("<I", b, 0x2C)[0]
    assert count + 1 < nblocks
    struct.pack_into("<I", b, 0x3C, count + 1)
    tree.write(0, b)
    expect(tree.img, "free list is damaged", opens=True)


def test_lost_block(tree):
    b = tree.read(0)
    struct.pack_into("<II", b, 0x38, 0, 0)     # forget the free list
    tree.write(0, b)
    out = expect(tree.img, "neither a tree node nor on the free list",
                 opens=True)
    # One problem per forgotten free node.
    assert out.count("neither a tree node") == tree.hdr["free_count"], out


def test_plain_ext4_is_not_an_extref_image(tmp_path):
    img = tmp_path / "plain.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", str(img), "16M"])
    res = tree_check(img)
    assert "lacks the shared_blocks feature" in res.stdout, \
        helpers.describe(res)
    assert res.returncode == 1


def test_feature_without_tree(tmp_path):
    img = tmp_path / "notree.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", str(img), "16M"])
    helpers.run(["debugfs", "-w", "-R", "feature shared_blocks", str(img)])
    res = tree_check(img)
    assert "No reference-count tree in inode 5" in res.stdout, \
        helpers.describe(res)
    assert res.returncode == 1
