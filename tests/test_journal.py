"""The journal module (libfs/journal/), driven by tests/unit/journal_tool,
against the oracles nobody here wrote: stock debugfs's logdump, stock
e2fsck's replay, the kernel's replay at mount, and stock debugfs's own
journal writer (jo/jw/jc).

Images come from stock mke2fs; the logged blocks are free blocks of the
last group (per dumpe2fs), so the filesystem stays consistent whatever
they hold and e2fsck -fn can judge the rest.
"""

import os
import random
import re
import shutil
import struct
import subprocess

import pytest

import helpers as H

JBD2_MAGIC = 0xC03B3998

# (block size, mke2fs -O features): 1 KiB and 4 KiB, with and without
# metadata_csum (checksum v3 tags), 64bit and not.
CONFIGS = [
    ("1024", "metadata_csum,64bit"),
    ("4096", "^metadata_csum,^64bit"),
    ("1024", "^metadata_csum,64bit"),
    ("4096", "metadata_csum,^64bit"),
]
CONFIG_IDS = ["1k-csum-64", "4k-plain-32", "1k-plain-64", "4k-csum-32"]


def tool(img, *args, check=True):
    return H.run([H.binary("tests/unit/journal_tool"), img, *args],
                 check=check)


def make_image(path, bs="1024", feats="metadata_csum,64bit", jsize=None,
               size="64M"):
    cmd = ["mke2fs", "-q", "-F", "-t", "ext4", "-b", bs, "-O", feats]
    if jsize:
        cmd += ["-J", f"size={jsize}"]
    H.run(cmd + [str(path), size])
    return str(path)


def free_blocks(img, n):
    """n free blocks of the filesystem, from dumpe2fs's last free ranges."""
    out = H.run(["dumpe2fs", img]).stdout
    ranges = []
    for m in re.finditer(r"^  Free blocks: (.*)$", out, re.M):
        for part in m.group(1).split(","):
            part = part.strip()
            if not part:
                continue
            a, _, b = part.partition("-")
            ranges.append((int(a), int(b or a)))
    blocks = []
    for a, b in reversed(ranges):
        blocks.extend(range(b, a - 1, -1))
        if len(blocks) >= n:
            return sorted(blocks[:n])
    pytest.fail("not enough free blocks")


def block_size(img):
    return int(H.dumpe2fs_header(img)["Block size"])


def read_block(img, blk, bs):
    with open(img, "rb") as f:
        f.seek(blk * bs)
        return f.read(bs)


def write_host_blocks(tmp_path, blocks, bs, rng, magic_every=0, tag="b"):
    """A host file of random bytes for each block; every magic_every-th
    begins with the jbd2 magic.  Returns ({blk: bytes}, ["BLK=FILE"])."""
    data, args = {}, []
    for i, blk in enumerate(blocks):
        b = bytearray(rng.randbytes(bs))
        if magic_every and i % magic_every == 0:
            b[0:4] = struct.pack(">I", JBD2_MAGIC)
        f = tmp_path / f"{tag}{blk}.bin"
        f.write_bytes(bytes(b))
        data[blk] = bytes(b)
        args.append(f"{blk}={f}")
    return data, args


def stock_logdump(img, opts="-a"):
    return H.run(["debugfs", "-R", f"logdump {opts}".strip(), img]).stdout


def logged(text):
    """[(fs block, journal block, flags)] from a logdump -a."""
    return [(int(a), int(b), int(c, 16)) for a, b, c in re.findall(
        r"FS block (\d+) logged at journal block (\d+) \(flags 0x([0-9a-f]+)\)",
        text)]


def commits(text):
    return [(int(s), int(b)) for s, b in re.findall(
        r"Found expected sequence (\d+), type 2 \(commit block\) at block (\d+)",
        text)]


def needs_recovery(img):
    return "needs_recovery" in H.dumpe2fs_features(img)


def e2fsck_replay(img):
    """Stock e2fsck -fy: replays the journal; 0 or 1 (fixed) allowed."""
    res = H.run(["e2fsck", "-fy", img], check=False)
    assert res.returncode in (0, 1), H.describe(res)
    return res


def journal_pblk(img, jblk):
    """The filesystem block holding journal block jblk (stock debugfs)."""
    out = H.run(["debugfs", "-R", f"bmap <8> {jblk}", img]).stdout
    return int(out.split()[0])


def patch(img, offset, data):
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(data)


def stock_replay_only(img):
    """Stock e2fsck's journal replay and nothing else (-E journal_only)."""
    res = H.run(["e2fsck", "-y", "-E", "journal_only", img], check=False)
    assert res.returncode in (0, 1), H.describe(res)
    assert not needs_recovery(img)


def assert_same_but_superblock(a, b):
    """The two images are byte for byte the same outside the primary
    superblock (bytes 1024-2047, where the tools stamp times)."""
    da, db = open(a, "rb").read(), open(b, "rb").read()
    assert len(da) == len(db)
    da = da[:1024] + da[2048:]
    db = db[:1024] + db[2048:]
    if da != db:
        first = next(i for i in range(len(da)) if da[i] != db[i])
        first += 1024 if first >= 1024 else 0
        pytest.fail(f"{a} and {b} differ first at byte {first}")


# ----- commit, then replay by stock tools -----

@pytest.mark.parametrize("bs,feats", CONFIGS, ids=CONFIG_IDS)
def test_commit_shown_by_stock_logdump_and_replayed_by_e2fsck(
        tmp_path, bs, feats):
    img = make_image(tmp_path / "j.img", bs, feats)
    nbs = int(bs)
    rng = random.Random(int(bs) + len(feats))
    # several descriptor blocks: 62 tags fit in 1 KiB with checksums
    blocks = free_blocks(img, 150 if nbs == 1024 else 600)
    old = {b: read_block(img, b, nbs) for b in blocks}
    data, args = write_host_blocks(tmp_path, blocks, nbs, rng, magic_every=7)
    tool(img, "commit", *args)
    assert needs_recovery(img)
    # the journal superblock now says checksum v3 when the fs has
    # metadata_csum, and 64-bit tags when the fs is 64bit
    jfeat = H.dumpe2fs_header(img)["Journal features"].split()
    assert ("journal_checksum_v3" in jfeat) == ("^metadata_csum" not in feats)
    assert ("journal_64bit" in jfeat) == ("^64bit" not in feats)

    text = stock_logdump(img)
    got = logged(text)
    assert sorted(b for b, _, _ in got) == sorted(blocks)
    escaped = {b for b, _, f in got if f & 1}
    assert escaped == {b for b in blocks if data[b][:4] ==
                       struct.pack(">I", JBD2_MAGIC)}
    assert len(escaped) > 0
    assert commits(text) == [(1, commits(text)[0][1])]
    assert text.count("type 1 (descriptor block)") >= 2
    # nothing is in place before replay
    for b in blocks[:5]:
        assert read_block(img, b, nbs) == old[b]

    ours = str(tmp_path / "ours.img")
    shutil.copyfile(img, ours)
    only = str(tmp_path / "only.img")
    shutil.copyfile(img, only)
    e2fsck_replay(img)
    for b in blocks:
        assert read_block(img, b, nbs) == data[b], f"block {b}"
    assert not needs_recovery(img)
    H.e2fsck_fn(img)

    # the module's own replay gives the same blocks
    assert tool(ours, "recover").stdout == "replayed 1\n"
    for b in blocks:
        assert read_block(ours, b, nbs) == data[b], f"block {b}"
    assert not needs_recovery(ours)
    hdr = H.dumpe2fs_header(ours)
    assert hdr["Journal start"] == "0"
    H.e2fsck_fn(ours)
    stock_replay_only(only)
    assert_same_but_superblock(ours, only)


# ----- replay by the kernel -----

@pytest.fixture
def kernel_mount(tmp_path):
    """attach(img): losetup -f --show IMG, mount -o ro /dev/loopN (the
    kernel replays the journal), then umount and detach; the teardown
    always detaches, also when the test failed."""
    H.require_loop()
    state = {"dev": None, "mnt": tmp_path / "kmnt"}
    state["mnt"].mkdir()

    def attach(img):
        dev = H.run(["losetup", "-f", "--show", img]).stdout.strip()
        state["dev"] = dev
        res = H.run(["mount", "-o", "ro", dev, str(state["mnt"])],
                    check=False)
        assert res.returncode == 0, H.describe(res)
        H.run(["umount", str(state["mnt"])])
        H.run(["losetup", "-d", dev])
        state["dev"] = None

    yield attach
    if H.mount_entry(state["mnt"]) is not None:
        H.run(["umount", "-l", str(state["mnt"])], check=False)
    if state["dev"]:
        H.run(["losetup", "-d", state["dev"]], check=False)


@pytest.mark.parametrize("bs,feats", [CONFIGS[0], CONFIGS[1]],
                         ids=CONFIG_IDS[:2])
def test_kernel_replays_the_journal(tmp_path, kernel_mount, bs, feats):
    img = make_image(tmp_path / "k.img", bs, feats)
    nbs = int(bs)
    rng = random.Random(7)
    blocks = free_blocks(img, 80)
    data, args = write_host_blocks(tmp_path, blocks[:70], nbs, rng,
                                   magic_every=5)
    tool(img, "commit", *args)
    # a second transaction revoking one block of the first
    data2, args2 = write_host_blocks(tmp_path, blocks[70:], nbs, rng,
                                     tag="c")
    before_revoked = read_block(img, blocks[3], nbs)
    tool(img, "commit", "-r", str(blocks[3]), *args2)
    assert needs_recovery(img)
    kernel_mount(img)
    data.update(data2)
    for b in blocks:
        want = before_revoked if b == blocks[3] else data[b]
        assert read_block(img, b, nbs) == want, f"block {b}"
    assert not needs_recovery(img)
    H.e2fsck_fn(img)


# ----- the module's replay of stock debugfs's journal -----

def test_recover_replays_stock_debugfs_transactions(tmp_path):
    img = make_image(tmp_path / "s.img", "1024", "^metadata_csum,64bit")
    rng = random.Random(3)
    b1, b2, b3 = free_blocks(img, 3)
    host = tmp_path / "two.bin"
    payload = rng.randbytes(2048)
    host.write_bytes(payload)
    host3 = tmp_path / "one.bin"
    payload3 = rng.randbytes(1024)
    host3.write_bytes(payload3)
    old_b1 = read_block(img, b1, 1024)
    script = (f"jo\njw -b {b1},{b2} {host}\njc\n"
              f"jo\njw -r {b1}\njc\n"
              f"jo\njw -b {b3} {host3}\njc\n")
    H.run(["debugfs", "-w", "-f", "-", img], input=script)
    assert needs_recovery(img)
    stock = str(tmp_path / "stock.img")
    shutil.copyfile(img, stock)

    assert tool(img, "recover").stdout == "replayed 3\n"
    assert read_block(img, b1, 1024) == old_b1      # revoked by T2
    assert read_block(img, b2, 1024) == payload[1024:]
    assert read_block(img, b3, 1024) == payload3
    assert not needs_recovery(img)
    H.e2fsck_fn(img)

    stock_replay_only(stock)
    assert_same_but_superblock(img, stock)


@pytest.mark.parametrize("bs,feats", [CONFIGS[0], CONFIGS[1]],
                         ids=CONFIG_IDS[:2])
def test_revokes_honoured_by_tid(tmp_path, bs, feats):
    """T1 logs A and B; T2 revokes A and logs C; T3 revokes B; T4 logs B
    again.  A stays as before, B holds T4's bytes (a revoke covers only
    its own and earlier transactions), C holds T2's; stock e2fsck
    agrees."""
    img = make_image(tmp_path / "r.img", bs, feats)
    nbs = int(bs)
    rng = random.Random(11)
    a, b, c = free_blocks(img, 3)
    old_a = read_block(img, a, nbs)
    d1, args1 = write_host_blocks(tmp_path, [a, b], nbs, rng, tag="t1_")
    d2, args2 = write_host_blocks(tmp_path, [c], nbs, rng, tag="t2_")
    d4, args4 = write_host_blocks(tmp_path, [b], nbs, rng, tag="t4_")
    tool(img, "commit", *args1)
    tool(img, "commit", "-r", str(a), *args2)
    tool(img, "commit", "-r", str(b))
    tool(img, "commit", *args4)
    text = stock_logdump(img)
    assert [s for s, _ in commits(text)] == [1, 2, 3, 4]
    assert f"Revoke FS block {a}" in text and f"Revoke FS block {b}" in text
    stock = str(tmp_path / "stock.img")
    shutil.copyfile(img, stock)
    assert tool(img, "recover").stdout == "replayed 4\n"
    assert read_block(img, a, nbs) == old_a
    assert read_block(img, b, nbs) == d4[b]
    assert read_block(img, c, nbs) == d2[c]
    H.e2fsck_fn(img)
    stock_replay_only(stock)
    assert_same_but_superblock(img, stock)
    H.e2fsck_fn(stock)


def test_block_both_logged_and_revoked_is_refused(tmp_path):
    img = make_image(tmp_path / "x.img")
    rng = random.Random(1)
    (a,) = free_blocks(img, 1)
    _, args = write_host_blocks(tmp_path, [a], 1024, rng)
    before = H.sha256(img)
    res = tool(img, "commit", "-r", str(a), *args, check=False)
    assert res.returncode == 1 and "commit" in res.stderr
    assert H.sha256(img) == before


# ----- a log wrapped around its end -----

@pytest.mark.parametrize("bs,feats", [CONFIGS[0], CONFIGS[2]],
                         ids=[CONFIG_IDS[0], CONFIG_IDS[2]])
def test_wrapped_log_replayed_by_stock_e2fsck_and_by_ours(
        tmp_path, kernel_mount, bs, feats):
    """A 1024-block journal: a 700-block transaction, checkpoint (the log
    now starts near block 700), then two of 200 blocks: the second runs
    past the end and goes on at s_first."""
    img = make_image(tmp_path / "w.img", bs, feats, jsize=1)
    nbs = int(bs)
    rng = random.Random(5)
    blocks = free_blocks(img, 1100)
    _, first = write_host_blocks(tmp_path, blocks[:700], nbs, rng, tag="f")
    d2, second = write_host_blocks(tmp_path, blocks[700:900], nbs, rng,
                                   magic_every=9, tag="s")
    d3, third = write_host_blocks(tmp_path, blocks[900:1100], nbs, rng,
                                  magic_every=11, tag="t")
    tool(img, "commit", *first, "+", "checkpoint", "+", "commit", *second,
         "+", "commit", *third)
    text = stock_logdump(img)
    got = logged(text)
    jblocks = [j for _, j, _ in got]
    assert sorted(b for b, _, _ in got) == sorted(blocks[700:])
    # the journal blocks go up, fall back to the start of the log, go up
    falls = [i for i in range(1, len(jblocks)) if jblocks[i] < jblocks[i - 1]]
    assert len(falls) == 1 and jblocks[falls[0]] <= 3
    assert [s for s, _ in commits(text)] == [2, 3]
    want = {**d2, **d3}
    copies = {}
    for name in ("ours", "stock", "kernel", "only"):
        copies[name] = str(tmp_path / f"{name}.img")
        shutil.copyfile(img, copies[name])
    assert tool(copies["ours"], "recover").stdout == "replayed 2\n"
    e2fsck_replay(copies["stock"])
    kernel_mount(copies["kernel"])
    stock_replay_only(copies["only"])
    assert_same_but_superblock(copies["ours"], copies["only"])
    for name, path in copies.items():
        for b in blocks[700:]:
            assert read_block(path, b, nbs) == want[b], f"{name} {b}"
        assert not needs_recovery(path)
        H.e2fsck_fn(path)


# ----- torn and corrupt journals -----

def two_transactions(tmp_path, bs="1024", feats="metadata_csum,64bit"):
    img = make_image(tmp_path / "t.img", bs, feats)
    nbs = int(bs)
    rng = random.Random(9)
    blocks = free_blocks(img, 20)
    old = {b: read_block(img, b, nbs) for b in blocks}
    d1, a1 = write_host_blocks(tmp_path, blocks[:10], nbs, rng, tag="x")
    d2, a2 = write_host_blocks(tmp_path, blocks[10:], nbs, rng, tag="y")
    tool(img, "commit", *a1)
    tool(img, "commit", *a2)
    return img, nbs, blocks, old, d1, d2


@pytest.mark.parametrize("how", ["missing", "bad-checksum"])
def test_torn_last_transaction_is_not_replayed(tmp_path, how):
    img, nbs, blocks, old, d1, d2 = two_transactions(tmp_path)
    (_, c1), (_, c2) = commits(stock_logdump(img))
    off = journal_pblk(img, c2) * nbs
    if how == "missing":
        patch(img, off, bytes(nbs))
    else:                           # h_chksum[0] at 0x10
        blk = read_block(img, journal_pblk(img, c2), nbs)
        patch(img, off + 0x10, bytes([blk[0x10] ^ 0xff]))
    stock = str(tmp_path / "stock.img")
    shutil.copyfile(img, stock)
    assert tool(img, "recover").stdout == "replayed 1\n"
    for b in blocks:
        want = d1[b] if b in d1 else old[b]
        assert read_block(img, b, nbs) == want, f"block {b}"
    H.e2fsck_fn(img)
    # stock e2fsck does not replay it either
    e2fsck_replay(stock)
    for b in blocks[10:]:
        assert read_block(stock, b, nbs) == old[b]
    for b in blocks[:10]:
        assert read_block(stock, b, nbs) == d1[b]


def test_corrupt_copy_in_committed_transaction_writes_nothing(tmp_path):
    """A copy whose tag checksum fails in a transaction whose commit block
    verifies is corruption, not a torn write: an error, nothing written."""
    img, nbs, blocks, old, d1, d2 = two_transactions(tmp_path)
    got = logged(stock_logdump(img))
    jblk = got[2][1]                        # a copy of transaction 1
    patch(img, journal_pblk(img, jblk) * nbs + 100, b"\x5a")
    before = H.sha256(img)
    res = tool(img, "recover", check=False)
    assert res.returncode == 1
    assert "corrupt" in res.stderr
    assert H.sha256(img) == before


@pytest.mark.parametrize("where,value", [
    (0x0, b"\0\0\0\0"),              # magic
    (0xC, b"\0\0\x08\0"),            # s_blocksize 2048
    (0x80, b"\x01"),                 # padding: the checksum fails
], ids=["magic", "blocksize", "checksum"])
def test_corrupt_journal_superblock_writes_nothing(tmp_path, where, value):
    img, nbs, blocks, old, d1, d2 = two_transactions(tmp_path)
    patch(img, journal_pblk(img, 0) * nbs + where, value)
    before = H.sha256(img)
    res = tool(img, "recover", check=False)
    assert res.returncode == 1
    assert "Journal superblock is corrupt" in res.stderr
    assert H.sha256(img) == before


def test_image_without_journal(tmp_path):
    img = make_image(tmp_path / "n.img", "1024", "^has_journal")
    before = H.sha256(img)
    res = tool(img, "recover", check=False)
    assert res.returncode == 1 and "no journal" in res.stderr
    assert H.sha256(img) == before


# ----- checkpoint, sequence numbers, capacity -----

def test_checkpoint_done_leaves_a_clean_journal(tmp_path):
    img = make_image(tmp_path / "c.img")
    rng = random.Random(2)
    blocks = free_blocks(img, 4)
    d, args = write_host_blocks(tmp_path, blocks[:2], 1024, rng)
    tool(img, "commit", *args)
    assert tool(img, "dirty").stdout == "1\n"
    # the caller writes the blocks in place, then says so
    for b in blocks[:2]:
        patch(img, b * 1024, d[b])
    tool(img, "checkpoint")
    hdr = H.dumpe2fs_header(img)
    assert "needs_recovery" not in hdr["Filesystem features"].split()
    assert hdr["Journal start"] == "0"
    assert int(hdr["Journal sequence"], 16) == 2
    assert tool(img, "dirty").stdout == "0\n"
    H.e2fsck_fn(img)
    # the next commit uses the next sequence number
    d2, args2 = write_host_blocks(tmp_path, blocks[2:], 1024, rng, tag="n")
    tool(img, "commit", *args2)
    text = stock_logdump(img)
    assert "Journal starts at block 1, transaction 2" in text
    assert [s for s, _ in commits(text)] == [2]
    e2fsck_replay(img)
    for b in blocks:
        assert read_block(img, b, 1024) == {**d, **d2}[b]
    H.e2fsck_fn(img)


@pytest.mark.parametrize("bs,feats", [CONFIGS[0], CONFIGS[1]],
                         ids=CONFIG_IDS[:2])
def test_capacity_is_exact(tmp_path, bs, feats):
    """capacity blocks fit; one more is refused with the image unchanged."""
    img = make_image(tmp_path / "cap.img", bs, feats, jsize=1 if bs == "1024"
                     else 4)
    nbs = int(bs)
    cap = int(tool(img, "capacity").stdout)
    assert 0 < cap < 1024
    rng = random.Random(4)
    blocks = free_blocks(img, cap + 1)
    _, args = write_host_blocks(tmp_path, blocks, nbs, rng)
    before = H.sha256(img)
    res = tool(img, "commit", *args, check=False)
    assert res.returncode == 1 and "does not fit" in res.stderr
    assert H.sha256(img) == before
    tool(img, "commit", *args[:cap])
    assert int(tool(img, "capacity").stdout) == 0
    assert int(tool(img, "capacity", "5").stdout) == 0
    H.run(["e2fsck", "-fy", img], check=False)
    H.e2fsck_fn(img)


# ----- logdump against stock debugfs -----

def shell_logdump(img, opts):
    return H.run([H.binary("debugfs.extref"), "-R",
                  f"logdump {opts}".strip(), img]).stdout


@pytest.mark.parametrize("opts", ["", "-a", "-S"])
def test_logdump_matches_stock_debugfs(tmp_path, opts):
    img = make_image(tmp_path / "l.img")
    assert shell_logdump(img, opts) == stock_logdump(img, opts)   # empty
    rng = random.Random(8)
    blocks = free_blocks(img, 90)
    _, a1 = write_host_blocks(tmp_path, blocks[:70], 1024, rng,
                              magic_every=4)
    _, a2 = write_host_blocks(tmp_path, blocks[70:], 1024, rng, tag="q")
    tool(img, "commit", *a1)
    tool(img, "commit", "-r", str(blocks[0]), "-r", str(blocks[1]), *a2)
    ours = shell_logdump(img, opts)
    assert ours == stock_logdump(img, opts)
    assert "type 5 (revoke table)" in ours
    # after a replay the log restarts at s_first with a later tid: a
    # transaction of 61 copies (one descriptor, commit at 63) ends at the
    # old log's second descriptor, at block 64
    tool(img, "recover")
    _, a3 = write_host_blocks(tmp_path, blocks[:61], 1024, rng, tag="z")
    tool(img, "commit", *a3)
    ours = shell_logdump(img, opts)
    assert ours == stock_logdump(img, opts)
    assert re.search(r"Found sequence 1 \(not 5\) at block \d+: end of "
                     r"journal", ours)


# ----- crashes: every write of commit, write in place, checkpoint -----

def replay_states(img, blocks, old, new, nbs):
    """'old' or 'new' when every block is so, else the mixed list."""
    now = [read_block(img, b, nbs) for b in blocks]
    if all(now[i] == new[b] for i, b in enumerate(blocks)):
        return "new"
    if all(now[i] == old[b] for i, b in enumerate(blocks)):
        return "old"
    return [("new" if now[i] == new[b] else "old" if now[i] == old[b]
             else "?") for i, b in enumerate(blocks)]


@pytest.mark.crash
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["crash", "powercut"])
def test_crash_at_any_write_replays_all_or_nothing(tmp_path, mode):
    """The sequence a caller runs (commit, write the blocks home, flush,
    checkpoint_done) stopped after each of its writes (crash=N), or with
    the writes since the last flush landing at random (powercut=N): after
    replay, by stock e2fsck and by ours, the blocks are all old or all
    new, new from the commit block on, and both images are clean."""
    reason = H.fault_injection_skip_reason()
    if reason:
        pytest.skip(reason)
    base = make_image(tmp_path / "base.img", "1024", "metadata_csum,64bit",
                      jsize=1, size="16M")
    blocks = free_blocks(base, 4)
    old = {b: read_block(base, b, 1024) for b in blocks}
    new, args = write_host_blocks(tmp_path, blocks, 1024, random.Random(6),
                                  magic_every=3)
    seq = ["commit", *args, "+", "home", *args, "+", "checkpoint"]
    out = tmp_path / "count.txt"
    img = str(tmp_path / "img")
    shutil.copyfile(base, img)
    H.run([H.binary("tests/unit/journal_tool"), img, *seq],
          env={"EXTREF_FAULT": "count", "EXTREF_FAULT_OUT": str(out)})
    writes = int(re.search(r"writes=(\d+)", out.read_text()).group(1))
    assert writes >= len(blocks) * 2 + 4
    seen_new = seen_old = False
    for n in range(0 if mode == "crash" else 1, writes + 1):
        fault = f"crash={n}" if mode == "crash" else f"powercut={n},seed={n}"
        shutil.copyfile(base, img)
        H.run([H.binary("tests/unit/journal_tool"), img, *seq],
              env={"EXTREF_FAULT": fault})
        ours, stock = img + ".ours", img + ".stock"
        shutil.copyfile(img, ours)
        shutil.copyfile(img, stock)
        tool(ours, "recover")
        e2fsck_replay(stock)
        states = {}
        for name, path in (("ours", ours), ("stock", stock)):
            states[name] = replay_states(path, blocks, old, new, 1024)
            assert states[name] in ("old", "new"), (fault, name,
                                                    states[name])
            assert not needs_recovery(path), (fault, name)
            H.e2fsck_fn(path)
        assert states["ours"] == states["stock"], fault
        if mode == "crash":
            # once the commit block is on disk, the change stays
            assert not (seen_new and states["ours"] == "old"), fault
        seen_new |= states["ours"] == "new"
        seen_old |= states["ours"] == "old"
    assert seen_new and seen_old


def test_random_corruption_replays_cleanly_or_writes_nothing(tmp_path):
    """Bytes of a checksummed journal (superblock, descriptors, copies,
    revoke and commit blocks) changed at random: the module's replay
    either succeeds, leaving an image stock e2fsck finds clean, or fails
    with a journal error and leaves the image as it was."""
    base = make_image(tmp_path / "base.img", "1024", "metadata_csum,64bit",
                      jsize=1, size="16M")
    rng = random.Random(12)
    blocks = free_blocks(base, 80)
    _, a1 = write_host_blocks(tmp_path, blocks[:70], 1024, rng, magic_every=5)
    _, a2 = write_host_blocks(tmp_path, blocks[70:], 1024, rng, tag="v")
    tool(base, "commit", *a1)
    tool(base, "commit", "-r", str(blocks[0]), *a2)
    used = 70 + 2 + 1 + 10 + 1 + 1 + 1          # log blocks written
    pblk = {j: journal_pblk(base, j) for j in (0, used)}
    assert pblk[used] == pblk[0] + used       # one extent: offsets add
    img = str(tmp_path / "img")
    outcomes = set()
    for _ in range(24):
        shutil.copyfile(base, img)
        for _ in range(rng.randint(1, 3)):
            jblk = rng.choice([0, 1, 1, rng.randint(1, used)])
            phys = pblk[0] + jblk
            off = rng.choice([rng.randrange(64), rng.randrange(1024)])
            with open(img, "r+b") as f:
                f.seek(phys * 1024 + off)
                byte = f.read(1)[0]
                f.seek(phys * 1024 + off)
                f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        before = H.sha256(img)
        res = tool(img, "recover", check=False)
        if res.returncode == 0:
            outcomes.add(res.stdout.strip())
            H.e2fsck_fn(img)
            assert not needs_recovery(img)
        else:
            assert res.returncode == 1, H.describe(res)
            assert "Journal" in res.stderr, res.stderr
            assert H.sha256(img) == before
            outcomes.add("refused")
    assert "refused" in outcomes and len(outcomes) >= 2, outcomes


def test_external_journal_and_fast_commits_are_refused(tmp_path):
    """An image whose journal is elsewhere (s_journal_inum 0, as for an
    external device) and a journal with the fast-commit feature: a clear
    error, nothing written."""
    ext = make_image(tmp_path / "ext.img", "1024", "metadata_csum,64bit")
    H.run(["debugfs", "-w", "-R", "ssv journal_inum 0", ext])
    fc = make_image(tmp_path / "fc.img", "1024", "^metadata_csum,64bit")
    jsb = journal_pblk(fc, 0) * 1024
    with open(fc, "r+b") as f:          # s_feature_incompat |= FAST_COMMIT
        f.seek(jsb + 0x28)
        incompat = struct.unpack(">I", f.read(4))[0]
        f.seek(jsb + 0x28)
        f.write(struct.pack(">I", incompat | 0x20))
    for img, msg in ((ext, "external device"), (fc, "fast commits")):
        before = H.sha256(img)
        for cmd in (["recover"], ["capacity"]):
            res = tool(img, *cmd, check=False)
            assert res.returncode == 1 and msg in res.stderr, H.describe(res)
        res = H.run([H.binary("debugfs.extref"), "-R", "logdump", img],
                    check=False)
        assert res.returncode != 0 and msg in res.stderr, H.describe(res)
        assert H.sha256(img) == before


def test_old_compat_checksum_gives_way_to_checksum_v3(tmp_path):
    """A journal with the old COMPAT_CHECKSUM on a metadata_csum image:
    the first transaction switches it to checksum v3 and drops the old
    feature (e2fsck refuses a journal with both); stock e2fsck replays."""
    img = make_image(tmp_path / "o.img", "1024", "metadata_csum,64bit")
    jsb = journal_pblk(img, 0) * 1024
    patch(img, jsb + 0x24, struct.pack(">I", 1))   # s_feature_compat
    assert "journal_checksum" in H.dumpe2fs_header(img)["Journal features"]
    rng = random.Random(13)
    blocks = free_blocks(img, 3)
    data, args = write_host_blocks(tmp_path, blocks, 1024, rng)
    tool(img, "commit", *args)
    feats = H.dumpe2fs_header(img)["Journal features"].split()
    assert "journal_checksum_v3" in feats
    assert "journal_checksum" not in feats
    e2fsck_replay(img)
    for b in blocks:
        assert read_block(img, b, 1024) == data[b]
    H.e2fsck_fn(img)


@pytest.mark.parametrize("bs,feats", [CONFIGS[1], CONFIGS[3]],
                         ids=[CONFIG_IDS[1], CONFIG_IDS[3]])
def test_logdump_matches_stock_debugfs_4k(tmp_path, bs, feats):
    """4 KiB blocks, 32-bit tags and revoke records, with and without
    checksums: the shell's logdump -a and -S print what stock debugfs
    prints."""
    img = make_image(tmp_path / "l4.img", bs, feats)
    rng = random.Random(10)
    blocks = free_blocks(img, 12)
    _, a1 = write_host_blocks(tmp_path, blocks[:8], 4096, rng, magic_every=3)
    _, a2 = write_host_blocks(tmp_path, blocks[8:], 4096, rng, tag="p")
    tool(img, "commit", *a1)
    tool(img, "commit", "-r", str(blocks[1]), *a2)
    for opts in ("-a", "-S"):
        ours = shell_logdump(img, opts)
        assert ours == stock_logdump(img, opts)
    assert f"Revoke FS block {blocks[1]}" in shell_logdump(img, "-a")


def test_recover_replays_a_kernel_written_journal(tmp_path):
    """A journal the kernel wrote (checksum v3 tags, revoke records for
    freed directory blocks): the image copied while it is mounted, after
    sync, holds committed transactions not yet checkpointed.  Our replay
    leaves an image stock e2fsck finds clean, with the files' bytes, and
    every logged block as stock e2fsck's replay leaves it."""
    H.require_loop()
    img = make_image(tmp_path / "kw.img", "1024", "metadata_csum,64bit")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    rng = random.Random(14)
    files = {f"f{i}": rng.randbytes(rng.randint(1, 5000)) for i in range(20)}
    copy = str(tmp_path / "copy.img")
    dev = H.run(["losetup", "-f", "--show", img]).stdout.strip()
    try:
        H.run(["mount", "-o", "commit=60", dev, str(mnt)])
        big = mnt / "big"
        big.mkdir()
        for i in range(300):
            (big / f"file_with_a_long_name_{i}").write_text(str(i))
        H.run(["sync"])
        shutil.rmtree(big)
        for name, data in files.items():
            (mnt / name).write_bytes(data)
        H.run(["sync"])
        H.run(["cp", "--sparse=always", img, copy])
    finally:
        if H.mount_entry(mnt) is not None:
            H.run(["umount", str(mnt)], check=False)
        H.run(["losetup", "-d", dev], check=False)
    assert needs_recovery(copy)
    text = stock_logdump(copy)
    assert len(commits(text)) >= 1
    logged_blocks = {b for b, _, _ in logged(text)}
    stock = str(tmp_path / "stock.img")
    shutil.copyfile(copy, stock)
    res = tool(copy, "recover")
    assert res.stdout == f"replayed {len(commits(text))}\n"
    assert not needs_recovery(copy)
    H.e2fsck_fn(copy)
    for name, data in files.items():
        got = H.run(["debugfs", "-R", f"cat /{name}", copy], text=False)
        assert got.stdout == data, name
    # stock e2fsck's replay alone (no check after it) leaves the same image
    stock_replay_only(stock)
    assert_same_but_superblock(copy, stock)
    assert logged_blocks
