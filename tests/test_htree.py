"""Indexed (htree) directories: a directory the operations fill past one
block becomes indexed, as the kernel makes it, and names are looked up
through the index (libfs/ops/htree.c).

Oracles nobody here wrote: stock e2fsck -fn checks every htree (hash
order of the leaves, the index's limits and checksums); stock debugfs
`htree` dumps the index; the kernel, through a read-only loop mount,
looks every name up through the index and reads the files back.
dirscan.py reads the directory blocks for bytes no entry uses that are
not zero (libext2fs's leaf split leaves heap contents there; a removal
leaves the name).
"""

import os
import re
import struct
import subprocess

import pytest

import crashlib
import dirscan
import helpers

N = 2500
NAME = "file-with-a-longish-name-{}"


def shell(img, cmds, tmp_path):
    script = tmp_path / "cmds"
    script.write_text("\n".join(cmds) + "\n")
    return subprocess.run([helpers.binary("debugfs.extref"), "-w", "-f",
                           str(script), str(img)], capture_output=True,
                          text=True, timeout=600)


def dir_flags(img, path):
    out = helpers.debugfs(img, f"stat {path}").stdout
    return int(re.search(r"Flags: (0x[0-9a-f]+)", out)[1], 16)


@pytest.fixture(params=[pytest.param(bs, marks=pytest.mark.slow)
                        for bs in (1024, 4096)], ids=["1k", "4k"])
def big_dir(request, tmp_path):
    """/d holding N reflinks of /f (about 50 bytes of entry each)."""
    img = tmp_path / "h.img"
    helpers.mkfs(img, "64M", "-q", "-b", str(request.param))
    src = tmp_path / "src"
    src.write_bytes(os.urandom(5000))
    cmds = [f"write {src} /f", "mkdir /d"]
    cmds += [f"reflink /f /d/{NAME.format(i)}" for i in range(N)]
    res = shell(img, cmds, tmp_path)
    assert res.returncode == 0, helpers.describe(res)
    return img, src.read_bytes(), request.param


def test_directory_becomes_indexed_and_checks_clean(big_dir, tmp_path):
    img, data, bs = big_dir
    assert dir_flags(img, "/d") & 0x1000, "/d has no htree index"
    out = helpers.debugfs(img, "htree /d").stdout
    levels = int(re.search(r"Indirect levels: (\d+)", out)[1])
    if bs == 1024:
        assert levels >= 1, out[:400]    # the index itself grew a level
    helpers.e2fsck_fn(img)
    assert dirscan.stale_bytes(img) == []
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt):
        names = sorted(os.listdir(mnt / "d"))
        assert names == sorted(NAME.format(i) for i in range(N))
        for i in range(0, N, 97):
            assert (mnt / "d" / NAME.format(i)).read_bytes() == data


def test_every_existing_name_is_found(big_dir, tmp_path):
    """Through the index: every name is there (reflinking onto it again
    fails), and names that are not there can still be made: files,
    directories and symlinks (libext2fs makes those entries), enough to
    split leaves, leaving no stale byte."""
    img, _, _ = big_dir
    res = shell(img, [f"reflink /f /d/{NAME.format(i)}" for i in range(N)],
                tmp_path)
    assert res.returncode != 0
    assert res.stderr.count("File exists") == N, res.stderr[-2000:]
    cmds = [f"reflink /f /d/other-{i}" for i in range(300)]
    cmds += [f"mkdir /d/dir-{NAME.format(i)}" for i in range(150)]
    cmds += [f"symlink /d/ln-{NAME.format(i)} /f" for i in range(150)]
    res = shell(img, cmds, tmp_path)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    assert dirscan.stale_bytes(img) == []
    out = helpers.debugfs(img, "ls /d").stdout
    assert len(re.findall(r"\bother-\d+\b", out)) == 300
    assert len(re.findall(r"\bdir-file-\S+", out)) == 150
    assert len(re.findall(r"\bln-file-\S+", out)) == 150


def test_removal_from_an_indexed_directory(big_dir, tmp_path):
    img, _, _ = big_dir
    gone = list(range(0, N, 3))
    res = shell(img, [f"rm /d/{NAME.format(i)}" for i in gone], tmp_path)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    assert dirscan.stale_bytes(img) == []
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt):
        left = set(os.listdir(mnt / "d"))
    assert left == {NAME.format(i) for i in range(N) if i % 3}


def _set_dx_csum(img, path, block):
    """The dx root's checksum recomputed (ext4's dx_tail: crc32c of the
    inode number, its generation, the block up to the last used entry,
    dt_reserved and a zero checksum), so that the image's only damage is
    the field changed: a writer refuses blocks whose checksum fails."""
    st = helpers.debugfs(img, f"stat {path}").stdout
    ino = int(re.search(r"Inode: (\d+)", st)[1])
    gen = int(re.search(r"Generation: (\d+)", st)[1])
    limit, count = struct.unpack_from("<HH", block, 32)
    tail = 32 + limit * 8
    crc = helpers.crc32c_le(helpers.csum_seed(img), struct.pack("<I", ino))
    crc = helpers.crc32c_le(crc, struct.pack("<I", gen))
    crc = helpers.crc32c_le(crc, bytes(block[:32 + count * 8]))
    crc = helpers.crc32c_le(crc, bytes(block[tail:tail + 4]) + bytes(4))
    struct.pack_into("<I", block, tail + 4, crc)


def test_damaged_index_falls_back_to_a_full_scan(big_dir, tmp_path):
    """A root whose hash version libext2fs does not know: lookups cannot
    use the index, and still find every name (a full scan)."""
    img, _, bs = big_dir
    out = helpers.debugfs(img, "bmap /d 0").stdout.strip()
    with open(img, "r+b") as f:
        f.seek(int(out) * bs)
        block = bytearray(f.read(bs))
        block[24 + 4] = 7                       # dx_root_info.hash_version
        _set_dx_csum(img, "/d", block)
        f.seek(int(out) * bs)
        f.write(block)
    res = shell(img, [f"reflink /f /d/{NAME.format(i)}"
                      for i in range(0, N, 7)], tmp_path)
    assert res.stderr.count("File exists") == len(range(0, N, 7)), \
        res.stderr[-2000:]


def test_small_directories_stay_linear(tmp_path):
    img = tmp_path / "s.img"
    helpers.mkfs(img, "16M", "-q")
    src = tmp_path / "src"
    src.write_bytes(b"x" * 100)
    res = shell(img, [f"write {src} /f", "mkdir /d"] +
                [f"reflink /f /d/n{i}" for i in range(20)], tmp_path)
    assert res.returncode == 0, helpers.describe(res)
    assert not dir_flags(img, "/d") & 0x1000
    helpers.e2fsck_fn(img)


def _names(img, path):
    out = helpers.debugfs(img, f"ls {path}").stdout
    return re.findall(r"\b(name-number-\d+)\b", out)


@pytest.mark.crash
@pytest.mark.slow
def test_crash_while_a_directory_becomes_indexed(tmp_path):
    """The reflink that makes a directory indexed, crashed after every
    one of its writes (libfs/txn/faultio.c): after fsck.extref -y (e2fsck
    first), both checkers are clean and the directory holds every old
    name once, plus the new one or not, with nothing in lost+found.
    Needs a build with configure --enable-fault-injection (else skips)."""
    reason = helpers.fault_injection_skip_reason()
    if reason:
        pytest.skip(reason)
    img = tmp_path / "base.img"
    helpers.mkfs(img, "16M", "-q", "-b", "1024")
    src = tmp_path / "s"
    src.write_bytes(b"hi\n")
    res = shell(img, [f"write {src} /f", "mkdir /d"], tmp_path)
    assert res.returncode == 0, helpers.describe(res)
    dbg = helpers.binary("debugfs.extref")
    # add names until the next one would make /d indexed
    n = 0
    while True:
        trial = tmp_path / "trial.img"
        trial.write_bytes(img.read_bytes())
        helpers.run([dbg, "-w", "-R", f"reflink /f /d/name-number-{n}",
                     str(trial)])
        if dir_flags(trial, "/d") & 0x1000:
            break
        img.write_bytes(trial.read_bytes())
        n += 1
        assert n < 500
    old = {f"name-number-{i}" for i in range(n)}
    new = f"name-number-{n}"
    req = f"reflink /f /d/{new}"
    fsck = helpers.binary("fsck/fsck.extref")

    def oracle(t, how):
        res = subprocess.run([fsck, "-y", "-f", str(t)],
                             capture_output=True, text=True)
        if res.returncode not in (0, 1):
            return [helpers.describe(res)]
        probs = crashlib.checkers_clean(t)
        names = _names(t, "/d")
        if len(names) != len(set(names)):
            probs.append("duplicates")
        if set(names) - {new} != old:
            probs.append("names lost")
        if re.search(r"#\d+", helpers.debugfs(t, "ls /lost+found").stdout):
            probs.append("lost+found")
        return probs
    swept = crashlib.sweep(img, crashlib.request_op(req), oracle, tmp_path,
                           1 << 30, faults=crashlib.only("crash"),
                           replayers=(None,), stop_after=1)
    assert swept.writes > 4
    swept.assert_clean(req)


def _set_leaf_csum(img, path, block):
    """A linear block's tail checksum recomputed (crc32c of the inode
    number, its generation and the block up to the 12-byte tail)."""
    st = helpers.debugfs(img, f"stat {path}").stdout
    ino = int(re.search(r"Inode: (\d+)", st)[1])
    gen = int(re.search(r"Generation: (\d+)", st)[1])
    bs = len(block)
    assert struct.unpack_from("<IHBB", block, bs - 12) == (0, 12, 0, 0xDE)
    crc = helpers.crc32c_le(helpers.csum_seed(img), struct.pack("<I", ino))
    crc = helpers.crc32c_le(crc, struct.pack("<I", gen))
    crc = helpers.crc32c_le(crc, bytes(block[:bs - 12]))
    struct.pack_into("<I", block, bs - 4, crc)


@pytest.mark.parametrize("damage", ["name_past_record", "no_dot"])
def test_indexing_a_corrupt_block_refused(tmp_path, damage):
    """xr_dx_make_indexed on a one-block directory whose entry claims a
    name longer than its record (255 bytes: it was read past the record,
    and past the block for the last one), or whose first entry is not
    ".": refused as corrupt, nothing written (tests/unit/dir_ops calls
    it directly; the operations run ext2fs_link first, which fails on
    such a block, so only a direct call reaches it)."""
    img = tmp_path / "c.img"
    helpers.mkfs(img, "16M", "-q", "-b", "1024")
    src = tmp_path / "src"
    src.write_bytes(b"x" * 100)
    res = shell(img, [f"write {src} /f", "mkdir /d"] +
                [f"reflink /f /d/n{i:03d}" for i in range(40)], tmp_path)
    assert res.returncode == 0, helpers.describe(res)
    assert not dir_flags(img, "/d") & 0x1000
    pblk = int(helpers.debugfs(img, "bmap /d 0").stdout)
    with open(img, "r+b") as f:
        f.seek(pblk * 1024)
        block = bytearray(f.read(1024))
        if damage == "no_dot":
            block[8] = ord("x")             # "." -> "x"
        else:
            off = 24                        # the first entry after ".."
            rec = struct.unpack_from("<H", block, off + 4)[0]
            assert rec < 255 + 8
            block[off + 6] = 255            # name_len
        _set_leaf_csum(img, "/d", block)
        f.seek(pblk * 1024)
        f.write(block)
    digest = helpers.sha256(img)
    res = subprocess.run([helpers.binary("tests/unit/dir_ops"), str(img),
                          "index", "/d"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 1, helpers.describe(res)
    assert "directory corrupted" in res.stderr
    assert helpers.sha256(img) == digest
