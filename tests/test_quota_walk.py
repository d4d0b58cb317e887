"""Hostile quota files: every walk bounded by the file, both free lists
checked whole, usage that saturates (issue 23, section 5).

The quota files here are made in Python with struct in the v2 format the
kernel and e2fsprogs write (fs/quota/quota_tree.c; libfs/quota/
quota_format.h) and put in place of the user quota file (inode 3) with
stock debugfs.  What the tools leave is read back with stock debugfs.
"""

import struct

import pytest

import helpers
from test_quota import BS, data, list_quota, make_image, shell

USR_MAGIC = 0xd9c01f11
GRACE = 604800
LIMIT_S = 8        # seconds a walk may take here (it takes well under 1)


def header(nblocks, free_blk=0, free_entry=0):
    """Block 0: magic, version 1, then the info."""
    return struct.pack("<8I", USR_MAGIC, 1, GRACE, GRACE, 0, nblocks,
                       free_blk, free_entry)


def tree_block(refs):
    """A tree block: {index: block number}."""
    v = [0] * (BS // 4)
    for i, r in refs.items():
        v[i] = r
    return struct.pack(f"<{BS // 4}I", *v)


def entry(qid, curspace=0, curinodes=0, bhard=0):
    """One 72-byte dquot: id, pad, ihard, isoft, curinodes, bhard, bsoft,
    curspace, btime, itime."""
    return struct.pack("<IIQQQQQQQQ", qid, 0, 0, 0, curinodes, bhard, 0,
                       curspace, 0, 0)


def data_block(next_free=0, prev_free=0, entries=()):
    body = b"".join(entries)
    return struct.pack("<IIHHI", next_free, prev_free, len(entries), 0,
                       0) + body


def install(img, tmp_path, blocks, size=None):
    """Make inode 3 hold blocks (1 KiB each, in order) with i_size size:
    stock debugfs writes them as a new file, copies that inode over
    inode 3 and drops the new inode without its blocks."""
    local = tmp_path / "quota.file"
    local.write_bytes(b"".join(b.ljust(BS, b"\0") for b in blocks))
    size = size or len(blocks) * BS
    req = (f"punch <3> 0\nwrite {local} /q.tmp\ncopy_inode /q.tmp <3>\n"
           f"clri /q.tmp\nkill_file /q.tmp\nunlink /q.tmp\n"
           f"sif <3> size {size}\n")
    helpers.run(["debugfs", "-w", "-f", "-", str(img)], input=req)
    local.unlink()


def quota_image(tmp_path, name="q.img"):
    return make_image(tmp_path, name=name, types="usrquota")


def ours(img, req, rw=False, timeout=LIMIT_S):
    argv = [helpers.binary("debugfs.extref")] + (["-w"] if rw else [])
    return helpers.run(argv + ["-R", req, str(img)], check=False,
                       timeout=timeout)


def descending_tree(n_l1):
    """Root -> n_l1 level-1 blocks -> 256 level-2 blocks each, whose 256
    references each name level-3 blocks past the blocks written (holes,
    which read as blocks without references), in descending order: the
    order that made the old sorted-array walk quadratic."""
    n_l2 = 256 * n_l1
    real = 2 + n_l1 + n_l2
    nblocks = real + 256 * n_l2
    blocks = [header(nblocks), tree_block({i: 2 + i for i in range(n_l1)})]
    for i in range(n_l1):
        blocks.append(tree_block({j: 2 + n_l1 + 256 * i + j
                                  for j in range(256)}))
    top = nblocks - 1
    for k in range(n_l2):
        blocks.append(tree_block({j: top - 256 * k - j for j in range(256)}))
    return blocks, nblocks


def test_walk_bounded_by_the_file(tmp_path):
    """786,432 level-3 blocks named in descending order (3 MiB written, a
    sparse file of 771 MiB): the old walk kept them in a sorted array
    (over 20 s here); a bitmap over the file's blocks makes it linear.
    list_quota and an operation that charges usage (mkdir) each finish
    under the time limit, and stock debugfs reads the entry mkdir added."""
    img = quota_image(tmp_path)
    blocks, nblocks = descending_tree(12)
    install(img, tmp_path, blocks, nblocks * BS)
    res = ours(img, "list_quota user")
    assert res.returncode == 0, helpers.describe(res)
    assert len(res.stdout.splitlines()) == 1       # the header, no entry
    res = ours(img, "mkdir /x", rw=True)
    assert res.returncode == 0, helpers.describe(res)
    rows = list_quota(img, "user")
    assert rows[0][1] == 1, rows            # the new directory, charged


def small_tree(free_blk=0, free_entry=0, data_entries=1, extra=()):
    """id 0 in data block 5 (root 1 -> 2 -> 3 -> 4 -> 5), and more."""
    entries = [entry(i, curspace=1024 * (i + 1), curinodes=1)
               for i in range(data_entries)]
    blocks = [b"", tree_block({0: 2}), tree_block({0: 3}),
              tree_block({0: 4}),
              tree_block({i: 5 for i in range(data_entries)}),
              data_block(entries=entries)] + list(extra)
    blocks[0] = header(len(blocks), free_blk, free_entry)
    return blocks


HOSTILE = {
    # free blocks 6 -> 7 -> 6: the old code handed out 6 again, in use
    "free-block loop": small_tree(
        free_blk=6, extra=[data_block(next_free=7),
                           data_block(next_free=6)]),
    # the free-block list names the data block holding id 0
    "free block in use": small_tree(free_blk=5),
    # free blocks 6 -> 3: a tree block
    "free list into the tree": small_tree(
        free_blk=6, extra=[data_block(next_free=3)]),
    # the list of blocks with room names a tree block: an entry written
    # there overwrote its references
    "free entry in a tree block": small_tree(free_entry=3),
    # blocks with room 5 -> 5: a loop through the block itself
    "free-entry loop": small_tree(free_entry=5, extra=[]),
    # a data block reached as a tree block too (root index 1): read as
    # one, its id 0 entry's space (6) names block 6, an empty block
    "data block as tree block": [header(7), tree_block({0: 2, 1: 5}),
                                 tree_block({0: 3}), tree_block({0: 4}),
                                 tree_block({0: 5}),
                                 data_block(entries=[entry(0, 6)]),
                                 b""],
}


def hostile(tmp_path, name):
    img = quota_image(tmp_path, name="h.img")
    blocks = [bytearray(b.ljust(BS, b"\0")) for b in HOSTILE[name]]
    if name == "free-entry loop":
        struct.pack_into("<I", blocks[5], 0, 5)      # next_free = itself
    install(img, tmp_path, [bytes(b) for b in blocks])
    return img


def test_hostile_small_tree_is_read(tmp_path):
    """The tree the hostile cases start from is sound: stock debugfs and
    list_quota read it alike, and a write on it works."""
    img = quota_image(tmp_path)
    install(img, tmp_path, small_tree(data_entries=3))
    res = ours(img, "list_quota user")
    assert res.returncode == 0, helpers.describe(res)
    assert res.stdout.split() == helpers.debugfs(
        img, "list_quota user").stdout.split()
    res = ours(img, "set_quota user 4242 1 2 3 4", rw=True)
    assert res.returncode == 0, helpers.describe(res)
    assert list_quota(img, "user")[4242][2:] == (1, 2)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_lists_refused(tmp_path, name):
    """Each hostile file is refused by every writer (set_quota as much as
    an operation), with a message naming the quota file, the image left
    byte for byte; the old code wrote through the loop or into the tree."""
    f = data(tmp_path, "f", 3000, 5)
    img = hostile(tmp_path, name)
    before = helpers.sha256(img)
    for req in ("set_quota user 4242 1 2 3 4", f"write {f} /b",
                "mkdir /d"):
        res = shell(img, req, check=False)
        assert res.returncode == 1, helpers.describe(res)
        assert "quota" in res.stderr.lower(), res.stderr
        assert helpers.sha256(img) == before, req


def entry_offset(img, tmp_path, qid):
    """Where id's dquot is in the image: the tree walked from a copy of
    inode 3 read by stock debugfs, the block mapped by stock debugfs."""
    copy = tmp_path / "q.dump"
    helpers.debugfs(img, f"dump <3> {copy}")
    raw = copy.read_bytes()
    copy.unlink()

    def ref(blk, idx):
        return struct.unpack_from("<I", raw, blk * BS + 4 * idx)[0]

    blk = 1
    for depth in range(4):
        blk = ref(blk, (qid >> (8 * (3 - depth))) & 0xff)
    for slot in range(14):
        off = blk * BS + 16 + 72 * slot
        if struct.unpack_from("<I", raw, off)[0] == qid and \
                raw[off:off + 72] != bytes(72):
            break
    res = helpers.debugfs(img, f"bmap <3> {off // BS}")
    return int(res.stdout.split()[0]) * BS + off % BS


def test_usage_saturates(tmp_path):
    """Usage 2^63 - 1 - 1024 plus a 300 KiB file stays 2^63 - 1, the
    largest the kernel's and e2fsprogs' signed counts hold (the old sum
    went past it: negative to stock debugfs); read back by stock
    debugfs."""
    img = quota_image(tmp_path)
    top = (1 << 63) - 1
    off = entry_offset(img, tmp_path, 0) + 0x30       # dqb_curspace
    with open(img, "r+b") as fh:
        fh.seek(off)
        fh.write(struct.pack("<Q", top - 1024))
    res = shell(img, f"write {data(tmp_path, 'big', 300032, 7)} /big",
                check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert list_quota(img, "user")[0][0] == top
    res = shell(img, "rm /big")
    assert list_quota(img, "user")[0][0] < top         # and comes down


def test_huge_limit_not_wrapped(tmp_path):
    """A block hard limit of 2^54 + 5 KiB (more bytes than 64 bits hold)
    is no limit worth the name: the old conversion to bytes wrapped it to
    5 KiB and refused the write.  Written back as the largest limit bytes
    can hold."""
    img = quota_image(tmp_path)
    off = entry_offset(img, tmp_path, 0) + 0x20       # dqb_bhardlimit
    with open(img, "r+b") as fh:
        fh.seek(off)
        fh.write(struct.pack("<Q", (1 << 54) + 5))
    f = data(tmp_path, "f", 20000, 3)
    res = helpers.run([helpers.binary("debugfs.extref"), "-w", "--as",
                       "0:0", "-R", f"write {f} /f", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert list_quota(img, "user")[0][3] == (1 << 54) - 1    # KiB
