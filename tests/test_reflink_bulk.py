"""A reflink builds the new file's extent tree a node at a time
(libfs/extent/extent_bulk.c), and so does a clone into a file with nothing
mapped yet.

Sources of 1, 4 (the inode's own four entries), 5 (one leaf), a leaf's
worth and one more (340/341 at 4 KiB, 84/85 at 1 KiB), four leaves and one
more (the root full of index entries, then an index block) and ~3,000
extents, at 1 KiB and 4 KiB blocks, with and without metadata_csum.  Each
source is a sparse host file of single blocks with a hole after each, put
in by mkfs.extref -d, so that every block is an extent of its own.

Oracles: stock e2fsck -fn (tree shape, index keys, checksums, i_blocks,
bitmaps), stock debugfs `ex` (the copy's leaf extents are the source's,
logical and physical), the bytes through a read-only loop mount of the
kernel, and the append shape (every node full but the last of its level,
a leaf two entries short: `ex` counts them).
"""

import math
import os
import re

import pytest

import helpers as H

COUNTS = [1, 4, 5, 340, 341, 3000]
PER_BLOCK = {1024: 84, 4096: 340}       # (bs - 12) / 12 entries a node
LEAF_SLACK = 2      # a built leaf's room for a copy-on-write's cut


def per_level(bs, level):
    """Entries a built node of level (0: leaves) holds."""
    return PER_BLOCK[bs] - (LEAF_SLACK if level == 0 else 0)


def counts_for(bs):
    per, leaf = PER_BLOCK[bs], per_level(bs, 0)
    return sorted(set(COUNTS + [per, per + 1, leaf, leaf + 1,
                                4 * leaf, 4 * leaf + 1]))


LEAF = re.compile(r"^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+(\d+)\s*-\s*(\d+)\s+"
                  r"(\d+)\s*-\s*(\d+)\s+(\d+)\s*(\S*)\s*$")
NODE = re.compile(r"^\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+\d+\s*-\s*\d+\s+"
                  r"(\d+)\s+\d+\s*$")


def extents(img, path):
    """Stock debugfs `ex PATH`: (leaf extents, depth, index entries by
    level); a leaf extent is (lstart, lend, pstart, pend, len, flags)."""
    out = H.debugfs(img, f"ex {path}").stdout
    leaves, nodes, depth = [], {}, 0
    for line in out.splitlines():
        m = LEAF.match(line)
        if m and m.group(1) == m.group(2):
            depth = int(m.group(2))
            leaves.append(tuple(int(x) for x in m.group(3, 4, 5, 6, 7)) +
                          (m.group(8),))
            continue
        m = NODE.match(line)
        if m:
            depth = int(m.group(2))
            nodes.setdefault(int(m.group(1)), []).append(int(m.group(3)))
    return leaves, depth, nodes


def shell(img, requests):
    res = H.run([H.binary("debugfs.extref"), "-w", "-f", "-", str(img)],
                input="\n".join(requests) + "\n", check=False)
    assert res.returncode == 0, H.describe(res)
    assert "rror" not in res.stdout + res.stderr, H.describe(res)
    return res


def sparse_file(path, bs, n):
    """n blocks of random data at blocks 0, 2, 4, ...: n extents."""
    with open(path, "wb") as f:
        for i in range(n):
            block = os.urandom(bs)
            f.seek(2 * i * bs)
            f.write(block)
    return path.read_bytes()


SHIFT = 3       # blocks: the clone into an empty file at an offset


@pytest.fixture(scope="module", params=[(1024, True), (1024, False),
                                        (4096, True), (4096, False)],
                ids=["1k-csum", "1k-nocsum", "4k-csum", "4k-nocsum"])
def built(request, tmp_path_factory):
    bs, csum = request.param
    work = tmp_path_factory.mktemp(f"bulk{bs}{int(csum)}")
    src = work / "src"
    src.mkdir()
    want = {}
    for n in counts_for(bs):
        want[n] = sparse_file(src / f"e{n}", bs, n)
    (src / "empty").write_bytes(b"")
    if bs == 1024:      # two extents of the largest length and a piece
        big = os.urandom((2 * 32768 + 5) * bs)
        (src / "big").write_bytes(big)
    img = work / "fs.img"
    opts = ["-q", "-b", str(bs)] + ([] if csum else ["-O", "^metadata_csum"])
    H.mkfs(img, "128M", *opts, "-d", str(src))
    feats = H.dumpe2fs_features(img)
    assert ("metadata_csum" in feats) == csum
    reqs = []
    for n, data in want.items():
        reqs += [f"reflink /e{n} /c{n}",
                 f"write {src / 'empty'} /k{n}",
                 f"clone_range /e{n} 0 /k{n} 0 {len(data)}",
                 f"write {src / 'empty'} /o{n}",
                 f"clone_range /e{n} 0 /o{n} {SHIFT * bs} {len(data)}"]
    if bs == 1024:
        reqs.append("reflink /big /cbig")
    shell(img, reqs)
    return img, bs, want


def test_e2fsck_clean(built):
    img, _, _ = built
    H.e2fsck_fn(img)


def test_same_mappings_as_source(built):
    img, bs, want = built
    for n in want:
        src, _, _ = extents(img, f"/e{n}")
        assert len(src) == n, f"/e{n}: source has {len(src)} extents"
        for name in (f"/c{n}", f"/k{n}"):
            got, _, _ = extents(img, name)
            assert got == src, f"{name}: extents differ from /e{n}"
        got, _, _ = extents(img, f"/o{n}")
        moved = [(a + SHIFT, b + SHIFT, p, q, ln, fl)
                 for a, b, p, q, ln, fl in src]
        assert got == moved, f"/o{n}: extents are not /e{n}'s moved"


def test_append_shape(built):
    """Every node full but the last of its level (a leaf: LEAF_SLACK
    short of full); four or fewer entries live in the inode (depth 0)."""
    img, bs, want = built
    for n in want:
        _, depth, nodes = extents(img, f"/c{n}")
        level_n, d = n, 0
        shape = []
        while level_n > 4:
            level_n = math.ceil(level_n / per_level(bs, d))
            shape.append(level_n)
            d += 1
        assert depth == d, f"/c{n}: depth {depth}, expected {d}"
        # `ex` lists one entry per child node at each level above it
        got = [len(nodes.get(depth - 1 - i, [])) for i in range(depth)]
        assert got == shape, f"/c{n}: nodes by level {got}, want {shape}"


def test_bytes_through_mount(built, loop_mount):
    img, bs, want = built
    mnt, _ = loop_mount(img)
    for n, data in want.items():
        for name in (f"c{n}", f"k{n}"):
            assert (mnt / name).read_bytes() == data, name
        assert (mnt / f"o{n}").read_bytes() == bytes(SHIFT * bs) + data


def test_shell_check(built):
    img, _, _ = built
    res = H.run([H.binary("debugfs.extref"), "-R", "check", str(img)])
    assert res.returncode == 0


@pytest.mark.parametrize("built", [(1024, True), (1024, False)],
                         ids=["1k-csum", "1k-nocsum"], indirect=True)
def test_long_extents(built):
    """A 64 MiB file written whole: long extents, cut where the block
    groups' metadata lies, the copy's the same (the 1 KiB-block images
    hold the file)."""
    img, bs, _ = built
    assert bs == 1024
    src, _, _ = extents(img, "/big")
    got, _, _ = extents(img, "/cbig")
    assert got == src
    assert len(src) > 1 and max(e[4] for e in src) > 8000


def free_blocks(img):
    return int(H.dumpe2fs_header(img)["Free blocks"])


def test_no_room_for_the_tree(tmp_path):
    """A reflink whose new extent tree needs more blocks than are free is
    refused before anything changes: the image is the same byte for
    byte, and the error says why."""
    bs, n = 1024, 3000
    src = tmp_path / "src"
    src.mkdir()
    sparse_file(src / "e", bs, n)
    img = tmp_path / "fs.img"
    H.mkfs(img, "16M", "-q", "-b", str(bs), "-d", str(src))
    nodes = math.ceil(n / per_level(bs, 0))
    nodes += math.ceil(nodes / per_level(bs, 1))
    left, k = free_blocks(img), 0
    while left >= nodes and k < 4:     # files' own trees take a few more
        fill = tmp_path / f"fill{k}"
        fill.write_bytes(os.urandom((left - nodes // 2) * bs))
        shell(img, [f"write {fill} /fill{k}"])
        left, k = free_blocks(img), k + 1
    assert 0 < left < nodes, f"{left} blocks free, the tree needs {nodes}"
    before = H.sha256(img)
    res = H.run([H.binary("debugfs.extref"), "-w", "-R", "reflink /e /c",
                 str(img)], check=False)
    assert res.returncode != 0, H.describe(res)
    assert "/e" in res.stderr and "allocate block" in res.stderr, \
        H.describe(res)
    assert H.sha256(img) == before
    H.e2fsck_fn(img)


# ----- a long range cloned into a file with mappings: the tree rebuilt -----

def pieces_file(path, bs, n, plen, gap):
    """n pieces of plen random blocks, each followed by gap blocks of
    hole; returns the bytes."""
    with open(path, "wb") as f:
        for i in range(n):
            f.seek(i * (plen + gap) * bs)
            f.write(os.urandom(plen * bs))
    return path.read_bytes()


def model(dst, src, s0, d0, nblk):
    """The destination's leaf extents after cloning src's [s0, s0+nblk)
    to d0: dst's outside [d0, d0+nblk), src's inside moved, neighbours
    that continue each other merged (as any ext4 tree holds them)."""
    d1 = d0 + nblk
    out = []
    for a, b, p, q, ln, fl in dst:
        b += 1
        if a < d0:
            e = min(b, d0)
            out.append([a, e, p, fl])
        if b > d1:
            s = max(a, d1)
            out.append([s, b, p + (s - a), fl])
    for a, b, p, q, ln, fl in src:
        b += 1
        s, e = max(a, s0), min(b, s0 + nblk)
        if s < e:
            out.append([s - s0 + d0, e - s0 + d0, p + (s - a), fl])
    out.sort()
    merged = []
    for a, b, p, fl in out:
        if merged:
            la, lb, lp, lfl = merged[-1]
            if lb == a and lp + (lb - la) == p and lfl == fl and \
                    b - la <= 32768:
                merged[-1][1] = b
                continue
        merged.append([a, b, p, fl])
    return [(a, b - 1, p, p + (b - a) - 1, b - a, fl)
            for a, b, p, fl in merged]


@pytest.mark.parametrize("bs,csum", [(1024, True), (4096, False)])
def test_clone_long_range_into_mapped_file(tmp_path, loop_mount, bs, csum):
    src = tmp_path / "src"
    src.mkdir()
    sdata = sparse_file(src / "s", bs, 3000)
    ddata = pieces_file(src / "d", bs, 1500, 3, 1)
    img = tmp_path / "fs.img"
    opts = ["-q", "-b", str(bs)] + ([] if csum else ["-O", "^metadata_csum"])
    H.mkfs(img, "64M", *opts, "-d", str(src))
    s_ext, _, _ = extents(img, "/s")
    d_ext, _, _ = extents(img, "/d")
    s0, d0, nblk = 101, 1001, 3000      # cuts a piece of /d in two
    shell(img, [f"clone_range /s {s0 * bs} /d {d0 * bs} {nblk * bs}"])
    H.e2fsck_fn(img)
    res = H.run([H.binary("debugfs.extref"), "-R", "check", str(img)])
    assert "no problems" in res.stdout, H.describe(res)
    got, _, _ = extents(img, "/d")
    assert got == model(d_ext, s_ext, s0, d0, nblk)
    want = bytearray(ddata.ljust((d0 + nblk) * bs, b"\0"))
    want[d0 * bs:(d0 + nblk) * bs] = \
        sdata[s0 * bs:(s0 + nblk) * bs].ljust(nblk * bs, b"\0")
    mnt, _ = loop_mount(img)
    assert (mnt / "d").read_bytes() == bytes(want)
    assert (mnt / "s").read_bytes() == sdata


# ----- interrupted after each write (the process dies: writes in order) ---

_NO_FAULTS = H.fault_injection_skip_reason()


def _cat(img, path):
    # -c: a crashed image's bitmaps may not match their checksums yet
    res = H.run(["debugfs", "-c", "-R", f"cat {path}", str(img)],
                text=False, check=False)
    return res.stdout if b"not found" not in res.stderr else None


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.skipif(_NO_FAULTS is not None, reason=_NO_FAULTS or "")
@pytest.mark.parametrize("what", ["reflink", "clone", "cow"])
def test_crash_after_each_write(tmp_path, what):
    """The tree built at once is invisible until the inode is written:
    a reflink target is absent or whole, a rebuilt file is old or new,
    never a mix, and no count is below its mappings.  A copy-on-write
    that cuts an extent of a reflink's copy in three is one rewrite of
    its leaf (the room left in every built leaf): the block is old or
    new, never a hole."""
    import crashlib
    bs = 1024
    src = tmp_path / "src"
    src.mkdir()
    sdata = sparse_file(src / "s", bs, 1000)
    ddata = pieces_file(src / "d", bs, 600, 3, 1)
    base = tmp_path / "base.img"
    # no journal: the ordered path (test_crash_txn.py has transactions)
    H.mkfs(base, "32M", "-q", "-b", str(bs), "-O", "^has_journal", "-d",
           str(src))
    s0, d0, nblk = 101, 1001, 1000
    request = ("reflink /s /c" if what == "reflink" else
               f"clone_range /s {s0 * bs} /d {d0 * bs} {nblk * bs}")
    new = bytearray(ddata)
    new[d0 * bs:(d0 + nblk) * bs] = sdata[s0 * bs:(s0 + nblk) * bs]
    if what == "cow":
        shell(base, ["reflink /d /dc"])
        mid = (4 * 300 + 1) * bs        # the middle of piece 300
        request = f"pwrite -S 119 /dc {mid} {bs}"
        new = bytearray(ddata)
        new[mid:mid + bs] = bytes([119]) * bs

    def oracle(img, how):
        bad = crashlib.count_violations(img, tmp_path)
        if what == "reflink":
            got = _cat(img, "/c")
            if got is not None and got != sdata:
                bad.append("/c is neither absent nor whole")
        elif what == "clone":
            got = _cat(img, "/d")
            if got not in (ddata, bytes(new)):
                bad.append("/d is neither old nor new")
        else:
            if _cat(img, "/dc") not in (ddata, bytes(new)):
                bad.append("/dc is neither old nor new")
            if _cat(img, "/d") != ddata:
                bad.append("/d changed")
        if _cat(img, "/s") != sdata:
            bad.append("/s changed")
        return bad
    swept = crashlib.sweep(base, crashlib.request_op(request), oracle,
                           tmp_path, 25, faults=crashlib.only("crash"),
                           replayers=(None,), stop_after=None)
    assert swept.writes > 5
    swept.assert_clean(what)


# ----- unwritten extents, as the kernel makes them -----

def test_unwritten_extents(tmp_path, loop_mount):
    """A file the kernel fallocated and wrote in part (unwritten extents
    among written ones, more than a leaf of them), converted, reflinked
    and cloned into an empty file: the copies keep every extent and its
    unwritten flag (stock debugfs ex), read back the same through the
    kernel (zeros where unwritten), and e2fsck is clean."""
    bs, pieces = 1024, 300
    img = tmp_path / "fs.img"
    H.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", str(bs), str(img),
           "32M"])
    mnt, _ = loop_mount(img, options="rw")
    path = mnt / "f"
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.posix_fallocate(fd, 0, 2 * pieces * bs)
        for i in range(pieces):      # every other block written
            os.pwrite(fd, os.urandom(bs), 2 * i * bs)
        os.fsync(fd)
    finally:
        os.close(fd)
    want = path.read_bytes()
    H.run(["umount", str(mnt)])
    H.run([H.binary("mkfs.extref"), "--convert", "-q", str(img)])
    src, _, _ = extents(img, "/f")
    assert sum(1 for e in src if e[5] == "Uninit") >= pieces - 1, src[:6]
    (tmp_path / "empty").write_bytes(b"")
    shell(img, ["reflink /f /c", f"write {tmp_path / 'empty'} /k",
                f"clone_range /f 0 /k 0 {len(want)}"])
    for name in ("/c", "/k"):
        got, _, _ = extents(img, name)
        assert got == src, name
    H.e2fsck_fn(img)
    mnt2, _ = loop_mount(img)
    for name in ("f", "c", "k"):
        assert (mnt2 / name).read_bytes() == want, name
