"""The journal replay writes only what its scan verified (issue 22 part 2).

Logs are crafted with valid jbd2 checksum-v3 records (tests/jbd2craft.py)
so that each test holds exactly one kind of damage; each is compared
with what stock e2fsck does with the same log on a copy.
"""

import os
import re
import shutil
import struct

import pytest

import helpers as H
import jbd2craft as J
from crc32c import crc32c_le

FILE_BYTES = bytes(range(256)) * 16          # 4 KiB, four 1 KiB blocks


def dfs(img, *args, check=False):
    return H.run([H.binary("debugfs.extref"), *args, str(img)], check=check)


def fsck(img, *args):
    return H.run([H.binary("fsck/fsck.extref"), *args, str(img)], check=False)


@pytest.fixture
def image(tmp_path):
    """An extref image (1 KiB blocks, metadata_csum) with /f, 4 blocks."""
    img = tmp_path / "x.img"
    H.mkfs(img, "64M")
    host = tmp_path / "host.bin"
    host.write_bytes(FILE_BYTES)
    H.run(["debugfs", "-w", "-R", f"write {host} f", str(img)])
    return str(img)


def file_blocks(img):
    out = H.debugfs(img, "blocks /f").stdout
    return [int(x) for x in out.split()]


def snapshot(img):
    with open(img, "rb") as f:
        return f.read()


def stock_copy(img, tmp_path):
    """Stock e2fsck -fy on a copy: (result, copy's bytes)."""
    copy = str(tmp_path / "stock.img")
    shutil.copy(img, copy)
    res = H.run(["e2fsck", "-fy", copy], check=False)
    return res, snapshot(copy)


def block_of(data, blk, bs=1024):
    return data[blk * bs:(blk + 1) * bs]


def assert_refused_untouched(img, before, res, *words):
    assert res.returncode != 0, H.describe(res)
    assert res.returncode < 128, H.describe(res)      # no crash
    assert snapshot(img) == before, "the image was written"
    for w in words:
        assert w in res.stderr + res.stdout, H.describe(res)


# ----- a log that verifies: the views and the writers agree -----

def test_verified_log_views_and_replays_match_stock(image, tmp_path):
    blk = file_blocks(image)[1]
    new = b"N" * 1024
    log = J.Log(image)
    t = log.transaction()
    t.block(blk, new)
    log.commit(t)
    log.write()
    before = snapshot(image)

    shown = H.run([H.binary("debugfs.extref"), "-R", "cat /f", image],
                  text=False)
    assert shown.stdout[1024:2048] == new
    assert b"in memory only" in shown.stderr
    assert b"(1 transaction)" in shown.stderr
    raw = H.run([H.binary("debugfs.extref"), "--no-replay", "-R", "cat /f",
                 image], text=False)
    assert raw.stdout == FILE_BYTES
    assert b"as it is on disk" in raw.stderr
    res = fsck(image, "-n", "-E", "no_replay")
    assert "checked as it is on disk" in res.stdout, H.describe(res)
    assert snapshot(image) == before

    stock, stock_bytes = stock_copy(image, tmp_path)
    assert stock.returncode in (0, 1), H.describe(stock)
    res = dfs(image, "-w", "-R", "ls", check=True)
    assert "recovered the journal (1 transaction replayed by " \
           "debugfs.extref" in res.stderr
    assert block_of(snapshot(image), blk) == new == \
        block_of(stock_bytes, blk)
    H.e2fsck_fn(image)


def test_no_replay_is_for_read_only_opens(image):
    res = dfs(image, "-w", "--no-replay", "-R", "ls")
    assert res.returncode == 1 and "read-only" in res.stderr
    res = fsck(image, "-y", "-E", "no_replay")
    assert res.returncode == 16 and "needs -n" in res.stderr


# ----- a log whose first transaction overwrites the second's descriptor -----

def test_log_overwriting_its_own_descriptor_writes_nothing(image, tmp_path):
    """Transaction 1 logs the journal block holding transaction 2's
    descriptor, with a descriptor naming a block past the end: replayed
    in order and read back, the log would grow the image."""
    log = J.Log(image)
    t1 = log.transaction()
    fake, _ = log._descriptor(J.Transaction(t1.tid + 1),
                              [(65536 + 200, b"Y" * 1024)])
    # t1: descriptor, one copy, commit; t2's descriptor comes next
    t1.block(log.pblk(log.first + 3), bytes(fake))
    log.commit(t1)
    t2 = log.transaction()
    t2.block(file_blocks(image)[0], b"Z" * 1024)
    log.commit(t2)
    log.write()
    before = snapshot(image)

    res = dfs(image, "-w", "-R", "ls")
    assert_refused_untouched(image, before, res, "transaction 1",
                             "a block of the log being replayed")
    res = H.run([H.binary("tests/unit/journal_tool"), image, "recover"],
                check=False)
    assert_refused_untouched(image, before, res,
                             "inside the log being replayed")
    res = dfs(image, "-R", "ls -l /")
    assert res.returncode == 0, H.describe(res)
    assert "showing the image as it is on disk" in res.stderr
    assert snapshot(image) == before

    stock, stock_bytes = stock_copy(image, tmp_path)
    assert "Invalid checksum recovering data block" in stock.stdout + \
        stock.stderr, H.describe(stock)
    assert len(stock_bytes) == len(before)


def test_log_naming_a_block_past_the_end_writes_nothing(image):
    log = J.Log(image)
    t = log.transaction()
    t.block(65536 + 100, b"X" * 1024)
    log.commit(t)
    log.write()
    before = snapshot(image)
    res = dfs(image, "-w", "-R", "ls")
    assert_refused_untouched(image, before, res, "transaction 1",
                             "past the filesystem's end")
    res = fsck(image, "-n")
    assert res.returncode == 4, H.describe(res)
    assert "cannot be replayed" in res.stdout
    assert snapshot(image) == before


# ----- revoke blocks -----

def _revoke_log(image, commit_ok):
    a, b = file_blocks(image)[:2]
    log = J.Log(image)
    t1 = log.transaction()
    t1.block(a, b"Q" * 1024)
    log.commit(t1)
    t2 = log.transaction()
    t2.block(b, b"R" * 1024)
    t2.revokes.append(a)
    t2.revoke_count = 5000            # past the block: impossible
    log.commit(t2, commit_ok=commit_ok)
    log.write()
    return a, b


def test_bad_revoke_in_committed_transaction_is_an_error(image, tmp_path):
    _revoke_log(image, commit_ok=True)
    before = snapshot(image)
    res = dfs(image, "-w", "-R", "ls")
    assert_refused_untouched(image, before, res, "transaction 2",
                             "r_count")
    res = dfs(image, "-R", "logdump")
    assert "r_count invalid" in res.stdout, H.describe(res)
    stock, _ = stock_copy(image, tmp_path)
    assert "while recovering journal" in stock.stderr + stock.stdout, \
        H.describe(stock)


def test_bad_revoke_in_torn_transaction_ends_the_log(image, tmp_path):
    a, b = _revoke_log(image, commit_ok=False)
    stock, stock_bytes = stock_copy(image, tmp_path)
    res = dfs(image, "-w", "-R", "ls", check=True)
    assert "1 transaction replayed" in res.stderr, H.describe(res)
    ours = snapshot(image)
    assert block_of(ours, a) == b"Q" * 1024 == block_of(stock_bytes, a)
    assert block_of(ours, b) == FILE_BYTES[1024:2048] == \
        block_of(stock_bytes, b)
    H.e2fsck_fn(image)


# ----- a replayed superblock is validated before use -----

def _log_block_size(sb):
    struct.pack_into("<I", sb, 24, 2)


def _desc_size(sb):
    struct.pack_into("<H", sb, 0xFE, 0x4000)


def _blocks_x100(sb):
    n = struct.unpack_from("<I", sb, 4)[0] * 100
    struct.pack_into("<I", sb, 4, n & 0xFFFFFFFF)
    struct.pack_into("<I", sb, 0x150, n >> 32)


@pytest.mark.parametrize("damage", [_log_block_size, _desc_size,
                                    _blocks_x100],
                         ids=["log_block_size", "desc_size", "blocks_x100"])
def test_logged_superblock_is_validated(image, tmp_path, damage):
    sb = bytearray(snapshot(image)[1024:2048])
    damage(sb)
    struct.pack_into("<I", sb, 1020, crc32c_le(0xFFFFFFFF, bytes(sb[:1020])))
    log = J.Log(image)
    t = log.transaction()
    t.block(1, bytes(sb))             # the superblock's block (1 KiB)
    log.commit(t)
    log.write()
    before = snapshot(image)

    for req in ("ls -l /", "icheck 100", "stat /f"):
        res = dfs(image, "-R", req)
        assert res.returncode == 0, H.describe(res)
        assert "cannot be replayed" in res.stderr, H.describe(res)
        assert "the replayed superblock" in res.stderr, H.describe(res)
    res = fsck(image, "-n")
    assert res.returncode == 4, H.describe(res)
    assert "cannot be replayed" in res.stdout, H.describe(res)
    res = dfs(image, "-w", "-R", "ls")
    assert_refused_untouched(image, before, res, "transaction 1")
    assert snapshot(image) == before

    stock, _ = stock_copy(image, tmp_path)       # replays it, then fails
    assert stock.returncode & 8, H.describe(stock)


# ----- a journal whose blocks are another file's -----

def _file_in_journal(img):
    """Point /f's extent at journal blocks 100..103 (outside the empty
    log) and put its bytes there (stock debugfs: i_block[5] is the first
    extent's start, low 32 bits): the journal and /f share 4 blocks."""
    log = J.Log(img)
    first = log.pblk(100)
    assert [log.pblk(100 + i) for i in range(4)] == \
        list(range(first, first + 4))
    H.run(["debugfs", "-w", "-R", f"sif /f block[5] {first}", img])
    with open(img, "r+b") as f:
        f.seek(first * 1024)
        f.write(FILE_BYTES)
    assert file_blocks(img) == list(range(first, first + 4))
    return first


def test_journal_over_a_file_is_refused_by_writers(image, tmp_path):
    _file_in_journal(image)
    before = snapshot(image)
    res = dfs(image, "-w", "-R", "mkdir /d")
    assert_refused_untouched(image, before, res, "journal")
    assert H.debugfs_cat(image, "/f") == FILE_BYTES
    copy = str(tmp_path / "stock.img")
    shutil.copy(image, copy)
    H.run(["e2fsck", "-fy", copy], check=False)
    assert H.debugfs_cat(copy, "/f") == FILE_BYTES
    os.unlink(copy)


def test_journal_over_a_file_is_repaired_by_fsck(image):
    """fsck.extref clears the journal as e2fsck clears an invalid
    journal inode, and makes a new one: /f keeps its bytes, the new
    journal takes new blocks, writers work again."""
    _file_in_journal(image)
    res = fsck(image, "-fn")
    assert res.returncode == 4 and "0x0005 " in res.stdout, H.describe(res)
    res = fsck(image, "-fy")
    assert res.returncode == 1, H.describe(res)
    assert "journal has been regenerated" in res.stdout, H.describe(res)
    assert H.debugfs_cat(image, "/f") == FILE_BYTES
    assert not set(file_blocks(image)) & H.journal_blocks(image)
    H.e2fsck_fn(image)
    dfs(image, "-w", "-R", "mkdir /d", check=True)
    assert H.debugfs_cat(image, "/f") == FILE_BYTES
    H.e2fsck_fn(image)


def test_journal_over_group_metadata(image, tmp_path):
    """The journal moved (its superblock copied along) so that it covers
    a backup superblock: writers refuse; fsck.extref makes a new one and
    the backup is intact for stock e2fsck."""
    log = J.Log(image)
    end = log.pblk(log.maxlen - 1)
    out = H.run(["dumpe2fs", image]).stdout
    backups = [int(x) for x in
               re.findall(r"Backup superblock at (\d+)", out)]
    b = min(x for x in backups if x > end)
    start = b - log.maxlen + 10
    assert start > end
    with open(image, "r+b") as f:
        f.seek(start * 1024)
        f.write(log.get(0))
    H.run(["debugfs", "-w", "-R", f"sif <8> block[5] {start}", image])
    before = snapshot(image)
    res = dfs(image, "-w", "-R", "mkdir /d")
    assert_refused_untouched(image, before, res, "group metadata")
    res = fsck(image, "-fy")
    assert res.returncode == 1, H.describe(res)
    assert "0x0005 " in res.stdout and "regenerated" in res.stdout
    H.e2fsck_fn(image)
    backup = block_of(snapshot(image), b)
    assert struct.unpack_from("<H", backup, 56)[0] == 0xEF53
    assert backup[104:120] == before[1024 + 104:1024 + 120]   # its UUID
    dfs(image, "-w", "-R", "mkdir /d", check=True)
    assert H.debugfs_cat(image, "/f") == FILE_BYTES


def test_logged_superblock_that_verifies(image, tmp_path):
    """A logged superblock that validates (a new compat feature,
    stable_inodes, and a new mount count) is replayed by a writer as
    stock e2fsck replays it (e2fsck -f then resets the mount count); a read-only view, which keeps the handle's
    layout, shows the image as on disk instead and says why."""
    sb = bytearray(snapshot(image)[1024:2048])
    struct.pack_into("<I", sb, 0x5C, struct.unpack_from("<I", sb, 0x5C)[0]
                     | 0x800)                           # stable_inodes
    struct.pack_into("<H", sb, 0x34, 7)                 # s_mnt_count
    struct.pack_into("<I", sb, 1020, crc32c_le(0xFFFFFFFF, bytes(sb[:1020])))
    log = J.Log(image)
    t = log.transaction()
    t.block(1, bytes(sb))
    log.commit(t)
    log.write()
    before = snapshot(image)
    res = dfs(image, "-R", "ls -l /")
    assert res.returncode == 0, H.describe(res)
    assert "changes the filesystem's size, features or UUID" in res.stderr
    assert snapshot(image) == before

    stock, stock_bytes = stock_copy(image, tmp_path)
    assert stock.returncode in (0, 1), H.describe(stock)
    dfs(image, "-w", "-R", "ls", check=True)
    assert "stable_inodes" in H.dumpe2fs_features(image)
    assert struct.unpack_from("<I", stock_bytes, 1024 + 0x5C)[0] & 0x800
    assert struct.unpack_from("<H", snapshot(image), 1024 + 0x34)[0] == 7
    H.e2fsck_fn(image)


def test_superblock_logged_by_stock_debugfs_is_shown_in_memory(image,
                                                               tmp_path):
    """Stock debugfs's journal writer logs the superblock and the group
    descriptors as they are (without needs_recovery, which it sets on
    disk as the transaction begins): the read-only view shows the
    replay, the writer replays it as stock e2fsck does."""
    meta = tmp_path / "meta"
    meta.write_bytes(snapshot(image)[1024:3072])
    H.run(["debugfs", "-w", "-f", "-", image],
          input=f"jo\njw -b 1,2 {meta}\njc\n")
    assert "needs_recovery" in H.dumpe2fs_features(image)
    res = dfs(image, "-R", "ls -l /", check=True)
    assert "in memory only" in res.stderr, H.describe(res)
    assert "(1 transaction)" in res.stderr
    stock, stock_bytes = stock_copy(image, tmp_path)
    assert stock.returncode in (0, 1), H.describe(stock)
    res = dfs(image, "-w", "-R", "ls", check=True)
    assert "1 transaction replayed" in res.stderr, H.describe(res)
    assert "needs_recovery" not in H.dumpe2fs_features(image)
    H.e2fsck_fn(image)
