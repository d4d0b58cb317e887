"""A failed operation leaves the image as it was (issue 11's rollback).

On an image with a journal every command that writes is one transaction
(debugfs.extref(8), TRANSACTIONS): a failure found half-way (no inodes
left, no space, a quota limit, a failing command inside begin ... commit)
rolls it back.  Each test compares every block that was in use before
(the metadata, the files' data, the journal) and every file's bytes, read
back with stock debugfs; free blocks may hold new bytes (copy-on-write
data written before the failure).  Both checkers are clean afterwards.
"""

import hashlib
import re

import pytest

import helpers

SHELL = "debugfs.extref"


def shell(img, *reqs, check=True, extra=()):
    cmd = [helpers.binary(SHELL), "-w", *extra]
    for r in reqs:
        cmd += ["-R", r] if len(reqs) == 1 else []
    if len(reqs) == 1:
        return helpers.run(cmd + [str(img)], check=check)
    script = img.parent / "cmds"
    script.write_text("\n".join(reqs) + "\n")
    return helpers.run(cmd + ["-f", str(script), str(img)], check=check)


def free_blocks(img):
    """The set of free blocks, by stock dumpe2fs."""
    res = helpers.run(["dumpe2fs", str(img)], check=False)
    free = set()
    for m in re.finditer(r"Free blocks: ([0-9, -]*)", res.stdout):
        for part in m.group(1).split(","):
            part = part.strip()
            if not part:
                continue
            a, _, b = part.partition("-")
            free.update(range(int(a), int(b or a) + 1))
    return free


def used_digest(img):
    """A digest of every block in use (not free by the bitmaps)."""
    res = helpers.run(["dumpe2fs", "-h", str(img)], check=False)
    bs = int(re.search(r"Block size:\s+(\d+)", res.stdout).group(1))
    free = free_blocks(img)
    h = hashlib.sha256()
    with open(img, "rb") as f:
        blk = 0
        while True:
            b = f.read(bs)
            if not b:
                break
            if blk not in free:
                h.update(blk.to_bytes(8, "little") + b)
            blk += 1
    return h.hexdigest(), free


def checkers_clean(img):
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)
    res = helpers.run(["dumpe2fs", "-h", str(img)], check=False)
    assert "needs_recovery" not in res.stdout


def tree_image(tmp_path, nfiles, *mkfs_opts):
    img = tmp_path / "t.img"
    helpers.mkfs(img, "16M", "-q", *mkfs_opts)
    reqs = ["mkdir /d"]
    for i in range(nfiles):
        f = tmp_path / f"h{i}"
        f.write_bytes(bytes([i % 251]) * (3000 + 1000 * i))
        reqs.append(f"write {f} /d/f{i}")
    shell(img, *reqs)
    return img


def test_reflink_r_out_of_inodes_is_rolled_back(tmp_path):
    """The copy of a 40-file tree runs out of inodes after some files:
    nothing of it stays, not even the top directory."""
    img = tree_image(tmp_path, 40, "-N", "64")
    before = helpers.sha256(img)
    res = shell(img, "reflink -r /d /copy", check=False)
    assert res.returncode != 0, helpers.describe(res)
    # no data is written by a reflink: the image is byte-identical
    assert helpers.sha256(img) == before
    res = helpers.run(["debugfs", "-R", "ls /copy", str(img)], check=False)
    assert "File not found" in res.stderr
    checkers_clean(img)


def test_pwrite_out_of_space_is_rolled_back(tmp_path):
    """A copy-on-write pwrite into a shared file larger than the free
    space: the file and every block in use are as before."""
    img = tmp_path / "s.img"
    helpers.mkfs(img, "8M", "-q")
    big = tmp_path / "big"
    big.write_bytes(bytes(range(256)) * (4 << 10))      # 1 MiB
    shell(img, f"write {big} /a", "reflink /a /b")
    before, _ = used_digest(img)
    res = shell(img, "pwrite -S 7 /b 0 64M", check=False)
    assert res.returncode != 0, helpers.describe(res)
    after, _ = used_digest(img)
    assert after == before
    dump = tmp_path / "b.out"
    helpers.run(["debugfs", "-R", f"dump /b {dump}", str(img)])
    assert dump.read_bytes() == big.read_bytes()
    checkers_clean(img)


def test_batch_rollback_restores_everything(tmp_path):
    img = tree_image(tmp_path, 5)
    before = helpers.sha256(img)
    res = shell(img, "begin", "reflink /d/f0 /x", "rm /d/f1", "mkdir /e",
                "reflink -r /d /d2", "chmod 0700 /d/f2", "rollback")
    assert res.returncode == 0, helpers.describe(res)
    assert helpers.sha256(img) == before
    checkers_clean(img)


def test_failed_command_rolls_the_batch_back(tmp_path):
    """A command that fails inside begin ... commit rolls back the whole
    batch and says so; the commit after it has nothing to commit."""
    img = tree_image(tmp_path, 5)
    before = helpers.sha256(img)
    res = shell(img, "begin", "reflink /d/f0 /x", "rm /d/f1",
                "rm /no/such", "commit", check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "rolled back" in res.stderr
    assert "no transaction is open" in res.stderr
    assert helpers.sha256(img) == before
    checkers_clean(img)


def test_batch_commit_is_one_transaction(tmp_path):
    img = tree_image(tmp_path, 5)
    res = shell(img, "begin", "reflink /d/f0 /x", "rm /d/f1", "mkdir /e",
                "commit")
    assert res.returncode == 0, helpers.describe(res)
    ls = helpers.run(["debugfs", "-R", "ls /", str(img)]).stdout
    assert " x " in ls.replace("\n", " ") or "x" in ls.split()
    assert "e" in ls.split()
    ls = helpers.run(["debugfs", "-R", "ls /d", str(img)]).stdout
    assert "f1" not in ls.split()
    checkers_clean(img)


def test_begin_needs_a_journal(tmp_path):
    img = tmp_path / "nj.img"
    helpers.mkfs(img, "8M", "-q", "-O", "^has_journal")
    res = shell(img, "begin", check=False)
    assert res.returncode == 1
    assert "has no journal" in res.stderr


def test_quota_limit_half_way_is_rolled_back(tmp_path):
    """reflink -r as a user whose inode limit is reached after a few files:
    the quota usage and the image are as before."""
    img = tmp_path / "q.img"
    helpers.mkfs(img, "16M", "-q", "-O", "quota")
    reqs = ["mkdir /d", "chmod 777 /", "chmod 777 /d"]
    for i in range(8):
        f = tmp_path / f"q{i}"
        f.write_bytes(bytes([i + 1]) * 5000)
        reqs += [f"write {f} /d/f{i}", f"chmod 644 /d/f{i}"]
    reqs.append("set_quota user 1000 0 0 0 4")
    shell(img, *reqs)
    before = helpers.sha256(img)
    res = shell(img, "reflink -r /d /mine", check=False,
                extra=["--as", "1000:1000"])
    assert res.returncode != 0, helpers.describe(res)
    assert "quota" in res.stderr.lower(), res.stderr
    assert helpers.sha256(img) == before
    checkers_clean(img)


def test_convert_replays_an_image_that_needs_recovery(tmp_path):
    """A plain ext4 image left with a journal to replay (stock debugfs's
    jo/jw/jc): --convert replays it first, as e2fsck does, and converts
    the replayed state: the journaled block is in place, both checkers
    clean."""
    img = tmp_path / "p.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", str(img), "16M"])
    blk = tmp_path / "blk"
    blk.write_bytes(b"\x42" * 1024)
    free = sorted(free_blocks(img))[-1]
    helpers.run(["debugfs", "-w", "-f", "-", str(img)],
                input=f"jo\njw -b {free} {blk}\njc\n")
    res = helpers.run(["dumpe2fs", "-h", str(img)], check=False)
    assert "needs_recovery" in res.stdout
    res = helpers.mkfs(img, None, "--convert")
    assert f"{img}: journal recovered (1 transaction)" in res.stdout
    res = helpers.run(["dumpe2fs", "-h", str(img)], check=False)
    assert "needs_recovery" not in res.stdout
    assert "shared_blocks" in res.stdout
    with open(img, "rb") as f:
        f.seek(free * 1024)
        assert f.read(1024) == b"\x42" * 1024
    checkers_clean(img)


