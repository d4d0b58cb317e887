"""The copy-on-write write's short path (issue 14).

On a journaled image opened with the writer's verification, pwrite no
longer reads the whole reference-count tree and the file's whole extent
tree before its first write (the open read and checked them all, and only
the library's transactions have written since), and it finds the blocks
it writes by a seek down the extent tree instead of a walk from the
file's first extent.

  - writes at every leaf boundary of a file whose extent tree has two
    levels and several leaves, into holes, across a hole's edges and past
    the end, in one session: the bytes read back by stock debugfs and
    through a read-only loop mount are the model's, both checkers clean;
  - an expert's raw edit in the same session (a write that passed the
    transactions) puts the whole checks back: a damaged tree node is
    refused before anything is written, as before;
  - the crc32c the library computes for the tree and the journal with the
    CPU's instruction is libext2fs's (tests/unit/crc32c_test).
"""

import random
import re

import helpers

BS = 1024
NBLK = 400


def dbg():
    return helpers.binary("debugfs.extref")


def fsck():
    return helpers.binary("fsck/fsck.extref")


def session(img, cmds, check=True):
    """One 'debugfs.extref -w -f -' session running cmds, at a fixed time
    (SOURCE_DATE_EPOCH), so that two sessions stamp the superblock and the
    journal alike whatever second they run in."""
    return helpers.run([dbg(), "-w", "-f", "-", str(img)], check=check,
                       timeout=120, env={"SOURCE_DATE_EPOCH": "1700000000"},
                       input="".join(c + "\n" for c in cmds))


def both_clean(img):
    helpers.e2fsck_fn(img)
    res = helpers.run([fsck(), "-fn", str(img)], check=False, timeout=120)
    assert res.returncode == 0, helpers.describe(res)


def striped(tmp_path):
    """/a of NBLK random blocks; /b a copy of /a whose every other block
    is cloned from /a one block further on: NBLK extents, an extent tree
    of two levels below the inode.  Returns (img, {path: bytes})."""
    img = tmp_path / "s.img"
    helpers.mkfs(img, "8M", "-b", str(BS), "-q")
    a = random.Random(1).randbytes(NBLK * BS)
    host = tmp_path / "a"
    host.write_bytes(a)
    cmds = [f"write {host} /a", f"write {host} /b"]
    b = bytearray(a)
    for i in range(0, NBLK - 1, 2):
        cmds.append(f"clone_range /a {i * BS} /b {(i + 1) * BS} {BS}")
        b[(i + 1) * BS:(i + 2) * BS] = a[i * BS:(i + 1) * BS]
    session(img, cmds)
    return img, {"/a": a, "/b": b}


def leaf_starts(img, path):
    """First logical block of each extent leaf of path (stock debugfs ex:
    the entries one level above the leaves)."""
    out = helpers.debugfs(img, f"ex {path}").stdout
    rows = re.findall(r"^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+)\s*-",
                      out, re.M)
    assert rows, out
    depth = int(rows[0][1])
    starts = sorted({int(lb) for lvl, d, lb in rows
                     if int(lvl) == depth - 1})
    return depth, starts


def test_writes_at_leaf_edges_holes_and_end(tmp_path, loop_mount):
    img, files = striped(tmp_path)
    depth, starts = leaf_starts(img, "/b")
    assert depth >= 2 and len(starts) >= 4, (depth, starts)
    b = files["/b"]
    rng = random.Random(2)
    cmds = []

    def write(off, n):
        data = rng.randbytes(n)
        host = tmp_path / f"h{len(cmds)}"
        host.write_bytes(data)
        cmds.append(f"pwrite -i {host} /b {off} {n}")
        if off + n > len(b):
            b.extend(bytes(off + n - len(b)))
        b[off:off + n] = data

    # holes first: a punched range, and one at a leaf's first block
    for off, n in ((100 * BS, 10 * BS), (starts[2] * BS, 3 * BS)):
        cmds.append(f"punch /b {off} {n}")
        b[off:off + n] = bytes(n)
    write(0, 100)                           # the first block, partly
    for s in starts[1:]:
        write(s * BS - 512, BS)             # across the leaf boundary
        write(s * BS + 7, 2 * BS)           # the leaf's first blocks
    write(104 * BS + 3, 100)                # inside the punched hole
    write(99 * BS + 500, 2 * BS)            # across the hole's start
    write(109 * BS + 900, 300)              # across the hole's end
    write((NBLK - 1) * BS + 10, BS)         # the last extent
    write((NBLK + 5) * BS + 1, 3000)        # past the end of the file
    session(img, cmds)
    assert helpers.debugfs_cat(img, "/b") == bytes(b)
    assert helpers.debugfs_cat(img, "/a") == files["/a"]
    both_clean(img)
    mnt, _ = loop_mount(img)
    assert (mnt / "b").read_bytes() == bytes(b)
    assert (mnt / "a").read_bytes() == files["/a"]


def tree_leaf_lblk(img):
    """The logical block (within inode 5) of the reference-count tree's
    second leaf in key order (debugfs.extref refcount_tree)."""
    out = helpers.run([dbg(), "-R", "refcount_tree", str(img)]).stdout
    leaves = sorted((int(m[3]), int(m[1])) for m in re.finditer(
        r"lblk (\d+)\s+pblk (\d+)\s+level 0\s+entries \d+\s+first (\d+)",
        out))
    assert len(leaves) >= 2, out
    return leaves[1][1]


def test_raw_edit_in_session_brings_whole_checks_back(tmp_path):
    """set_tree_node -n (no checksum update) damages a leaf the write's
    own path does not read; the pwrite after it in the same session must
    be refused with nothing written: the image ends exactly as after the
    edit alone."""
    img, _ = striped(tmp_path)
    lblk = tree_leaf_lblk(img)
    edit = f"set_tree_node -n {lblk} generation 12345"
    host = tmp_path / "h"
    host.write_bytes(b"x" * BS)
    edited = tmp_path / "e.img"
    edited.write_bytes(img.read_bytes())
    session(edited, [edit])
    res = session(img, [edit, f"pwrite -i {host} /b {3 * BS} {BS}"],
                  check=False)
    assert res.returncode != 0, helpers.describe(res)
    assert re.search(r"tree|checksum", res.stderr, re.I), \
        helpers.describe(res)
    assert helpers.sha256(img) == helpers.sha256(edited), \
        "the refused pwrite changed the image"


def test_crc32c_matches_libext2fs():
    """The crc32c of the tree's blocks and the journal's records
    (base/crc32c.c, the CPU's instruction where it has one) is libext2fs's
    ext2fs_crc32c_le, for every length, alignment and seed tried."""
    res = helpers.run([helpers.binary("tests/unit/crc32c_test")],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert re.match(r"ok \d+", res.stdout), res.stdout
