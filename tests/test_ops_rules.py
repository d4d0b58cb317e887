"""One test per rule and refusal of the debugfs.extref change commands.

The rules are those of FICLONERANGE / FIDEDUPERANGE (docs/debugfs.extref.8,
/work/shared/notes/peer-conventions.md), copy-on-write pwrite, copy vs
preserve reflinks, recursive reflinks, ENOSPC, the inode flags and the
quota feature (kept, not refused), sparse and >4 GiB files.  Results are read
back with stock debugfs, stock e2fsck, the image bytes and the kernel
(read-only loop mount) wherever that is cheap.
"""

import os
import re
import stat as st
import struct

import pytest

import helpers
import opsmodel

SHARED = 0x2000


# ----------------------------------------------------------------------
# helpers

def dbg():
    return helpers.binary("debugfs.extref")


def dx(img, *cmds, write=True, check=True, umask=None):
    """Run requests through 'debugfs.extref [-w] -f -'."""
    cmd = [dbg()] + (["-w"] if write else []) + ["-f", "-", str(img)]
    if umask is not None:
        cmd = ["sh", "-c", f"umask {umask:03o}; exec \"$@\"", "sh"] + cmd
    return helpers.run(cmd, check=check, input="".join(c + "\n" for c in cmds))


def dx1(img, request, write=True):
    """One request with -R; returns the CompletedProcess (never checks)."""
    cmd = [dbg()] + (["-w"] if write else []) + ["-R", request, str(img)]
    return helpers.run(cmd, check=False)


def outputs(res):
    """Output lines of each echoed request, in order."""
    return [lines for _, lines in opsmodel.split_output(res.stdout)]


def cat(img, path):
    return helpers.run([dbg(), "-R", f"cat {path}", str(img)],
                       text=False).stdout


def stock_cat(img, path):
    return helpers.debugfs_cat(img, path)


def fiemap(img, path):
    """fiemap -v rows: (start sector, end sector, pstart or None, flags)."""
    res = helpers.run([dbg(), "-R", f"fiemap -v {path}", str(img)])
    rows = []
    for line in res.stdout.splitlines():
        m = re.match(r"\s*\d+: \[(\d+)\.\.(\d+)\]:\s+(\d+)\.\.(\d+)\s+(\d+)"
                     r"\s+(0x[0-9a-f]+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), int(m.group(3)),
                         int(m.group(6), 16)))
            continue
        m = re.match(r"\s*\d+: \[(\d+)\.\.(\d+)\]:\s+hole", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), None, None))
    return rows


def shared_flags_by_block(img, path, bs):
    """{logical block: shared?} for the mapped blocks of path."""
    spb = bs // 512
    out = {}
    for s, e, p, flags in fiemap(img, path):
        if p is None:
            continue
        for sec in range(s, e + 1, spb):
            out[sec // spb] = bool(flags & SHARED)
    return out


def pblocks(img, path):
    """{lblk: pblk} from stock debugfs's extent listing."""
    res = helpers.debugfs(img, f"ex -l {path}")
    out = {}
    for line in res.stdout.splitlines():
        m = opsmodel._EX_LEAF.match(line)
        if m and m.group(1) == m.group(2):
            l, p, n = int(m.group(3)), int(m.group(5)), int(m.group(7))
            for i in range(n):
                out[l + i] = p + i
    return out


def refcount(img):
    return opsmodel.tree_records(dbg(), img)


def count_of(img, block):
    for s, n, c in refcount(img):
        if s <= block < s + n:
            return c
    return 1


def stock_stat(img, path):
    return helpers.debugfs_stat(img, path)


def stat_field(text, name):
    m = re.search(name + r":\s*(\S+)", text)
    assert m, f"no {name} in:\n{text}"
    return m.group(1)


def size_of(img, path):
    return int(stat_field(stock_stat(img, path), "Size"))


def recount_ok(img, tmp_path):
    opsmodel.check_recount(dbg(), img, tmp_path)


@pytest.fixture(params=[1024, 4096], ids=["1k", "4k"])
def bs(request):
    return request.param


def make_img(tmp_path, bs, size="32M", name="t.img"):
    img = tmp_path / name
    helpers.mkfs(img, size, "-b", str(bs), "-q")
    return img


def host(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def rand(n, seed=0):
    import random
    return random.Random(seed * 1000003 + n).randbytes(n)


def refused(img, request, pattern):
    """request must fail with a message matching pattern, image unchanged."""
    before = helpers.sha256(img)
    res = dx1(img, request)
    assert res.returncode != 0, f"{request!r} was accepted:\n" + \
        helpers.describe(res)
    assert re.search(pattern, res.stderr, re.I), \
        f"{request!r}: message does not match {pattern!r}:\n" + \
        helpers.describe(res)
    assert helpers.sha256(img) == before, f"{request!r} changed the image"
    return res


# ----------------------------------------------------------------------
# clone_range (FICLONERANGE)

def _two_files(tmp_path, img, bs, nblk_a=8, nblk_b=8, extra_a=0):
    a = rand(nblk_a * bs + extra_a, 1)
    b = rand(nblk_b * bs, 2)
    dx(img, f"write {host(tmp_path, 'a', a)} /a",
       f"write {host(tmp_path, 'b', b)} /b")
    return a, b


@pytest.mark.parametrize("which", ["soff", "doff"])
def test_clone_unaligned_offset_refused(tmp_path, bs, which):
    img = make_img(tmp_path, bs)
    _two_files(tmp_path, img, bs)
    soff, doff = (100, 0) if which == "soff" else (0, 100)
    refused(img, f"clone_range /a {soff} /b {doff} {bs}", "align")
    refused(img, f"clone_range /a {bs + 512} /b {bs} {bs}"
            if which == "soff" else f"clone_range /a {bs} /b {bs + 512} {bs}",
            "align")


def test_clone_len0_to_source_eof(tmp_path, bs):
    img = make_img(tmp_path, bs)
    a, b = _two_files(tmp_path, img, bs, extra_a=123)
    # the unaligned end must not land inside /b: clone to /b at 3 blocks
    res = dx(img, f"clone_range /a {2 * bs} /b {3 * bs} 0")
    n = len(a) - 2 * bs
    assert re.fullmatch(rf"linked {n}/\d+ bytes at offset {3 * bs}",
                        outputs(res)[0][0]), res.stdout
    want = b[:3 * bs] + a[2 * bs:]
    assert cat(img, "/b") == want and stock_cat(img, "/b") == want
    assert size_of(img, "/b") == 3 * bs + n
    pa, pb = pblocks(img, "/a"), pblocks(img, "/b")
    for i in range(2, 9):
        assert pb[i + 1] == pa[i], f"block {i} of /a not shared into /b"
        assert count_of(img, pa[i]) == 2
    # aligned source EOF and LEN 0: the whole rest of the file
    dx(img, f"truncate /a {8 * bs}")
    res = dx(img, f"clone_range /a {6 * bs} /b 0 0")
    assert re.fullmatch(rf"linked {2 * bs}/\d+ bytes at offset 0",
                        outputs(res)[0][0]), res.stdout
    want = a[6 * bs:8 * bs] + want[2 * bs:]
    assert cat(img, "/b") == want
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_clone_unaligned_len_only_at_source_eof(tmp_path, bs):
    img = make_img(tmp_path, bs)
    a, b = _two_files(tmp_path, img, bs, nblk_a=4, nblk_b=8, extra_a=100)
    # unaligned, not ending at the source EOF
    refused(img, f"clone_range /a 0 /b 0 {bs + 100}", "align|EOF|end")
    # ends at the source EOF but inside the destination (b is 8 blocks)
    refused(img, f"clone_range /a {4 * bs} /b 0 100", "align|EOF|end")
    refused(img, f"clone_range /a {3 * bs} /b {6 * bs} {bs + 100}",
            "align|EOF|end")
    # ends at the source EOF and at/after the destination EOF: allowed
    res = dx(img, f"clone_range /a {3 * bs} /b {7 * bs} {bs + 100}")
    assert outputs(res)[0] == [f"linked {bs + 100}/{bs + 100} bytes at "
                               f"offset {7 * bs}"]
    want = b[:7 * bs] + a[3 * bs:]
    assert size_of(img, "/b") == 8 * bs + 100
    assert cat(img, "/b") == want and stock_cat(img, "/b") == want
    # growing the file afterwards shows zeros past the old EOF, not the
    # source block's bytes
    dx(img, f"truncate /b {9 * bs}")
    assert cat(img, "/b") == want + bytes(9 * bs - len(want))
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_clone_same_file_overlap_refused(tmp_path, bs):
    img = make_img(tmp_path, bs)
    _two_files(tmp_path, img, bs)
    refused(img, f"clone_range /a 0 /a 0 {bs}", "overlap")
    refused(img, f"clone_range /a 0 /a {bs} {2 * bs}", "overlap")
    refused(img, f"clone_range /a {2 * bs} /a {bs} {2 * bs}", "overlap")


def test_clone_same_file_non_overlapping(tmp_path, bs):
    img = make_img(tmp_path, bs)
    a, _ = _two_files(tmp_path, img, bs)
    res = dx(img, f"clone_range /a 0 /a {4 * bs} {2 * bs}")
    assert outputs(res)[0] == [f"linked {2 * bs}/{2 * bs} bytes at offset "
                               f"{4 * bs}"]
    want = a[:4 * bs] + a[:2 * bs] + a[6 * bs:]
    assert cat(img, "/a") == want and stock_cat(img, "/a") == want
    pa = pblocks(img, "/a")
    assert pa[4] == pa[0] and pa[5] == pa[1]
    # one file, two mappings of each block: count 2 (mappings, not inodes)
    assert count_of(img, pa[0]) == 2 and count_of(img, pa[1]) == 2
    flags = shared_flags_by_block(img, "/a", bs)
    assert [flags[i] for i in range(8)] == [True, True, False, False,
                                             True, True, False, False]
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_clone_destination_grows_with_hole(tmp_path, bs):
    img = make_img(tmp_path, bs)
    a, b = _two_files(tmp_path, img, bs, nblk_b=2)
    dx(img, "truncate /b 1000")          # unaligned EOF, tail in a block
    res = dx(img, f"clone_range /a 0 /b {5 * bs} {2 * bs}")
    assert outputs(res)[0] == [f"linked {2 * bs}/{2 * bs} bytes at offset "
                               f"{5 * bs}"]
    want = b[:1000] + bytes(5 * bs - 1000) + a[:2 * bs]
    assert size_of(img, "/b") == 7 * bs
    assert cat(img, "/b") == want and stock_cat(img, "/b") == want
    holes = [r for r in fiemap(img, "/b") if r[2] is None]
    assert holes, fiemap(img, "/b")
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_clone_replaced_blocks_lose_a_mapping(tmp_path, bs):
    img = make_img(tmp_path, bs)
    a, b = _two_files(tmp_path, img, bs, nblk_a=4, nblk_b=4)
    dx(img, "reflink /b /c")
    pb = pblocks(img, "/b")
    pa = pblocks(img, "/a")
    assert refcount(img) == [(pb[0], 4, 2)]
    assert all(shared_flags_by_block(img, "/c", bs).values())
    dx(img, f"clone_range /a 0 /b 0 {bs}")
    # b's old block 0 is now mapped by c alone; a's block 0 by a and b
    assert count_of(img, pb[0]) == 1
    assert count_of(img, pa[0]) == 2
    assert shared_flags_by_block(img, "/c", bs) == {0: False, 1: True,
                                                    2: True, 3: True}
    assert shared_flags_by_block(img, "/b", bs) == {0: True, 1: True,
                                                    2: True, 3: True}
    assert cat(img, "/c") == b
    assert cat(img, "/b") == a[:bs] + b[bs:]
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


# ----------------------------------------------------------------------
# dedupe (FIDEDUPERANGE)

def test_dedupe_identical_shares(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(6 * bs, 3)
    h = host(tmp_path, "d", data)
    dx(img, f"write {h} /a", f"write {h} /b")
    assert refcount(img) == []
    res = dx(img, f"dedupe /a {bs} /b {bs} {3 * bs}")
    assert outputs(res)[0] == [f"deduped {3 * bs}/{3 * bs} bytes at offset "
                               f"{bs}"]
    pa, pb = pblocks(img, "/a"), pblocks(img, "/b")
    assert [pb[i] == pa[i] for i in range(6)] == [False, True, True, True,
                                                  False, False]
    want = {0: False, 1: True, 2: True, 3: True, 4: False, 5: False}
    assert shared_flags_by_block(img, "/a", bs) == want
    assert shared_flags_by_block(img, "/b", bs) == want
    assert refcount(img) == [(pa[1], 3, 2)]
    assert cat(img, "/a") == data and cat(img, "/b") == data
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_dedupe_unaligned_len_at_both_eofs(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(3 * bs + 77, 4)
    h = host(tmp_path, "d", data)
    dx(img, f"write {h} /a", f"write {h} /b", f"write {h} /c")
    dx(img, f"truncate /c {4 * bs}")
    # ends at /a's EOF but not at /c's: as the kernel, the length is
    # rounded down to whole blocks (block 2 deduped, the partial block 3
    # left) and the requested length is reported
    res = dx(img, f"dedupe /a {2 * bs} /c {2 * bs} {bs + 77}")
    assert outputs(res)[0] == [f"deduped {bs + 77}/{bs + 77} bytes at "
                               f"offset {2 * bs}"]
    pa, pc = pblocks(img, "/a"), pblocks(img, "/c")
    assert [pa[i] == pc[i] for i in range(4)] == [False, False, True, False]
    assert cat(img, "/c") == data + bytes(bs - 77)
    res = dx(img, f"dedupe /a 0 /b 0 {len(data)}")
    assert outputs(res)[0] == [f"deduped {len(data)}/{len(data)} bytes at "
                               "offset 0"]
    assert pblocks(img, "/a") == pblocks(img, "/b")
    assert cat(img, "/b") == data
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_dedupe_differing_changes_nothing(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(6 * bs, 5)
    other = bytearray(data)
    other[3 * bs + 10] ^= 0xFF            # one byte differs in block 3
    dx(img, f"write {host(tmp_path, 'd', data)} /a",
       f"write {host(tmp_path, 'e', bytes(other))} /b", "reflink /a /c")
    before = (fiemap(img, "/a"), fiemap(img, "/b"), refcount(img))
    res = dx(img, f"dedupe /a 0 /b 0 {6 * bs}")
    assert res.returncode == 0
    assert outputs(res)[0] == ["dedupe: contents differ"]
    assert (fiemap(img, "/a"), fiemap(img, "/b"), refcount(img)) == before
    assert cat(img, "/a") == data and cat(img, "/b") == bytes(other)
    helpers.e2fsck_fn(img)


def test_dedupe_past_eof_refused(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(4 * bs, 6)
    h = host(tmp_path, "d", data)
    dx(img, f"write {h} /a", f"write {h} /b")
    refused(img, f"dedupe /a 0 /b 0 {5 * bs}", "past|end|EOF")
    refused(img, f"dedupe /a {4 * bs} /b 0 {bs}", "past|end|EOF")
    refused(img, f"dedupe /a 0 /b {4 * bs} {bs}", "past|end|EOF")
    refused(img, f"dedupe /a {3 * bs} /b {3 * bs} {2 * bs}", "past|end|EOF")


def test_dedupe_len0_noop(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(4 * bs, 7)
    h = host(tmp_path, "d", data)
    dx(img, f"write {h} /a", f"write {h} /b")
    before = (fiemap(img, "/a"), fiemap(img, "/b"), refcount(img))
    res = dx(img, "dedupe /a 0 /b 0 0")
    assert outputs(res)[0] == ["deduped 0/0 bytes at offset 0"]
    assert (fiemap(img, "/a"), fiemap(img, "/b"), refcount(img)) == before
    assert refcount(img) == []


def test_pwrite_copy_on_write(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(4 * bs, 8)
    dx(img, f"write {host(tmp_path, 'd', data)} /a", "reflink /a /b")
    pa = pblocks(img, "/a")
    res = dx(img, f"pwrite -S 0x5a /b {bs + 10} 20")
    assert outputs(res)[0] == [f"wrote 20/20 bytes at offset {bs + 10}"]
    pb = pblocks(img, "/b")
    assert pb[1] != pa[1] and pb[0] == pa[0] and pb[2] == pa[2]
    assert cat(img, "/a") == data
    want = bytearray(data)
    want[bs + 10:bs + 30] = b"\x5a" * 20
    assert cat(img, "/b") == bytes(want) == stock_cat(img, "/b")
    assert count_of(img, pa[1]) == 1
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


# ----------------------------------------------------------------------
# reflink: copy vs preserve

OLD_TIME = 1000000000     # 2001-09-09


def _times(text):
    return {k: re.search(rf"\b{k}: (0x[0-9a-f]+)", text).group(1)
            for k in ("ctime", "atime", "mtime")}


def test_reflink_copy_vs_preserve(tmp_path):
    bs = 4096
    img = make_img(tmp_path, bs)
    data = rand(5 * bs + 33, 9)
    big = "v" * 3000                      # forces an external xattr block
    dx(img, f"write {host(tmp_path, 'd', data)} /a",
       "chown 1234:5678 /a", "chmod 754 /a",
       "setxattr /a user.note hello",
       "setxattr /a security.label sec",
       f"setxattr /a user.big {big}")
    helpers.run(["debugfs", "-w", "-f", "-", str(img)], input="".join(
        f"set_inode_field /a {t} @{OLD_TIME}\n"
        for t in ("atime", "mtime", "ctime")))
    src = stock_stat(img, "/a")
    acl = int(stat_field(src, "File ACL"))
    assert acl != 0, "a 3000-byte value should need an external xattr block"

    def h_refcount(block):
        with open(img, "rb") as f:
            f.seek(block * bs)
            blk = f.read(bs)
        assert struct.unpack_from("<I", blk, 0)[0] == 0xEA020000
        return struct.unpack_from("<I", blk, 4)[0]
    assert h_refcount(acl) == 1

    dx(img, "reflink /a /copy", umask=0o027)
    dx(img, "reflink -p /a /snap", umask=0o027)

    cp = stock_stat(img, "/copy")
    sn = stock_stat(img, "/snap")
    # copy: invoking user, mode & ~umask, fresh times, no xattrs
    assert (stat_field(cp, "User"), stat_field(cp, "Group")) == ("0", "0")
    assert stat_field(cp, "Mode") == "0750", cp
    assert all(v != hex(OLD_TIME) for v in _times(cp).values()), cp
    assert int(stat_field(cp, "File ACL")) == 0
    lx = dx(img, "listxattr /copy", write=False)
    assert outputs(lx)[0] == [], lx.stdout
    # preserve: owner, mode, times and xattrs kept; xattr block shared
    assert (stat_field(sn, "User"), stat_field(sn, "Group")) == \
        ("1234", "5678")
    assert stat_field(sn, "Mode") == "0754", sn
    assert _times(sn)["mtime"] == _times(sn)["atime"] == hex(OLD_TIME), sn
    assert _times(sn)["ctime"] == hex(OLD_TIME), sn
    lx = dx(img, "listxattr /a", "listxattr /snap", write=False)
    la, ls_ = outputs(lx)
    assert sorted(la) == sorted(ls_) and len(la) == 3, lx.stdout
    assert dx(img, "getxattr /snap user.big",
              write=False).stdout.count(big) == 1
    assert int(stat_field(sn, "File ACL")) == acl
    assert h_refcount(acl) == 2
    for p in ("/a", "/copy", "/snap"):
        assert cat(img, p) == data
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)
    # removing the snapshot gives the xattr block back to one owner
    dx(img, "rm /snap")
    assert h_refcount(acl) == 1
    helpers.e2fsck_fn(img)


# ----------------------------------------------------------------------
# recursive reflink

def test_reflink_recursive_tree(tmp_path, bs, loop_mount):
    img = make_img(tmp_path, bs)
    f1, f2 = rand(3 * bs + 5, 10), rand(bs // 2, 11)
    slow = "/very/long/target/" + "x" * 80          # > 60 bytes: slow link
    dx(img, "mkdir /d", "mkdir /d/sub", "mkdir /d/sub/deep",
       f"write {host(tmp_path, 'f1', f1)} /d/f1",
       f"write {host(tmp_path, 'f2', f2)} /d/sub/deep/f2",
       "symlink /d/fast f1", f"symlink /d/sub/slow {slow}")
    # a hard link and device nodes, with stock debugfs
    helpers.run(["debugfs", "-w", "-f", "-", str(img)], input=(
        "ln /d/f1 /d/sub/hard\n"
        "set_inode_field /d/f1 links_count 2\n"
        "cd /d\n"
        "mknod fifo p\n"
        "cd /d/sub\n"
        "mknod null c 1 3\n"))
    helpers.e2fsck_fn(img)
    res = dx(img, "reflink -r /d /e")
    assert "linked directory tree /d to /e" in res.stdout
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)
    e = stock_stat(img, "/e/f1")
    assert stat_field(e, "Links") == "2", e
    assert stock_stat(img, "/e/sub/hard").split("\n")[0] == e.split("\n")[0]
    assert "Fast link dest" in stock_stat(img, "/e/fast")
    assert pblocks(img, "/e/f1") == pblocks(img, "/d/f1")
    assert cat(img, "/e/f1") == f1 and cat(img, "/e/sub/deep/f2") == f2

    mnt, _ = loop_mount(img)
    for top in ("d", "e"):
        r = mnt / top
        a, b = os.stat(r / "f1"), os.stat(r / "sub" / "hard")
        assert a.st_ino == b.st_ino and a.st_nlink == 2
        assert (r / "f1").read_bytes() == f1
        assert (r / "sub/deep/f2").read_bytes() == f2
        assert os.readlink(r / "fast") == "f1"
        assert os.readlink(r / "sub/slow") == slow
        assert st.S_ISFIFO(os.lstat(r / "fifo").st_mode)
        n = os.lstat(r / "sub/null")
        assert st.S_ISCHR(n.st_mode) and os.major(n.st_rdev) == 1 \
            and os.minor(n.st_rdev) == 3
    assert os.stat(mnt / "d/f1").st_ino != os.stat(mnt / "e/f1").st_ino


# ----------------------------------------------------------------------
# ENOSPC during copy-on-write

def test_enospc_during_cow(tmp_path):
    bs = 1024
    img = make_img(tmp_path, bs, size="8M")
    n = 300
    data = rand(n * bs, 12)
    dx(img, f"write {host(tmp_path, 'd', data)} /a", "reflink /a /b")
    # fill the image until fewer than n blocks are free
    chunk = rand(512 * bs, 13)
    i = 0
    while opsmodel.free_blocks(img) > 700:
        dx(img, f"write {host(tmp_path, 'c', chunk)} /fill{i}")
        i += 1
    free = opsmodel.free_blocks(img)
    if free >= n:
        dx(img, f"write {host(tmp_path, 'c', chunk[:(free - n // 2) * bs])} "
           f"/fill{i}")
    free = opsmodel.free_blocks(img)
    assert free < n, free
    before = (fiemap(img, "/a"), fiemap(img, "/b"), refcount(img),
              opsmodel.free_blocks(img))
    res = dx1(img, f"pwrite /b 0 {n * bs}")
    assert res.returncode != 0, helpers.describe(res)
    assert re.search(r"space|ENOSPC|alloc", res.stderr, re.I), \
        helpers.describe(res)
    assert cat(img, "/b") == data and cat(img, "/a") == data
    assert (fiemap(img, "/a"), fiemap(img, "/b"), refcount(img),
            opsmodel.free_blocks(img)) == before
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


# ----------------------------------------------------------------------
# refusals: inode flags, quota

@pytest.mark.parametrize("flag", [0x800, 0x100000, 0x40000000],
                         ids=["encrypt", "verity", "casefold"])
def test_flagged_inode_refused(tmp_path, flag):
    bs = 4096
    img = make_img(tmp_path, bs)
    data = rand(2 * bs, 14)
    dx(img, f"write {host(tmp_path, 'd', data)} /a",
       f"write {host(tmp_path, 'd', data)} /other")
    flags = int(stat_field(stock_stat(img, "/a"), "Flags"), 16)
    helpers.run(["debugfs", "-w", "-R",
                 f"set_inode_field /a flags 0x{flags | flag:x}", str(img)])
    pat = r"encrypt|verity|casefold"
    for req in ("pwrite /a 0 10", "reflink /a /b", "reflink -p /a /b",
                "rm /a", "truncate /a 0", "punch /a 0 100", "unshare /a",
                f"clone_range /a 0 /other 0 {bs}",
                f"clone_range /other 0 /a 0 {bs}",
                f"dedupe /other 0 /a 0 {bs}"):
        refused(img, req, pat)


def test_quota_feature_kept(tmp_path):
    """An image given quota by tune2fs is modifiable; every request keeps
    the quota files' usage true (stock e2fsck checks it; test_quota.py
    compares it with the inodes)."""
    img = make_img(tmp_path, 4096)
    data = rand(8192, 15)
    dx(img, f"write {host(tmp_path, 'd', data)} /a", "mkdir /dir",
       "reflink /a /b")
    # tune2fs accepts quota on an extref image (checked on e2fsprogs 1.47)
    helpers.run(["tune2fs", "-O", "quota", str(img)])
    assert "quota" in helpers.dumpe2fs_features(img)
    helpers.e2fsck_fn(img)
    h = host(tmp_path, "d", data)
    for req in (f"write {h} /n", "mkdir /m", "symlink /s a",
                "reflink /a /c", "reflink -r /dir /dir2",
                "clone_range /a 0 /b 0 0", "dedupe /a 0 /b 0 4096",
                "pwrite /a 0 1", "truncate /a 1", "punch /a 0 1",
                "unshare /a", "chmod 600 /a", "chown 1:1 /a",
                "setxattr /a user.x y", "rm /a", "rmdir /dir"):
        dx(img, req)
        helpers.e2fsck_fn(img)


# ----------------------------------------------------------------------
# sparse and large files

def test_sparse_pwrite_leaves_hole(tmp_path, bs):
    img = make_img(tmp_path, bs)
    data = rand(bs + 10, 16)
    dx(img, f"write {host(tmp_path, 'd', data)} /a")
    off = 1 << 20
    dx(img, f"pwrite -S 0x77 /a {off} 100")
    rows = fiemap(img, "/a")
    holes = [r for r in rows if r[2] is None]
    assert holes, rows
    assert any(s * 512 <= 4 * bs and (e + 1) * 512 >= off - bs
               for s, e, _, _ in holes), rows
    want = data + bytes(off - len(data)) + b"\x77" * 100
    assert size_of(img, "/a") == off + 100
    assert cat(img, "/a") == want == stock_cat(img, "/a")
    # only the two written ranges are mapped
    assert len(pblocks(img, "/a")) == 3
    helpers.e2fsck_fn(img)


def test_file_over_4gib(tmp_path, bs, loop_mount):
    img = make_img(tmp_path, bs)
    off = 5 << 30
    dx(img, f"write {host(tmp_path, 'empty', b'')} /big", f"pwrite -S 0xab /big {off} 10",
       "reflink /big /copy", "pwrite -S 0xcd /copy 4096 1")
    for p in ("/big", "/copy"):
        assert size_of(img, p) == off + 10
    pb, pc = pblocks(img, "/big"), pblocks(img, "/copy")
    lblk = off // bs
    assert pb[lblk] == pc[lblk] and count_of(img, pb[lblk]) == 2
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)
    mnt, _ = loop_mount(img)
    for p, head in (("big", b"\0"), ("copy", b"\xcd")):
        with open(mnt / p, "rb") as f:
            f.seek(4096)
            assert f.read(1) == head
            f.seek(off - 5)
            assert f.read() == b"\0" * 5 + b"\xab" * 10
        assert os.stat(mnt / p).st_size == off + 10


# ----------------------------------------------------------------------
# product bugs found by test_ops_model.py, reduced

def test_raise_below_smallest_key_of_deep_tree(tmp_path):
    bs = 1024
    img = make_img(tmp_path, bs, size="16M")
    small, big = rand(2048, 17), rand(300 * bs, 18)
    cmds = [f"write {host(tmp_path, 's', small)} /a",
            f"write {host(tmp_path, 's', small)} /spacer",
            f"write {host(tmp_path, 'b', big)} /big", "reflink /big /big2"]
    cmds += [f"punch /big2 {i * bs} {bs}" for i in range(1, 300, 2)]
    dx(img, *cmds)
    assert len(refcount(img)) == 150        # a tree of depth 2 on 1K blocks
    assert pblocks(img, "/a")[0] < refcount(img)[0][0]
    res = dx1(img, "reflink /a /a2")
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_punch_first_extent_of_deep_extent_tree(tmp_path):
    bs = 4096
    img = make_img(tmp_path, bs, size="16M")
    data = rand(10 * bs, 19)
    cmds = [f"write {host(tmp_path, 'd', data)} /a"]
    cmds += [f"punch /a {i * bs} {bs}" for i in (1, 3, 5, 7, 9)]
    dx(img, *cmds)
    assert "0/ 1" in helpers.debugfs(img, "ex /a").stdout   # depth 1
    dx(img, f"punch /a 0 {bs}")
    want = bytearray(data)
    for i in (0, 1, 3, 5, 7, 9):
        want[i * bs:(i + 1) * bs] = bytes(bs)
    assert cat(img, "/a") == bytes(want)
    helpers.e2fsck_fn(img)


# ----------------------------------------------------------------------
# extents at the maximum length (32768 blocks)

def test_extents_at_maximum_length(tmp_path):
    """A 312 MiB file on 4 KiB blocks is mapped by extents of 32768 blocks:
    reflink it, clone across the extent boundary, write copy-on-write
    into the middle of the long extent; lengths never exceed the limit
    and every byte reads as the model says."""
    bs = 4096
    img = make_img(tmp_path, bs, size="1G")
    nblk = 80000
    dx(img, f"write {host(tmp_path, 'empty', b'')} /big",
       f"pwrite -S 0x61 /big 0 {nblk * bs}")
    ext = [int(m) for m in re.findall(r"len (\d+)", dx1(img, "stat /big",
                                                        write=False).stdout)]
    assert max(ext) == 32768 and all(n <= 32768 for n in ext), ext
    boundary = 32768 * bs
    dx(img, "reflink /big /copy",
       f"pwrite -S 0x62 /copy {boundary - 2 * bs} {4 * bs}",
       f"clone_range /big {boundary - 8 * bs} /copy 0 {16 * bs}")
    model = bytearray(b"\x61" * (nblk * bs))
    model[boundary - 2 * bs:boundary + 2 * bs] = b"\x62" * (4 * bs)
    assert stock_cat(img, "/big") == b"\x61" * (nblk * bs)
    assert stock_cat(img, "/copy") == bytes(model)
    for path in ("/big", "/copy"):
        lens = [int(m) for m in re.findall(
            r"len (\d+)", dx1(img, f"stat {path}", write=False).stdout)]
        assert all(n <= 32768 for n in lens), (path, lens)
    helpers.e2fsck_fn(img)
    recount_ok(img, tmp_path)


def test_refusals_leave_an_inline_file_as_it_was(tmp_path):
    """A refused punch, unshare, truncate or pwrite of an inline-data file
    (range rules, permissions) changes nothing: the file is not first made
    extent-mapped."""
    img = tmp_path / "inline.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-I",
                 "256", "-O", "inline_data", str(img), "16M"])
    small = tmp_path / "small"
    small.write_bytes(b"inline bytes\n" * 7)
    helpers.run(["debugfs", "-w", "-R", f"write {small} /s", str(img)])
    helpers.mkfs(img, None, "-q", "--convert")
    assert "Size of inline data" in stock_stat(img, "/s")
    before = helpers.sha256(img)
    for req in ("punch /s 0 0", "unshare /s 0 0",
                f"truncate /s {1 << 50}", f"pwrite /s {1 << 50} 1"):
        res = dx(img, req, check=False)
        assert res.returncode != 0, helpers.describe(res)
        assert helpers.sha256(img) == before, req
    res = helpers.run([helpers.binary("debugfs.extref"), "-w", "--as",
                       "1000:1000", "-R", "pwrite /s 0 1", str(img)],
                      check=False)
    assert res.returncode != 0 and "(EACCES)" in res.stderr, \
        helpers.describe(res)
    assert helpers.sha256(img) == before
    assert "Size of inline data" in stock_stat(img, "/s")
    dx(img, "punch /s 0 4096")          # allowed: made extent-mapped
    assert "Size of inline data" not in stock_stat(img, "/s")
    helpers.e2fsck_fn(img)
