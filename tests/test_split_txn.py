"""Changes bigger than the journal (issue 11): an interrupted whole leaves
nothing visible or the complete result.

The images have the smallest ext4 journal (mke2fs -J size=1: 1024 blocks
of 1 KiB).  The source tree holds more directories than the journal has
blocks, so its copy's blocks could never be one journal transaction: the
recursive reflink writes the blocks it allocates in place before its one
commit (libfs/txn/txn_split.c) and journals only the blocks that were in
use before.  Crashed after a sample of its writes (spread over the whole
run; EXTREF_CRASH_FULL=1 for every write) and replayed by stock
`e2fsck -fy` or by the next extref open, the image is clean for stock
`e2fsck -fn` and `fsck.extref -fn`, lost+found holds nothing, the
reference counts are exactly those before or after, and the copy is
absent or complete and the same, as stock debugfs rdump reads it, as the
source.  A copy whose one commit the journal cannot hold (1 KiB inodes:
an inode table block each) grows the journal first; without room for
that, or inside begin ... commit, it is refused before anything changes.
"""

import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
pytestmark = [pytest.mark.crash,
              pytest.mark.skipif(_NO_FAULTS is not None,
                                 reason=_NO_FAULTS or "")]

FULL = os.environ.get("EXTREF_CRASH_FULL") == "1"
POINTS = 4000 if FULL else 26
NDIRS = 1100          # more than the 1024 blocks of the journal
NFILES = 800          # their inode table blocks outgrow half of it


def _make_tree(root, rng):
    top = root / "t"
    for i in range(NDIRS):
        d = top / f"d{i // 100:02d}" / f"e{i:04d}"
        d.mkdir(parents=True)
        (d / "f").write_bytes(rng.randbytes(700 + (i * 37) % 1500))
    for i in range(40):   # slow symlinks: a block each
        os.symlink("x" * 80 + f"/target{i}", top / f"l{i:02d}")
    (top / "big").write_bytes(rng.randbytes(40000))
    return top


def _journal_blocks(img):
    return int(helpers.dumpe2fs_header(img)["Total journal blocks"])


def tree_of(img, path, workdir):
    """{relative path: bytes, ('link', target) or None for a directory} of
    the tree at path as stock debugfs rdump writes it, or None.  Dumped
    to /dev/shm when there is one (thousands of small files)."""
    shm = Path("/dev/shm")
    out = Path(tempfile.mkdtemp(prefix="extref-rd-",
                                dir=shm if shm.is_dir() else workdir))
    crashlib._run(["debugfs", "-n", "-R", f'rdump "{path}" {out}', str(img)])
    top = out / Path(path).name
    try:
        return _walk(top) if top.exists() else None
    finally:
        shutil.rmtree(out)


def _walk(top):
    tree = {}
    for root, dirs, files in os.walk(top):
        rel = os.path.relpath(root, top)
        for name in dirs + files:
            p = Path(root) / name
            key = os.path.normpath(os.path.join(rel, name))
            if p.is_symlink():
                tree[key] = ("link", os.readlink(p))
            elif p.is_dir():
                tree[key] = None
            else:
                tree[key] = p.read_bytes()
    return tree


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    root = tmp_path_factory.mktemp("split")
    host = root / "host"
    _make_tree(host, random.Random(11))
    img = root / "base.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024",
                 "-J", "size=1", "-N", "8192", "-d", str(host), str(img),
                 "40M"])
    shutil.rmtree(host)
    helpers.run([helpers.binary("mkfs.extref"), "-q", "--convert",
                 str(img)])
    helpers.e2fsck_fn(img)
    src = tree_of(img, "/t", root)
    assert src and sum(1 for v in src.values() if v is None) > NDIRS
    yield {"img": img, "src": src}
    shutil.rmtree(root, ignore_errors=True)


def run_cmds(img, cmds, fault=None):
    return crashlib.shell_op(cmds)(img, {"EXTREF_FAULT": fault}
                                   if fault else None)


def lost_found(img):
    return sorted((crashlib.ls_dir(img, "/lost+found") or {}).keys())


def nothing_or_the_copy(src, before, after, workdir, seen):
    """The oracle: both checkers clean, lost+found empty, the copy absent
    with the counts before or whole with the counts after; the outcome
    is added to seen."""
    def oracle(img, how):
        probs = crashlib.checkers_clean(img, tail=600)
        if lost_found(img):
            probs.append(f"lost+found: {lost_found(img)[:5]}")
        names = crashlib.ls_dir(img, "/") or {}
        seen.add("t.copy" in names)
        recs = crashlib.refcount_records(img)
        if "t.copy" in names:
            if tree_of(img, "/t.copy", workdir) != src:
                probs.append("a partial or different copy is visible")
            if recs != after:
                probs.append("copied, but the counts are not those after")
        elif recs != before:
            probs.append("no copy, but the counts changed")
        if tree_of(img, "/t", workdir) != src:
            probs.append("the source changed")
        return probs
    return oracle


def test_reflink_r_bigger_than_the_journal_is_one_commit(base, tmp_path):
    """The copy succeeds although its directories alone outnumber the
    journal's blocks; the copy reads back the same through stock debugfs
    and a read-only loop mount."""
    img0, src = base["img"], base["src"]
    assert NDIRS > _journal_blocks(img0)
    img = tmp_path / "done.img"
    crashlib.sparse_copy(img0, img)
    res = run_cmds(img, ["reflink -r /t /t.copy"])
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    assert crashlib.fsck_run(img, "-fn").returncode == 0
    assert tree_of(img, "/t.copy", tmp_path) == src
    assert crashlib.refcount_records(img) != crashlib.refcount_records(img0)
    helpers.require_loop()
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt):
        assert (mnt / "t.copy" / "big").read_bytes() == src["big"]
        assert os.readlink(mnt / "t.copy" / "l07") == src["l07"][1]
        n = sum(1 for _ in (mnt / "t.copy").rglob("f"))
        assert n == NDIRS


@pytest.mark.slow
def test_crash_leaves_nothing_or_the_whole_copy(base, tmp_path):
    img0, src = base["img"], base["src"]
    cmds = ["reflink -r /t /t.copy"]
    before = crashlib.refcount_records(img0)
    done = tmp_path / "done.img"
    crashlib.sparse_copy(img0, done)
    assert run_cmds(done, cmds).returncode == 0
    after = crashlib.refcount_records(done)
    seen = set()
    swept = crashlib.sweep(img0, crashlib.shell_op(cmds),
                           nothing_or_the_copy(src, before, after, tmp_path,
                                               seen),
                           tmp_path, POINTS,
                           faults=crashlib.crash_and_powercut(3, 0))
    assert swept.writes > _journal_blocks(img0)
    swept.assert_clean()
    assert seen == {True, False}   # both outcomes were met


def crash_half_way(img0, cmds, tmp_path):
    """A copy of img0 crashed half-way through cmds."""
    probe = tmp_path / "probe.img"
    crashlib.sparse_copy(img0, probe)
    total, _ = crashlib.count(crashlib.shell_op(cmds), probe, tmp_path)
    img = tmp_path / "crash.img"
    crashlib.sparse_copy(img0, img)
    run_cmds(img, cmds, f"crash={total // 2}")
    return img


def test_kernel_shows_no_partial_copy(base, tmp_path):
    """Crashed half-way (every block written so far is one the copy
    allocated: nothing is committed, no recovery needed), the image
    mounted read-only by the kernel shows the source and no copy."""
    img0, src = base["img"], base["src"]
    img = crash_half_way(img0, ["reflink -r /t /t.copy"], tmp_path)
    assert not crashlib.needs_recovery(img)
    assert helpers.sha256(img) != helpers.sha256(img0)   # it wrote
    helpers.require_loop()
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt):
        assert sorted(os.listdir(mnt)) == ["lost+found", "t"]
        assert os.listdir(mnt / "lost+found") == []
        assert (mnt / "t" / "big").read_bytes() == src["big"]
    helpers.e2fsck_fn(img)
    assert crashlib.fsck_run(img, "-fn").returncode == 0


def _growths(img0, cmds, workdir):
    """How many array growths (EXTREF_FAULT_NOMEM's unit) the run makes:
    the smallest N whose failure the run does not meet, less one."""
    lo, hi = 1, 1 << 20
    img = Path(workdir) / "g.img"
    while lo < hi:
        mid = (lo + hi) // 2
        crashlib.sparse_copy(img0, img)
        res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R",
                             cmds[0], str(img)],
                            env={"EXTREF_FAULT_NOMEM": str(mid)})
        if "growth" in res.stderr:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@pytest.mark.slow
def test_late_failure_rolls_back_the_whole_copy(base, tmp_path):
    """A recursive reflink made to fail late (an allocation of memory,
    EXTREF_FAULT_NOMEM, near the end of the run, after blocks were
    written in place early: the image file differs) says so, naming the
    path, and leaves every block in use and the free-block map exactly as
    before; both checkers are clean and there is no copy."""
    from test_txn_rollback import used_digest
    img0 = base["img"]
    cmds = ["reflink -r /t /t.copy"]
    total = _growths(img0, cmds, tmp_path)
    assert total > 100
    before = used_digest(img0)
    img = tmp_path / "fail.img"
    for n in (total - total // 10, total - total // 4, total - total // 2):
        crashlib.sparse_copy(img0, img)
        res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R",
                             cmds[0], str(img)],
                            env={"EXTREF_FAULT_NOMEM": str(n)})
        assert res.returncode != 0, helpers.describe(res)
        assert "/t.copy" in res.stderr, res.stderr
        if helpers.sha256(img) != helpers.sha256(img0):
            break
    else:
        pytest.fail("no failure came after a block was written early")
    assert used_digest(img) == before
    assert "t.copy" not in (crashlib.ls_dir(img, "/") or {})
    helpers.e2fsck_fn(img)
    assert crashlib.fsck_run(img, "-fn").returncode == 0


def _flat_tree(host, n, filler=0):
    """An image of the smallest journal mke2fs allows (-J size=1: 1024
    blocks of 1 KiB) and 1 KiB inodes (an inode table block each), holding
    /t: n small files in directories of 100, and /filler of filler KiB,
    converted by mkfs.extref; the files' paths and bytes."""
    files = {}
    for i in range(n):
        d = host / "t" / f"d{i // 100}"
        d.mkdir(parents=True, exist_ok=True)
        files[f"t/d{i // 100}/f{i}"] = b"file %d\n" % i
        (d / f"f{i}").write_bytes(files[f"t/d{i // 100}/f{i}"])
    if filler:
        (host / "filler").write_bytes(b"\xa5" * filler * 1024)
    img = host.parent / (host.name + ".img")
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-I",
                 "1024", "-J", "size=1", "-N", "4096", "-d", str(host),
                 str(img), "24M"])
    helpers.run([helpers.binary("mkfs.extref"), "-q", "--convert",
                 str(img)])
    assert _journal_blocks(img) == 1024
    return img, files


def _cat(img, path):
    """path's bytes as stock debugfs cat writes them (text: the files
    hold ASCII)."""
    return crashlib._run(["debugfs", "-R", f"cat {path}",
                          str(img)]).stdout.encode()


def test_too_big_grows_the_journal_first(tmp_path):
    """1 KiB inodes on 1 KiB blocks: the inode table blocks of 1100 new
    inodes alone outgrow the 1024-block journal.  debugfs.extref's
    reflink -r grows the journal first (it says so) and copies the tree
    in one commit: two commits in all (the growth's, the copy's, by the
    journal sequence of stock dumpe2fs), the journal longer; stock
    e2fsck -fn and fsck.extref -fn are clean; every file of the copy
    reads the source's bytes through stock debugfs cat."""
    img, files = _flat_tree(tmp_path / "host", 1100)
    seq = int(helpers.dumpe2fs_header(img)["Journal sequence"], 16)
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R",
                         "reflink -r /t /t.copy", str(img)])
    assert res.returncode == 0, helpers.describe(res)
    assert "the journal grew from 1024 to" in res.stdout, res.stdout
    assert "linked directory tree /t to /t.copy" in res.stdout, res.stdout
    hdr = helpers.dumpe2fs_header(img)
    assert _journal_blocks(img) > 1024, hdr
    assert int(hdr["Journal sequence"], 16) == seq + 2, hdr
    helpers.e2fsck_fn(img)
    assert crashlib.fsck_run(img, "-fn").returncode == 0
    # a sample of the copy's files by stock debugfs cat, every one by
    # stock debugfs rdump
    for i in list(range(0, 1100, 37)) + [1099]:
        rel = f"d{i // 100}/f{i}"
        assert _cat(img, f"/t.copy/{rel}") == files[f"t/{rel}"], rel
    out = tmp_path / "rdump"
    out.mkdir()
    crashlib._run(["debugfs", "-R", f"rdump /t.copy {out}", str(img)])
    dumped = {"t/" + str(p.relative_to(out / "t.copy")): p.read_bytes()
              for p in (out / "t.copy").rglob("f*")}
    assert dumped == files


def test_too_big_without_room_to_grow_is_refused_up_front(tmp_path):
    """The same copy on an image whose free space cannot hold the
    journal's growth, or inside begin ... commit (the journal cannot
    change inside a transaction): refused before anything is written
    (the image file byte-for-byte as before), with a message naming the
    journal and the path; a smaller part of it fits, and is copied."""
    probe, _ = _flat_tree(tmp_path / "probe", 1100)
    free = int(helpers.dumpe2fs_header(probe)["Free blocks"])
    img, _ = _flat_tree(tmp_path / "full", 1100, filler=free - 150)
    assert int(helpers.dumpe2fs_header(img)["Free blocks"]) < 300
    digest = helpers.sha256(img)
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R",
                         "reflink -r /t /t.copy", str(img)])
    assert res.returncode != 0
    assert "journal can hold" in res.stderr, res.stderr
    assert "t.copy" in res.stderr or "/t" in res.stderr, res.stderr
    assert "grew" not in res.stdout, res.stdout
    assert helpers.sha256(img) == digest
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R",
                         "reflink -r /t/d3 /d3.copy", str(img)])
    assert res.returncode == 0, helpers.describe(res)
    assert _journal_blocks(img) == 1024
    helpers.e2fsck_fn(img)
    # room enough, but inside a batch
    digest = helpers.sha256(probe)
    script = tmp_path / "batch"
    script.write_text("begin\nreflink -r /t /t.copy\ncommit\n")
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-f",
                         str(script), str(probe)])
    assert res.returncode != 0
    assert "journal can hold" in res.stderr, res.stderr
    assert helpers.sha256(probe) == digest


@pytest.mark.slow
def test_crash_between_dedupe_parts_keeps_every_file(tmp_path):
    """mkfs.extref --convert --dedup=block of an image with the smallest
    journal and enough duplicates (1 KiB inodes: an inode table block
    each) that the dedupe commits in several transactions (between two
    whole dedupes).  Crashed after a sample of
    its writes and replayed by stock e2fsck -fy: both checkers are clean
    and every file holds its bytes (a part only changes which blocks are
    shared, never a byte of a file)."""
    rng = random.Random(5)
    host = tmp_path / "host"
    host.mkdir()
    blobs = [rng.randbytes(3072) for _ in range(8)]
    for i in range(NFILES):
        (host / f"f{i:04d}").write_bytes(blobs[i % 8] + bytes([i % 251]))
    plain = tmp_path / "plain.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-I",
                 "1024", "-J", "size=1", "-N", "2048", "-d", str(host),
                 str(plain), "24M"])
    shutil.rmtree(host)
    want = tree_of(plain, "/", tmp_path)
    assert want and sum(1 for v in want.values() if v) == NFILES
    mkfs = crashlib.tool_op([helpers.binary("mkfs.extref"), "-q",
                             "--convert", "--dedup=block"])
    parts = set()
    oracle = crashlib.converted_or_not(
        lambda img: tree_of(img, "/", tmp_path), want,
        lambda recs: parts.add(tuple(recs)) or [])
    crashlib.sweep(plain, mkfs, oracle, tmp_path, 16 if not FULL else 400,
                   faults=crashlib.crash_or_powercut(3, 0),
                   replayers=("e2fsck",)).assert_clean()
    # a crash left the sharing part-done: the dedupe was in parts
    assert len(parts) >= 2, len(parts)


@pytest.mark.slow
def test_single_file_bigger_than_the_journal(tmp_path):
    """A file of 86,000 one-block extents (data every other block): its
    copy's extent tree alone needs more blocks than the 1024-block
    journal holds (stock debugfs's block count says so), yet reflink is
    one commit.  The copy reads back the same through a read-only loop
    mount; crashed half-way and replayed, there is no copy and both
    checkers are clean."""
    host = tmp_path / "host"
    host.mkdir()
    n = 86000
    block = random.Random(3).randbytes(1020)
    fd = os.open(host / "frag", os.O_WRONLY | os.O_CREAT)
    try:
        for i in range(n):
            os.pwrite(fd, block + i.to_bytes(4, "little"), 2 * i * 1024)
    finally:
        os.close(fd)
    img0 = tmp_path / "frag.img"
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "1024", "-J",
                 "size=1", "-d", str(host), str(img0), "160M"])
    helpers.run([helpers.binary("mkfs.extref"), "-q", "--convert",
                 str(img0)])
    cmds = ["reflink /frag /frag.copy"]
    img = tmp_path / "done.img"
    crashlib.sparse_copy(img0, img)
    res = run_cmds(img, cmds)
    assert res.returncode == 0, helpers.describe(res)
    helpers.e2fsck_fn(img)
    assert crashlib.fsck_run(img, "-fn").returncode == 0
    stat = helpers.debugfs_stat(img, "/frag.copy")
    sectors = int(stat.split("Blockcount:")[1].split()[0])
    assert sectors // 2 - n > _journal_blocks(img)   # its tree's blocks
    helpers.require_loop()
    mnt = tmp_path / "mnt"
    with helpers.loop_mount(img, mnt):
        assert (mnt / "frag.copy").read_bytes() == \
            (host / "frag").read_bytes()
    crash = crash_half_way(img0, cmds, tmp_path)
    assert not crashlib.replay(crash, "extref")
    assert "frag.copy" not in (crashlib.ls_dir(crash, "/") or {})
    helpers.e2fsck_fn(crash)
    assert crashlib.fsck_run(crash, "-fn").returncode == 0


def test_write_open_replays_a_log_whose_flag_was_lost(tmp_path):
    """A power cut before a commit's first flush can keep the journal
    superblock's start and lose the superblock's needs_recovery (both
    are written before it).  Made with stock debugfs (jo/jw/jc, then
    feature ^needs_recovery): a write open replays the log, as e2fsck -y
    does, instead of refusing to take new transactions; the block the
    log holds is home and both checkers are clean."""
    img = tmp_path / "j.img"
    helpers.mkfs(img, "16M", "-q", "-b", "1024")
    out = helpers.run(["dumpe2fs", str(img)]).stdout
    last = [ln for ln in out.splitlines()
            if ln.strip().startswith("Free blocks: ")][-1]
    blk = int(last.split(":")[1].split(",")[0].split("-")[0])
    pat = tmp_path / "pat"
    pat.write_bytes(random.Random(9).randbytes(1024))
    helpers.run(["debugfs", "-w", "-f", "-", str(img)],
                input=f"jo\njw -b {blk} {pat}\njc\n")
    helpers.run(["debugfs", "-w", "-R", "feature ^needs_recovery",
                 str(img)])
    hdr = helpers.dumpe2fs_header(img)
    assert "needs_recovery" not in hdr["Filesystem features"]
    assert hdr["Journal start"] != "0"
    res = crashlib._run([crashlib.debugfs_extref(), "-w", "-R", "stats",
                         str(img)])
    assert res.returncode == 0, helpers.describe(res)
    assert "recovered the journal" in res.stderr, res.stderr
    with open(img, "rb") as f:
        f.seek(blk * 1024)
        assert f.read(1024) == pat.read_bytes()
    assert helpers.dumpe2fs_header(img)["Journal start"] == "0"
    helpers.e2fsck_fn(img)
    assert crashlib.fsck_run(img, "-fn").returncode == 0
