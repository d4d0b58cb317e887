"""Every walk the image can steer is bounded by the image (issue 23,
section 5): a crafted worst case per walk, under a time limit.

The quota tree walk has its own tests (test_quota_walk.py).  Here:

- directory trees: directories with two names each, a chain of them (a
  DAG: 2^depth paths, no loop): du and rdump went down every path;
- htree: index entries that all name one index block: the dump went
  entries^levels deep;
- extent trees: index entries that all name one child, level under
  level: libext2fs's walk goes down into the child for every entry.

The images are made with stock debugfs (and, for the raw blocks, Python
writing at the offsets stock debugfs reports).
"""

import struct

import pytest

import helpers

LIMIT_S = 10


def ours(img, req, rw=False, timeout=LIMIT_S):
    argv = [helpers.binary("debugfs.extref")] + (["-w"] if rw else [])
    return helpers.run(argv + ["-R", req, str(img)], check=False,
                       timeout=timeout)


def stock(img, requests):
    res = helpers.run(["debugfs", "-w", "-f", "-", str(img)],
                      input="\n".join(requests) + "\n")
    return res


def block_size(img):
    return int(helpers.dumpe2fs_header(img)["Block size"])


def blocks_of(img, path):
    return [int(b) for b in
            helpers.debugfs(img, f"blocks {path}").stdout.split()]


def write_block(img, pblk, bs, data):
    with open(img, "r+b") as f:
        f.seek(pblk * bs)
        f.write(data.ljust(bs, b"\0"))


@pytest.fixture
def dag(tmp_path):
    """/n holds x and y, two names of one directory, which holds x and y,
    two names of the next... 22 levels: 4 million paths, 23 directories.
    Stock e2fsck calls these directory hard links; the tools must not
    take 2^22 steps over them."""
    img = tmp_path / "dag.img"
    helpers.mkfs(img, "8M", "-q")
    reqs = ["mkdir /n", "cd /n"]
    for _ in range(22):
        reqs += ["mkdir x", "link x y", "cd x"]
    reqs.append("write /etc/hostname leaf")
    stock(img, reqs)
    return img


def test_du_directory_dag(dag):
    """du names the second name and does not follow it: 23 directories
    counted, not 4 million paths."""
    res = ours(dag, "du -s /n")
    assert res.returncode == 1, helpers.describe(res)
    assert "reached again by another name, not followed" in res.stderr
    assert res.stderr.count("\n") <= 23, res.stderr[:2000]


def test_rdump_directory_dag(dag, tmp_path):
    """rdump dumps each directory once: the second name is refused, the
    first holds the whole chain down to the file."""
    out = tmp_path / "out"
    out.mkdir()
    res = ours(dag, f"rdump /n {out}")
    assert res.returncode == 1, helpers.describe(res)
    assert "reached again by another name, not followed" in res.stderr
    dirs = [p for p in out.rglob("*") if p.is_dir()]
    assert len(dirs) <= 2 * 23 + 1, len(dirs)
    assert (out / "n" / "/".join(["x"] * 22) / "leaf").is_file()


def test_htree_entries_naming_one_block(tmp_path):
    """A hash index of two levels below the root whose entries all name
    block 1, an index block whose entries name itself: the dump follows
    block 1 once (it was entries^3 leaf dumps)."""
    img = tmp_path / "h.img"
    helpers.mkfs(img, "8M", "-q", "-b", "4096")
    bs = block_size(img)
    stock(img, ["mkdir /d", "expand_dir /d", "sif /d flags 0x81000"])
    root, one = blocks_of(img, "/d")[:2]
    ino = int(helpers.debugfs(img, "stat /d").stdout.split()[1])
    n = (bs - 32) // 8
    head = struct.pack("<IHBB4s", ino, 12, 1, 2, b".") + \
        struct.pack("<IHBB4s", 2, bs - 12, 2, 2, b"..") + \
        struct.pack("<IBBBB", 0, 1, 8, 2, 0)
    entries = struct.pack("<HHI", n, n, 1) + \
        b"".join(struct.pack("<II", 2 * i, 1) for i in range(1, n))
    write_block(img, root, bs, head + entries)
    m = (bs - 8) // 8
    node = struct.pack("<IHBB", 0, bs, 0, 0) + struct.pack("<HHI", m, m, 1) \
        + b"".join(struct.pack("<II", 2 * i, 1) for i in range(1, m))
    write_block(img, one, bs, node)
    res = ours(img, "htree /d")
    assert res.returncode == 1, helpers.describe(res)
    assert "Index block 1 named again, not followed" in res.stdout
    assert len(res.stdout) < 200 * bs, len(res.stdout)


def extent_header(entries, max_, depth):
    return struct.pack("<HHHHI", 0xf30a, entries, max_, depth, 0)


def test_extent_index_naming_one_child(tmp_path):
    """A file whose extent tree is four index levels, every entry of a
    level naming the one block of the level below, then one leaf: the
    walk would meet 4 * 340^3 leaves.  Without metadata_csum, so that
    the blocks are taken as written.  blocks and du stop with an error
    under the time limit."""
    img = tmp_path / "e.img"
    helpers.mkfs(img, "8M", "-q", "-b", "4096", "-O", "^metadata_csum")
    bs = block_size(img)
    f = tmp_path / "f"
    f.write_bytes(b"x" * (6 * bs))
    # six blocks: five for the nodes below the root, the file's own one
    stock(img, [f"write {f} /f"])
    pblks = blocks_of(img, "/f")
    assert len(pblks) == 6
    per = (bs - 12) // 12
    levels = [pblks[0], pblks[1], pblks[2], pblks[3]]   # depth 3, 2, 1, 0
    data = pblks[5]
    for depth, pblk in zip((3, 2, 1), levels[:3]):
        child = levels[4 - depth]
        node = extent_header(per, per, depth) + b"".join(
            struct.pack("<IIHH", 0, child & 0xffffffff, child >> 32, 0)
            for _ in range(per))
        write_block(img, pblk, bs, node)
    leaf = extent_header(1, per, 0) + struct.pack("<IHHI", 0, 1, 0, data)
    write_block(img, levels[3], bs, leaf)
    root = extent_header(4, 4, 4) + b"".join(
        struct.pack("<IIHH", 0, levels[0], 0, 0) for _ in range(4))
    stock(img, ["sif /f block[0] 0x%x" % struct.unpack_from("<I", root, 0)[0]]
          + ["sif /f block[%d] 0x%x" % (i, struct.unpack_from("<I", root,
                                                               4 * i)[0])
             for i in range(1, 15)])
    for req in ("blocks /f", "du /f", "fiemap /f"):
        res = ours(img, req)
        assert res.returncode == 1, helpers.describe(res)
    # a write: refused (the open's check sees the damage), the image as
    # it was; the checker names the file
    before = helpers.sha256(img)
    res = ours(img, f"write {f} /g", rw=True)
    assert res.returncode == 1, helpers.describe(res)
    assert helpers.sha256(img) == before
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", "-E",
                       "no_e2fsck", str(img)], check=False, timeout=LIMIT_S)
    assert res.returncode == 4, helpers.describe(res)
    assert "0x0101" in res.stdout and "(/f)" in res.stdout, res.stdout
