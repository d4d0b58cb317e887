"""mkfs.extref --update is before-or-after, whatever its size (issue 30,
section 1): the update is one transaction of the image's journal, its new
blocks written in place early and only the blocks that were in use before
journaled, in the one commit at its end (docs/TRANSACTIONS.md).

The images have 1 KiB blocks, 1 KiB inodes (an inode table block each)
and the smallest journal (-J size=1: 1024 blocks).  The large update
replaces 600 files: the inode table blocks of their old inodes alone
are more than half the journal, where the update used to commit in parts
(a crash then left the image half-upgraded, clean for both checkers).
Killed at a sample of its writes (EXTREF_FAULT crash and power cut: a
SIGKILL and a lost cache at that write), the crashed image, before any
repair, shows the old tree to a kernel read-only mount and to stock
debugfs when its journal needs no recovery, and fsck.extref -n finds
nothing left of the update (nothing is committed before the end: no
hidden directory, no record); replayed by fsck.extref -p, by the next
extref writer or by stock e2fsck -fy, both checkers are clean and the
tree, as stock debugfs rdump writes it (names, kinds, bytes, symlink
targets, modes, modification times), is exactly the old one or exactly
the new one, both read from the host's source trees.

An update whose in-use blocks cannot fit the journal (every file
replaced: 1200 old inodes' table blocks) grows the journal and runs
again as one transaction: two commits in all (the growth's and the
update's), the new length in the journal superblock and inode 8 (stock
dumpe2fs and debugfs), the new tree for a kernel read-only mount.
Crashed at a sample of its writes and around the growth (inside the
growth's transaction, at its commit block, between its checkpoint and
the journal superblock's new length: inode 8 then longer than s_maxlen,
which stock e2fsck and the kernel accept), it leaves the old tree or the
new one.  With --atomic, or without the free space to grow the journal,
it is refused, rolled back: every block in use as before, the journal
as it was.  The journal grows before the first run when the estimate
says so (the update runs once); with the estimate forced short
(EXTREF_FAULT_FIT) the measured rerun grows it and the update lands
whole all the same.
"""

import hashlib
import os
import random
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = [pytest.mark.crash,
              pytest.mark.skipif(_NO_FAULTS is not None,
                                 reason=_NO_FAULTS or "")]

DIRS = 4
FILES = 300           # a directory: 1200 files, an inode table block each


def _model(top):
    """{relative path: (kind, payload, mode, mtime)} of the tree at top
    (a host directory: the source, an rdump or a mount), or None."""
    top = Path(top)
    if not top.is_dir():
        return None
    tree = {}
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            p = Path(root) / name
            rel = os.path.relpath(p, top)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                tree[rel] = ("l", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                tree[rel] = ("d", None, stat.S_IMODE(st.st_mode),
                             int(st.st_mtime))
            else:
                tree[rel] = ("f", hashlib.sha256(p.read_bytes()).digest(),
                             stat.S_IMODE(st.st_mode), int(st.st_mtime))
    return tree


def tree_of(img, workdir):
    """The model of /t as stock debugfs rdump writes it."""
    shm = Path("/dev/shm")
    out = Path(tempfile.mkdtemp(prefix="extref-ua-",
                                dir=shm if shm.is_dir() else workdir))
    try:
        crashlib._run(["debugfs", "-n", "-R", f"rdump /t {out}", str(img)])
        return _model(out / "t")
    finally:
        shutil.rmtree(out)


def _write(p, data, mtime):
    p.write_bytes(data)
    os.utime(p, (mtime, mtime))


def _fix_dir_times(top, when):
    """Every directory's times fixed (below any SOURCE_DATE_EPOCH)."""
    for root, dirs, _ in os.walk(top, topdown=False):
        for d in dirs:
            os.utime(Path(root) / d, (when, when))
    os.utime(top, (when, when))


def make_v1(root):
    rng = random.Random(30)
    top = root / "t"
    for d in range(DIRS):
        sub = top / f"d{d}"
        sub.mkdir(parents=True)
        for i in range(FILES):
            _write(sub / f"f{i:03d}", rng.randbytes(200 + i % 300),
                   1_600_000_000 + i)
        os.symlink(f"f{d:03d}", sub / "link")
        os.utime(sub, (1_600_000_000, 1_600_000_000))
    (top / "keep").mkdir()
    _write(top / "keep" / "same", b"unchanged\n", 1_600_000_000)
    _fix_dir_times(top, 1_600_000_000)
    return top.parent


def make_v2(v1, root, replace_dirs):
    """v1 with every file of the first replace_dirs directories new,
    a new directory, a removed directory, a symlink's target and a
    mode changed."""
    shutil.copytree(v1, root, symlinks=True)
    top = root / "t"
    rng = random.Random(31)
    for d in range(replace_dirs):
        sub = top / f"d{d}"
        for i in range(FILES):
            _write(sub / f"f{i:03d}", rng.randbytes(150 + i % 200),
                   1_500_000_000 + i)
    (top / "new").mkdir()
    for i in range(40):
        _write(top / "new" / f"n{i}", b"%d\n" % i, 1_500_000_000)
    shutil.rmtree(top / f"d{DIRS - 1}")
    os.unlink(top / "d1" / "link")
    os.symlink("elsewhere", top / "d1" / "link")
    os.chmod(top / "keep" / "same", 0o600)
    _fix_dir_times(top, 1_500_000_000)
    return root


def update_op(src, *opts):
    return crashlib.tool_op([helpers.binary("mkfs.extref"), "--update",
                             "-q", "--delete", *opts, "-d", str(src)])


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("ua")
    v1 = make_v1(root / "v1")
    base = root / "base.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "1024", "-I",
                 "1024", "-N", "4096", "-J", "size=1", "-d", str(v1),
                 str(base), "24M"])
    assert helpers.dumpe2fs_header(base)["Total journal blocks"] == "1024"
    big = make_v2(v1, root / "big", 2)      # 600 files replaced
    small = make_v2(v1, root / "small", 0)  # a few entries
    every = make_v2(v1, root / "all", DIRS)  # every file: 1200 inodes
    old = _model(v1 / "t")
    assert tree_of(base, root) == old
    yield {"base": base, "old": old, "big": big, "small": small,
           "all": every, "root": root}
    shutil.rmtree(root, ignore_errors=True)


REPLAYERS = ("fsck", "extref", "e2fsck", "fsck-y")


def _replay(img, n, hows=REPLAYERS):
    """Replay by fsck.extref -p, the next extref writer or stock
    e2fsck -fy, in turn (the n-th of hows); problems (empty: none)."""
    how = hows[n % len(hows)]
    if how in ("fsck", "fsck-y"):
        res = crashlib._run([crashlib.fsck_path(),
                             "-p" if how == "fsck" else "-y", str(img)])
        probs = [] if res.returncode in (0, 1) else \
            [f"fsck.extref ({how}): {helpers.describe(res)}"]
    else:
        probs = crashlib.replay(img, how)
    if crashlib.needs_recovery(img):
        probs.append(f"still needs recovery after {how}")
    return probs


def interrupted_said(img):
    """fsck.extref -n on an image whose journal needs recovery says what
    is in it (problems; empty: said)."""
    res = crashlib.fsck_run(img, "-n")
    if res.returncode != 0:
        return [f"fsck.extref -n: {helpers.describe(res)}"]
    if "a change was interrupted after its commit" in res.stdout:
        if "stock e2fsck -n not run" not in res.stdout:
            return ["fsck.extref -n ran e2fsck -n on an unreplayed commit"]
        return []
    if "holds no committed transaction" in res.stdout:
        return []
    return [f"fsck.extref -n did not say the journal needs recovery: "
            f"{res.stdout[-600:]}"]


def old_or_new(old, new, workdir, seen, mount_at=None, hows=REPLAYERS):
    """The oracle: before a repair, an image whose journal needs no
    recovery (what a kernel read-only mount accepts) is clean for both
    checkers and holds the old or the new tree; after the replay both
    checkers are clean and the tree is old or new."""
    runs = [0]

    def oracle(img, how):
        probs = []
        if crashlib.needs_recovery(img):
            probs += interrupted_said(img)
        else:
            # nothing committed yet, or the commit written home and the
            # journal emptied (the run's last writes)
            got = tree_of(img, workdir)
            if got not in (old, new):
                probs.append("no recovery needed, but the tree is "
                             "neither old nor new")
            probs += crashlib.checkers_clean(img, tail=600)
        probs += _replay(img, runs[0], hows)
        runs[0] += 1
        probs += crashlib.checkers_clean(img, tail=600)
        got = tree_of(img, workdir)
        if got == old:
            seen.add("old")
        elif got == new:
            seen.add("new")
        else:
            diff = sorted(k for k in set(old) | set(new) | set(got or {})
                          if (got or {}).get(k) not in (old.get(k),
                                                         new.get(k)))
            probs.append(f"neither old nor new: {diff[:6]} "
                         f"({len(diff)} paths)")
        return probs
    return oracle


def _done(trees, src, tmp_path):
    img = tmp_path / "done.img"
    crashlib.sparse_copy(trees["base"], img)
    res = update_op(src)(img)
    assert res.returncode == 0, helpers.describe(res)
    crashlib.checkers_clean(img)
    return img


@pytest.mark.parametrize("which,points", [("big", 12), ("small", 8)])
def test_crash_leaves_old_or_new(trees, tmp_path, which, points):
    src = trees[which]
    new = _model(src / "t")
    done = _done(trees, src, tmp_path)
    assert tree_of(done, tmp_path) == new
    seen = set()
    swept = crashlib.sweep(trees["base"], update_op(src),
                           old_or_new(trees["old"], new, tmp_path, seen),
                           tmp_path, points,
                           faults=crashlib.crash_and_powercut(4, 1),
                           replayers=(None,))
    swept.assert_clean(which)
    if which == "big":
        # more than the journal's blocks were written: it could not have
        # been one journal transaction of all of them
        assert swept.writes > 1024
    assert seen == {"old", "new"}, seen


def test_kernel_mount_of_a_crash_shows_the_old_tree(trees, tmp_path):
    """Crashed a quarter of the way through the large update (its new
    blocks being written early), the image needs no recovery (nothing was
    committed) and a kernel read-only loop mount shows exactly the old
    tree; fsck.extref -n finds nothing to report."""
    src = trees["big"]
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(trees["base"], probe)
    total, _ = crashlib.count(update_op(src), probe, tmp_path)
    img = tmp_path / "crash.img"
    crashlib.sparse_copy(trees["base"], img)
    # the first writes are the new blocks, early; the commit comes last
    for n in (total // 4, total // 6, total // 10):
        crashlib.sparse_copy(trees["base"], img)
        update_op(src)(img, {"EXTREF_FAULT": f"crash={n}"})
        if not crashlib.needs_recovery(img):
            break
    assert not crashlib.needs_recovery(img)
    assert helpers.sha256(img) != helpers.sha256(trees["base"])
    res = crashlib.fsck_run(img, "-fn")
    assert res.returncode == 0, helpers.describe(res)
    helpers.require_loop()
    with helpers.loop_mount(img, tmp_path / "mnt"):
        assert _model(tmp_path / "mnt" / "t") == trees["old"]
    # the finished update mounts as the new tree
    done = _done(trees, src, tmp_path)
    with helpers.loop_mount(done, tmp_path / "mnt2"):
        assert _model(tmp_path / "mnt2" / "t") == _model(src / "t")


def unused_inode_blocks(img):
    """The inode table blocks past each group's used part (its unused
    inodes, by stock dumpe2fs): nothing reads them, and a rolled-back
    update may have written new inodes there early."""
    out = helpers.run(["dumpe2fs", str(img)], check=False).stdout
    ipg = int(re.search(r"Inodes per group:\s+(\d+)", out).group(1))
    isz = int(re.search(r"Inode size:\s+(\d+)", out).group(1))
    bs = int(re.search(r"Block size:\s+(\d+)", out).group(1))
    per = bs // isz
    skip = set()
    for m in re.finditer(r"Inode table at (\d+)-(\d+).*?\n.*?"
                         r"(\d+) unused inodes", out):
        first, last, unused = (int(x) for x in m.groups())
        used_blocks = -(-(ipg - unused) // per)
        skip.update(range(first + used_blocks, last + 1))
    return skip


def used_digest(img, skip):
    """A digest of every block in use but those of skip."""
    from test_txn_rollback import free_blocks
    bs = int(helpers.dumpe2fs_header(img)["Block size"])
    free = free_blocks(img) | skip
    h = hashlib.sha256()
    with open(img, "rb") as f:
        blk = 0
        while b := f.read(bs):
            if blk not in free:
                h.update(blk.to_bytes(8, "little") + b)
            blk += 1
    return h.hexdigest(), free_blocks(img)


def test_update_too_big_for_the_journal_is_refused_whole(trees, tmp_path):
    """Every file replaced: the old inodes' table blocks alone (1200)
    outgrow the 1024-block journal.  With --atomic (keep the journal as
    it is) the update fails, saying so and what to do; the journal's
    length is the same; every block in use is as before (but the
    unused part of the inode tables, where new inodes went early), the
    free blocks are the same, both checkers are clean and the tree is
    the old one."""
    src = trees["all"]
    img = tmp_path / "big.img"
    crashlib.sparse_copy(trees["base"], img)
    skip = unused_inode_blocks(img)
    assert skip
    before = used_digest(img, skip)
    res = update_op(src, "--atomic")(img)
    assert res.returncode != 0, helpers.describe(res)
    assert "outgrow the journal" in res.stderr, res.stderr
    assert "tune2fs" in res.stderr, res.stderr
    assert used_digest(img, skip) == before
    assert unused_inode_blocks(img) == skip
    assert jblocks(img) == 1024
    assert crashlib.checkers_clean(img) == []
    assert tree_of(img, tmp_path) == trees["old"]


def jblocks(img):
    """The journal's length, s_maxlen, by stock dumpe2fs."""
    return int(helpers.dumpe2fs_header(img)["Total journal blocks"])


def jinode_size(img):
    """Inode 8's size, by stock debugfs."""
    out = crashlib._run(["debugfs", "-R", "stat <8>", str(img)]).stdout
    return int(re.search(r"\bSize: (\d+)", out).group(1))


def test_update_too_big_for_the_journal_grows_it(trees, tmp_path):
    """The same update without --atomic: rolled back, the journal grown
    to hold it, then done again as one transaction.  The journal
    superblock (s_maxlen) and inode 8 (size, blocks mapped) say the new
    length; the journal took two commits (the growth's, the update's);
    both checkers are clean; the tree is the new one, for stock debugfs
    and a kernel read-only mount."""
    src = trees["all"]
    img = tmp_path / "big.img"
    crashlib.sparse_copy(trees["base"], img)
    seq = int(helpers.dumpe2fs_header(img)["Journal sequence"], 16)
    argv = [helpers.binary("mkfs.extref"), "--update", "--delete", "-d",
            str(src), str(img)]
    res = helpers.run(argv, check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert res.stderr == "", res.stderr
    assert "journal grew by" in res.stdout, res.stdout
    hdr = helpers.dumpe2fs_header(img)
    n = jblocks(img)
    assert n > 1024, hdr
    assert int(hdr["Journal sequence"], 16) == seq + 2, hdr
    assert jinode_size(img) == n * 1024
    out = crashlib._run(["debugfs", "-R", "bmap <8> %d" % (n - 1),
                         str(img)])
    assert int(out.stdout.strip() or 0) > 0, helpers.describe(out)
    assert crashlib.checkers_clean(img) == []
    # the superblock's backup of inode 8's map is the new one: e2fsck
    # (which reads it only when it may write) has nothing to back up
    copy = tmp_path / "copy.img"
    crashlib.sparse_copy(img, copy)
    res = crashlib.e2fsck(copy, "-fy")
    assert res.returncode == 0 and "journal" not in res.stdout.lower(), \
        helpers.describe(res)
    new = _model(src / "t")
    assert tree_of(img, tmp_path) == new
    with helpers.loop_mount(img, tmp_path / "mnt"):
        assert _model(tmp_path / "mnt" / "t") == new


def _file_opens(argv, log, env=None):
    """Run argv under stock strace (env added): the result and how many
    times it opened a regular file of the source (f000..f299, never a
    directory): each run of the update opens each file it reads."""
    res = helpers.run(["strace", "-f", "-qq", "-e", "trace=open,openat",
                       "-o", str(log), *argv], check=False,
                      env={**helpers.no_leak_check_env(), **(env or {})})
    n = sum(1 for line in log.read_text().splitlines()
            if re.search(r'"f\d{3}"', line) and "O_DIRECTORY" not in line
            and "= -1" not in line)
    return res, n


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_update_too_big_for_the_journal_grows_first_and_runs_once(
        trees, tmp_path):
    """The update of every file, too big for the 1,024-block journal:
    the journal grows first, from the estimate, and the update runs
    once.  Oracle: stock strace counts the opens of the source's files,
    which equal those of the same update on a copy whose journal stock
    tune2fs made 8 MiB beforehand (no growth there); the journal
    sequence (stock dumpe2fs) took two commits (growth, update); both
    checkers clean; the new tree for debugfs and a kernel mount."""
    src = trees["all"]
    argv = [helpers.binary("mkfs.extref"), "--update", "--delete", "-d",
            str(src)]
    ref = tmp_path / "ref.img"
    crashlib.sparse_copy(trees["base"], ref)
    for opt in (["-O", "^has_journal"], ["-J", "size=8"]):
        crashlib._run(["tune2fs", *opt, str(ref)])
    assert jblocks(ref) == 8192
    res, once = _file_opens(argv + [str(ref)], tmp_path / "ref.log")
    assert res.returncode == 0, helpers.describe(res)
    assert "journal grew by" not in res.stdout, res.stdout
    assert once >= (DIRS - 1) * FILES  # every file of v2 read: it counts
    img = tmp_path / "grow.img"
    crashlib.sparse_copy(trees["base"], img)
    seq = int(helpers.dumpe2fs_header(img)["Journal sequence"], 16)
    res, n = _file_opens(argv + [str(img)], tmp_path / "grow.log")
    assert res.returncode == 0, helpers.describe(res)
    assert "journal grew by" in res.stdout, res.stdout
    assert n == once, (n, once)
    hdr = helpers.dumpe2fs_header(img)
    assert jblocks(img) > 1024, hdr
    assert int(hdr["Journal sequence"], 16) == seq + 2, hdr
    assert crashlib.checkers_clean(img) == []
    new = _model(src / "t")
    assert tree_of(img, tmp_path) == new
    with helpers.loop_mount(img, tmp_path / "mnt"):
        assert _model(tmp_path / "mnt" / "t") == new


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("estimate,growths", [(0, 1), (1030, 2)])
def test_short_estimate_falls_back_to_the_measured_rerun(
        trees, tmp_path, estimate, growths):
    """The estimate forced short (EXTREF_FAULT_FIT=N: N blocks, fault-
    injection builds) for the update of every file, whose commit holds
    more than 1,200 blocks: with 0 the journal is not grown before the
    first run, with 1030 it is grown too little; that run outgrows the
    journal, is rolled back, and the measured rerun grows the journal and
    runs the update again.  Oracles: stock strace counts twice the opens
    of the source's files that the same update makes with the estimate
    (run once); the journal sequence (stock dumpe2fs) took a commit for
    each growth and one for the update, none for the rolled-back run;
    the journal is longer; stock e2fsck -fn and fsck.extref -n are
    clean; the tree is the new one for stock debugfs rdump and a kernel
    read-only mount."""
    src = trees["all"]
    argv = [helpers.binary("mkfs.extref"), "--update", "--delete", "-d",
            str(src)]
    ref = tmp_path / "ref.img"
    crashlib.sparse_copy(trees["base"], ref)
    res, once = _file_opens(argv + [str(ref)], tmp_path / "ref.log")
    assert res.returncode == 0, helpers.describe(res)
    assert once >= (DIRS - 1) * FILES  # every file of v2 read: it counts
    img = tmp_path / "short.img"
    crashlib.sparse_copy(trees["base"], img)
    seq = int(helpers.dumpe2fs_header(img)["Journal sequence"], 16)
    res, n = _file_opens(argv + [str(img)], tmp_path / "short.log",
                         {"EXTREF_FAULT_FIT": str(estimate)})
    assert res.returncode == 0, helpers.describe(res)
    assert res.stderr == "", res.stderr
    assert n == 2 * once, (n, once)
    grew = re.search(r"journal grew by\s+([\d.]+) MiB", res.stdout)
    assert grew, res.stdout
    hdr = helpers.dumpe2fs_header(img)
    n = jblocks(img)
    assert n > 1024, hdr
    assert abs(float(grew.group(1)) - (n - 1024) / 1024) < 0.06, \
        (res.stdout, n)
    assert int(hdr["Journal sequence"], 16) == seq + growths + 1, hdr
    assert jinode_size(img) == n * 1024
    assert crashlib.checkers_clean(img) == []
    new = _model(src / "t")
    assert tree_of(img, tmp_path) == new
    with helpers.loop_mount(img, tmp_path / "mnt"):
        assert _model(tmp_path / "mnt" / "t") == new


def test_layer_too_big_for_the_journal_grows_it(trees, tmp_path):
    """The same change as an OCI layer (an archive file: read again from
    its start after the journal grew; d3 removed by a whiteout): one
    transaction after the growth, both checkers clean, the new tree."""
    src = tmp_path / "layer"
    shutil.copytree(trees["all"], src, symlinks=True)
    (src / "t" / ".wh.d3").write_bytes(b"")
    os.utime(src / "t", (1_500_000_000, 1_500_000_000))
    tar = tmp_path / "layer.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(src / "t", arcname="t")
    img = tmp_path / "layer.img"
    crashlib.sparse_copy(trees["base"], img)
    seq = int(helpers.dumpe2fs_header(img)["Journal sequence"], 16)
    res = helpers.run([helpers.binary("mkfs.extref"), "--update", "-q",
                       "-d", str(tar), str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert res.stderr == "", res.stderr
    hdr = helpers.dumpe2fs_header(img)
    assert jblocks(img) > 1024, hdr
    assert int(hdr["Journal sequence"], 16) == seq + 2, hdr
    assert crashlib.checkers_clean(img) == []
    assert tree_of(img, tmp_path) == _model(trees["all"] / "t")


def _first_crash(base, op, img, pred, lo, hi):
    """The least n in [lo, hi] whose crash=n leaves an image for which
    pred holds (pred holds for every later n too)."""
    while lo < hi:
        mid = (lo + hi) // 2
        crashlib.sparse_copy(base, img)
        op(img, {"EXTREF_FAULT": f"crash={mid}"})
        if pred(img):
            hi = mid
        else:
            lo = mid + 1
    return lo


def test_crash_while_the_journal_grows(trees, tmp_path):
    """The update that grows the journal, crashed at a sample of its
    writes and around the growth: inside its transaction (the zeros and
    the copies before its commit block), at the commit block, between
    the growth's checkpoint and the journal superblock's new length, and
    after.  Between those two, inode 8 maps more blocks than s_maxlen:
    before any repair stock e2fsck -fn and fsck.extref -fn are clean and
    a kernel read-only mount shows the old tree.  After the replay
    (fsck.extref -p, the next writer, e2fsck -fy, in turn) both checkers
    are clean and the tree is exactly old or new."""
    src = trees["all"]
    new = _model(src / "t")
    op = update_op(src)
    base = trees["base"]
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(base, probe)
    total, _ = crashlib.count(op, probe, tmp_path)
    img = tmp_path / "crash.img"

    def grown(im):          # the growth committed: replayed, inode 8
        crashlib.e2fsck(im, "-fy")
        return jinode_size(im) > 1024 * 1024
    commit = _first_crash(base, op, img, grown, 1, total)
    jsb = _first_crash(base, op, img, lambda im: jblocks(im) > 1024,
                       commit, total)
    assert 1 < commit < jsb < total, (commit, jsb, total)
    # between the growth's checkpoint and the new s_maxlen
    crashlib.sparse_copy(base, img)
    op(img, {"EXTREF_FAULT": f"crash={jsb - 1}"})
    assert not crashlib.needs_recovery(img)
    assert jblocks(img) == 1024 and jinode_size(img) > 1024 * 1024
    assert crashlib.checkers_clean(img) == []
    assert tree_of(img, tmp_path) == trees["old"]
    with helpers.loop_mount(img, tmp_path / "mnt"):
        assert _model(tmp_path / "mnt" / "t") == trees["old"]
    # run again, it takes the blocks inode 8 has and grows from there
    res = op(img)
    assert res.returncode == 0, helpers.describe(res)
    assert jinode_size(img) == jblocks(img) * 1024 > 1024 * 1024
    assert crashlib.checkers_clean(img) == []
    assert tree_of(img, tmp_path) == new
    points = sorted({commit - k for k in (1, 2, 3, 5, 8)} |
                    {commit, commit + 1, jsb - 1, jsb, jsb + 1} |
                    set(crashlib.crash_points(total, 8)))
    seen = set()
    oracle = old_or_new(trees["old"], new, tmp_path, seen)
    failures = []
    for i, n in enumerate(points):
        for fault in [f"crash={n}"] + ([f"powercut={n},seed={n}"]
                                      if i % 3 == 0 else []):
            crashlib.sparse_copy(base, img)
            op(img, {"EXTREF_FAULT": fault})
            probs = oracle(img, None)
            if probs:
                failures.append((fault, probs))
    assert not failures, (commit, jsb, total, failures[:6])
    assert seen == {"old", "new"}, seen


def test_no_room_to_grow_the_journal_is_refused_whole(trees, tmp_path):
    """An image whose free space holds the update's new blocks but not
    the journal's growth besides: refused, saying so and what to do;
    every block in use as before (but the unused part of the inode
    tables), the free blocks and the journal's length the same, both
    checkers clean and the tree the old one."""
    root = tmp_path / "full"
    shutil.copytree(trees["root"] / "v1", root, symlinks=True)
    free = int(helpers.dumpe2fs_header(trees["base"])["Free blocks"])
    (root / "filler").write_bytes(random.Random(32).randbytes(
        (free - 1400) * 1024))
    img = tmp_path / "full.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "1024", "-I",
                 "1024", "-N", "4096", "-J", "size=1", "-d", str(root),
                 str(img), "24M"])
    assert int(helpers.dumpe2fs_header(img)["Free blocks"]) < 1500
    skip = unused_inode_blocks(img)
    before = used_digest(img, skip)
    res = update_op(trees["all"])(img)
    assert res.returncode != 0, helpers.describe(res)
    assert "outgrow the journal" in res.stderr, res.stderr
    assert "no room to grow" in res.stderr and "--grow" in res.stderr, \
        res.stderr
    assert used_digest(img, skip) == before
    assert jblocks(img) == 1024 and jinode_size(img) == 1024 * 1024
    assert crashlib.checkers_clean(img) == []
    assert tree_of(img, tmp_path) == trees["old"]


def test_real_signals(trees, tmp_path):
    """The large update killed with SIGKILL at a few moments of its run
    (not at a chosen write: wherever it is then): after the replay by
    fsck.extref -p both checkers are clean and the tree is old or new."""
    import signal
    import subprocess
    import time
    src = trees["big"]
    new = _model(src / "t")
    argv = [helpers.binary("mkfs.extref"), "--update", "--delete", "-d",
            str(src)]
    img = tmp_path / "k.img"
    killed = []
    for delay in (0.05, 0.2, 0.4):
        crashlib.sparse_copy(trees["base"], img)
        proc = subprocess.Popen([*argv, str(img)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                preexec_fn=helpers.default_signals)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=120)
        killed.append(proc.returncode < 0)
        probs = _replay(img, 0) + crashlib.checkers_clean(img, tail=600)
        assert not probs, (delay, probs)
        assert tree_of(img, tmp_path) in (trees["old"], new), delay
    assert killed[0], "the update ended before the first signal"


BEFORE = "interrupted while updating, before its commit: the image is " \
    "exactly as before the update"
AFTER = "interrupted after the update was committed: the image holds " \
    "the new version"


def _pwrites(argv, tmp_path):
    log = tmp_path / "pwrite.log"
    res = subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e",
                          "trace=pwrite64", *argv], capture_output=True,
                         text=True, env=dict(os.environ, **helpers.no_leak_check_env()))
    assert res.returncode == 0, helpers.describe(res)
    return sum(1 for line in log.read_text().splitlines()
               if "pwrite64(" in line)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_signal_says_what_the_image_holds(trees, tmp_path):
    """SIGTERM or SIGINT delivered at chosen writes of the large update
    (stock strace's injection): the update's commit and the journal's
    growth hold the signal until they end, so the message is one of two,
    and each is true of the image: 'before its commit' and the image
    needs no recovery and holds the old tree, clean for both checkers
    (what a kernel mount reads); or 'committed' and, replayed, the new
    tree.  fsck.extref -n says what a journal needing recovery holds."""
    src = trees["big"]
    new = _model(src / "t")
    img = tmp_path / "s.img"
    # not -q: the summary and the progress's wrapping of the callbacks'
    # priv are in play
    argv = [helpers.binary("mkfs.extref"), "--update", "--delete", "-d",
            str(src), str(img)]
    crashlib.sparse_copy(trees["base"], img)
    total = _pwrites(argv, tmp_path)
    assert total > 1000, total
    said = set()
    for k, sig in enumerate(("TERM", "INT", "TERM", "INT", "TERM", "TERM",
                             "INT")):
        at = total * (k + 1) // 8
        crashlib.sparse_copy(trees["base"], img)
        res = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null",
                              "-e", "trace=pwrite64", "-e",
                              f"inject=pwrite64:signal={sig}:when={at}",
                              *argv], capture_output=True, text=True,
                             env=dict(os.environ, **helpers.no_leak_check_env()),
                             preexec_fn=helpers.default_signals)
        where = f"SIG{sig} at write {at} of {total}"
        assert res.returncode != 0, (where, helpers.describe(res))
        before, after = BEFORE in res.stderr, AFTER in res.stderr
        assert before != after, (where, res.stderr)
        assert f"mkfs.extref: {img}: interrupted" in res.stderr, res.stderr
        if before:
            said.add("before")
            assert not crashlib.needs_recovery(img), where
            assert crashlib.checkers_clean(img, tail=600) == [], where
            assert tree_of(img, tmp_path) == trees["old"], where
            continue
        said.add("after")
        if crashlib.needs_recovery(img):
            assert interrupted_said(img) == [], where
        assert _replay(img, k) == [], where
        assert crashlib.checkers_clean(img, tail=600) == [], where
        assert tree_of(img, tmp_path) == new, where
    assert said == {"before", "after"}, said


def test_auto_sized_journal_holds_a_rewrite_of_every_inode(tmp_path):
    """An image mkfs.extref sizes itself gets a journal that holds one
    transaction rewriting every metadata block of its source
    (plan_size.c), so an update that changes every inode commits once
    and the journal does not grow.  5,000 files with 1 KiB blocks and
    1 KiB inodes: their inode table blocks alone are more than the
    4 MiB journal (4,096 blocks) such an image used to get.  The update
    changes every file's mode: the journal's length is the same (stock
    dumpe2fs), its sequence one more (one commit), both checkers clean,
    and every mode new for stock debugfs."""
    v1 = tmp_path / "v1" / "t"
    for d in range(10):
        sub = v1 / f"d{d}"
        sub.mkdir(parents=True)
        for i in range(500):
            (sub / f"f{i:03d}").touch(mode=0o644)
            os.chmod(sub / f"f{i:03d}", 0o644)
    img = tmp_path / "auto.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "1024", "-I",
                 "1024", "-d", str(tmp_path / "v1"), str(img)])
    hdr = helpers.dumpe2fs_header(img)
    length, seq = jblocks(img), int(hdr["Journal sequence"], 16)
    assert length > 5000, hdr
    # -J size= wins, and the image is sized for that journal
    small = tmp_path / "small.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "1024", "-I",
                 "1024", "-J", "size=4", "-d", str(tmp_path / "v1"),
                 str(small)])
    assert jblocks(small) == 4096
    assert small.stat().st_size < img.stat().st_size - (length - 4096) * 900
    for f in v1.glob("d*/f*"):
        os.chmod(f, 0o600)
    res = helpers.run([helpers.binary("mkfs.extref"), "--update", "-d",
                       str(tmp_path / "v1"), str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert "journal grew" not in res.stdout, res.stdout
    hdr = helpers.dumpe2fs_header(img)
    assert jblocks(img) == length, hdr
    assert int(hdr["Journal sequence"], 16) == seq + 1, hdr
    assert crashlib.checkers_clean(img) == []
    for d, i in ((0, 0), (4, 250), (9, 499)):
        out = crashlib._run(["debugfs", "-R", f"stat /t/d{d}/f{i:03d}",
                             str(img)]).stdout
        assert re.search(r"Mode:\s+0?0600\b", out), out
