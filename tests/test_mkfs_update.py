"""mkfs.extref --update IMAGE -d SOURCE [--at PATH]: a second version of a
tree written into an existing image, sharing what the image holds.

v1 is built with -d; v2 is v1 with about 5% of its files changed (one
appended, one rewritten in the middle, one deleted, one new, one
renamed).  After --update the image holds v2 plus what only v1 had,
read back through a read-only loop mount of the kernel and stock
debugfs; its blocks in use grew by at most the blocks of v2 that no
block of v1 equals, plus metadata (the test computes that bound from the
data).  Stock e2fsck -fn and fsck.extref -fn are clean on every image a
test leaves.
"""

import hashlib
import os
import random
import re
import shutil
import stat
import subprocess

import pytest

import crashlib
import helpers
from test_mkfs_d import describe_tree

UUID = "5b1f0c2e-7a64-4d0b-9e1f-2468ace13579"
BS = 4096
EPOCH = {"SOURCE_DATE_EPOCH": "1650000000"}


def _data(rnd, n):
    return rnd.randbytes(n)


def build_v1(root, seed=7):
    """100 regular files in 5 directories, and the other kinds."""
    rnd = random.Random(seed)
    root.mkdir()
    for d in range(5):
        sub = root / f"dir{d}"
        sub.mkdir()
        for f in range(20):
            n = rnd.choice([rnd.randrange(1, 40000), 4 * BS, 3 * BS + 1])
            (sub / f"f{f:02d}").write_bytes(_data(rnd, n))
    (root / "dir0" / "sparse").write_bytes(b"")
    with open(root / "dir0" / "sparse", "r+b") as f:
        f.truncate(5 * BS)
        f.seek(2 * BS)
        f.write(_data(rnd, BS))
    os.symlink("dir0/f00", root / "link_fast")
    os.symlink("x" * 120, root / "link_slow")
    os.link(root / "dir1" / "f01", root / "dir1" / "f01_hard")
    os.setxattr(root / "dir2" / "f02", "user.note", b"v1 note")
    os.setxattr(root / "dir2", "user.dirnote", b"dir")
    os.setxattr(root / "dir3", "user.keep", b"kept")
    os.mkfifo(root / "fifo")
    os.mknod(root / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.chmod(root / "dir3" / "f03", 0o4755)
    os.chown(root / "dir4" / "f04", 1000, 1000)
    return root


def make_v2(v1, root):
    """v1 with 5 of its 100 files changed."""
    # cp -a keeps hard links, attributes, devices, FIFOs and times
    helpers.run(["cp", "-a", str(v1), str(root)])
    rnd = random.Random(99)
    with open(root / "dir0" / "f05", "ab") as f:   # appended
        f.write(_data(rnd, 3 * BS + 100))
    big = root / "dir1" / "f06"                    # rewritten in the middle
    size = big.stat().st_size
    with open(big, "r+b") as f:
        f.seek(size // 2)
        f.write(_data(rnd, 100))
    os.unlink(root / "dir2" / "f07")               # deleted
    (root / "dir3" / "new").write_bytes(_data(rnd, 5 * BS + 7))   # new
    os.rename(root / "dir4" / "f08", root / "dir4" / "f08_moved")  # renamed
    os.setxattr(root / "dir2" / "f02", "user.note", b"v2 note")
    os.removexattr(root / "dir2", "user.dirnote")   # gone from the image
    return root


def mkfs_d(img, src, env=None):
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-U", UUID, "-E",
                 f"hash_seed={UUID}", "-d", str(src), str(img)], env=env)


def update(img, src, *opts, env=None, check=True):
    return helpers.run([helpers.binary("mkfs.extref"), "--update", *opts,
                        "-d", str(src), str(img)], env=env, check=check)


def used_blocks(img):
    hdr = helpers.dumpe2fs_header(img)
    return int(hdr["Block count"]) - int(hdr["Free blocks"])


def checkers_clean(img):
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)


def expected_after(v1, v2):
    """v2, and what only v1 has (the update keeps it)."""
    d1, d2 = describe_tree(v1), describe_tree(v2)
    out = dict(d2)
    for rel, d in d1.items():
        if rel not in d2:
            out[rel] = d
    return out


def regular_files(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def blocks_bound(v1, v2):
    """Blocks of v2's data that no whole block of v1 equals (a file equal
    to a v1 file costs nothing; zeros are holes), and the entries that
    changed, for the metadata allowance."""
    f1 = regular_files(v1)
    old_files = set(f1.values())
    old_blocks = set()
    for data in f1.values():
        for i in range(len(data) // BS):
            old_blocks.add(data[i * BS:(i + 1) * BS])
    zero = bytes(BS)
    new_blocks, changed = 0, 0
    for rel, data in regular_files(v2).items():
        if data in old_files:
            continue
        changed += 1
        for i in range(-(-len(data) // BS)):
            blk = data[i * BS:(i + 1) * BS].ljust(BS, b"\0")
            if blk == zero:
                continue
            if (i + 1) * BS <= len(data) and blk in old_blocks:
                continue
            new_blocks += 1
    return new_blocks, changed


def test_update_second_version(tmp_path):
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    before = used_blocks(img)
    res = update(img, v2)
    assert "updated from" in res.stdout, res.stdout
    checkers_clean(img)
    after = used_blocks(img)
    new_blocks, changed = blocks_bound(v1, v2)
    # metadata: a directory or extent block per changed entry, at most
    bound = new_blocks + 2 * changed + 4
    assert 0 < after - before <= bound, (before, after, new_blocks, changed)
    # v2's files, and v1's f07 and f08 (only in the image) kept
    with helpers.loop_mount(img, tmp_path / "mnt"):
        got = describe_tree(tmp_path / "mnt")
    assert got == expected_after(v1, v2)
    # stock debugfs reads the same bytes
    for rel in ["dir0/f05", "dir1/f06", "dir3/new", "dir4/f08_moved",
                "dir1/f01_hard", "dir0/sparse"]:
        assert helpers.debugfs_cat(img, "/" + rel) == \
            (v2 / rel).read_bytes(), rel
    assert helpers.debugfs_cat(img, "/dir2/f07") == \
        (v1 / "dir2" / "f07").read_bytes()


def test_update_shares_renamed_and_unchanged(tmp_path):
    """A renamed file is a reflink of the image's copy; unchanged files
    keep their inodes; the second version costs a few blocks only."""
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    ino_before = helpers.debugfs_stat(img, "/dir0/f00")
    res = update(img, v2)
    m = re.search(r"(\d+) files unchanged, (\d+) reflinked", res.stdout)
    assert m, res.stdout
    assert int(m.group(2)) >= 1             # f08_moved
    assert int(m.group(1)) >= 90
    inode = re.search(r"Inode: (\d+)", ino_before).group(1)
    assert re.search(r"Inode: (\d+)", helpers.debugfs_stat(
        img, "/dir0/f00")).group(1) == inode
    # the moved file shares every block with the name it came from
    du = helpers.run([helpers.binary("debugfs.extref"), "-R",
                      "du --raw /dir4/f08 /dir4/f08_moved", str(img)]).stdout
    rows = [line.split() for line in du.splitlines()[1:]]
    assert [int(r[1]) for r in rows] == [0, 0], du
    checkers_clean(img)


TIME_LINE = re.compile(r"^\s*(ctime|atime|mtime|crtime|dtime):|"
                       r"Inode checksum:", re.M)


def stat_all(img, paths, workdir):
    cmds = workdir / "stat.cmds"
    cmds.write_text("".join(f"stat /{p}\n" for p in sorted(paths)))
    out = helpers.run(["debugfs", "-f", str(cmds), str(img)]).stdout
    return [line for line in out.splitlines()
            if not TIME_LINE.search(line)]


def test_update_twice_changes_nothing_but_times(tmp_path):
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    update(img, v2)
    paths = list(expected_after(v1, v2)) + [""]
    first, used = stat_all(img, paths, tmp_path), used_blocks(img)
    res = update(img, v2)
    assert re.search(r", 0 reflinked", res.stdout), res.stdout
    assert stat_all(img, paths, tmp_path) == first
    assert used_blocks(img) == used
    checkers_clean(img)


def test_update_reproducible(tmp_path):
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    imgs = []
    for name in ["a", "b"]:
        img = tmp_path / f"{name}.img"
        mkfs_d(img, v1, env=EPOCH)
        update(img, v2, env=EPOCH)
        imgs.append(img)
    assert helpers.sha256(imgs[0]) == helpers.sha256(imgs[1])
    other = tmp_path / "c.img"
    mkfs_d(other, v1, env=EPOCH)
    update(other, v2, env={"SOURCE_DATE_EPOCH": "1650000001"})
    assert helpers.sha256(other) != helpers.sha256(imgs[0])
    checkers_clean(imgs[0])


def test_update_at_path(tmp_path):
    v1 = build_v1(tmp_path / "v1")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "copy_of_f00").write_bytes((v1 / "dir0" / "f00").read_bytes())
    (extra / "own").write_bytes(b"own data\n")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    before = used_blocks(img)
    update(img, extra, "--at", "/dir3")
    checkers_clean(img)
    assert helpers.debugfs_cat(img, "/dir3/copy_of_f00") == \
        (v1 / "dir0" / "f00").read_bytes()
    assert helpers.debugfs_cat(img, "/dir3/own") == b"own data\n"
    assert helpers.debugfs_cat(img, "/dir3/f03") == \
        (v1 / "dir3" / "f03").read_bytes()
    assert used_blocks(img) - before <= 2      # "own", maybe a dir block
    # the target directory keeps the attribute the source's root lacks
    assert 'user.keep (4) = "kept"' in helpers.debugfs(
        img, "ea_list /dir3").stdout


def test_update_at_symlink_to_dir_goes_into_its_target(tmp_path):
    """--at through a symlink to a directory of the image resolves inside
    the image, into the target: nothing is added beside the symlink."""
    v1 = build_v1(tmp_path / "v1")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "own").write_bytes(b"own data\n")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    helpers.run(["debugfs", "-w", "-R", "symlink /to3 dir3", str(img)])
    update(img, extra, "--at", "/to3")
    checkers_clean(img)
    assert helpers.debugfs_cat(img, "/dir3/own") == b"own data\n"
    names = helpers.debugfs(img, "ls -l /").stdout.split()
    assert names.count("to3") == 1


def test_library_link_refuses_a_second_entry(tmp_path):
    """The library's link call refuses a name its directory holds (stock
    ext2fs_link adds it again: e2fsck's "Duplicate entry") and writes
    nothing (tests/unit/dir_ops calls it directly)."""
    v1 = build_v1(tmp_path / "v1")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    digest = helpers.sha256(img)
    res = helpers.run([helpers.binary("tests/unit/dir_ops"), str(img),
                       "link",
                       "/dir0", "f00", "/dir1/f01"], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "Destination already exists" in res.stderr
    assert helpers.sha256(img) == digest
    checkers_clean(img)
    res = helpers.run([helpers.binary("tests/unit/dir_ops"), str(img),
                       "link",
                       "/dir0", "a/b", "/dir1/f01"], check=False)
    assert res.returncode == 1 and helpers.sha256(img) == digest


def _refused(img, res, needle):
    assert res.returncode != 0, helpers.describe(res)
    assert needle in res.stderr, res.stderr
    assert str(img) in res.stderr, res.stderr


@pytest.mark.parametrize("what", ["not_extref", "at_file", "at_missing",
                                  "at_dangling_symlink", "dir_in_image",
                                  "read_only"])
def test_update_refused_leaves_image(tmp_path, what):
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    img = tmp_path / "t.img"
    if what == "not_extref":
        helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", str(img), "8M"])
    else:
        mkfs_d(img, v1)
    digest = helpers.sha256(img)
    opts, needle = [], ""
    if what == "at_file":
        opts, needle = ["--at", "/dir0/f00"], "/dir0/f00"
    elif what == "at_missing":
        opts, needle = ["--at", "/nope/deeper"], "/nope/deeper"
    elif what == "at_dangling_symlink":
        # /link_slow -> "xxx...": a symlink whose target does not resolve;
        # a new directory link_slow beside it was a duplicate entry
        opts, needle = ["--at", "/link_slow"], "/link_slow: Not a directory"
    elif what == "dir_in_image":
        # v2 has a file where the image has the directory dir4
        shutil.rmtree(v2 / "dir4")
        (v2 / "dir4").write_bytes(b"now a file")
        needle = "dir4"
    if what == "read_only":
        subprocess.run(["chattr", "+i", str(img)], check=True)
        try:
            res = update(img, v2, check=False)
        finally:
            subprocess.run(["chattr", "-i", str(img)], check=True)
    else:
        res = update(img, v2, *opts, check=False)
    _refused(img, res, needle)
    assert helpers.sha256(img) == digest
    if what != "not_extref":
        checkers_clean(img)


def test_update_bad_calls(tmp_path):
    img = tmp_path / "t.img"
    f = tmp_path / "file"
    f.write_bytes(b"x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    mkfs = helpers.binary("mkfs.extref")
    for args, needle in [
            (["--update", str(img)], "needs -d"),
            (["--update", "-d", str(fifo), str(img)],
             "not a directory nor an archive"),
            # a file is a layer (tests/test_mkfs_layers.py): not --at
            (["--update", "--at", "/x", "-d", str(f), str(img)], "no --at"),
            (["--at", "/x", "-d", str(tmp_path), str(img)], "--at needs"),
            (["--update", "--dedup=block", "-d", str(tmp_path), str(img)],
             "--update takes only")]:
        res = helpers.run([mkfs, *args], check=False)
        assert res.returncode != 0 and needle in res.stderr, \
            helpers.describe(res)
    assert not img.exists()


def _state(root):
    """Every regular file's bytes and every name, of a dumped tree."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            if rel.startswith("lost+found"):
                continue
            st = os.lstat(p)
            out[rel] = (hashlib.sha256(open(p, "rb").read()).hexdigest()
                        if stat.S_ISREG(st.st_mode) else
                        stat.S_IFMT(st.st_mode))
    return out


@pytest.mark.crash
@pytest.mark.slow
def test_update_crash_at_writes(tmp_path):
    """Killed after any of its writes (a spread sample), the update
    leaves, once the journal is replayed, an image both checkers pass
    with every file in its state before or after."""
    reason = helpers.fault_injection_skip_reason()
    if reason:
        pytest.skip(reason)
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    base = tmp_path / "base.img"
    mkfs_d(base, v1)
    op = crashlib.tool_op([helpers.binary("mkfs.extref"), "--update", "-q",
                           "-d", v2])
    work = tmp_path / "w.img"
    crashlib.sparse_copy(base, work)
    assert op(work).returncode == 0
    old = _state_of(base, tmp_path / "old")
    new = _state_of(work, tmp_path / "new")
    dumps = iter(range(1 << 30))

    def oracle(img, how):
        try:
            checkers_clean(img)
        except AssertionError as e:
            return [str(e)[-1000:]]
        got = _state_of(img, tmp_path / f"c{next(dumps)}")
        return [rel for rel in set(old) | set(new)
                if got.get(rel) not in (old.get(rel), new.get(rel))]
    swept = crashlib.sweep(base, op, oracle, tmp_path, 14,
                           faults=crashlib.only("crash"),
                           replayers=("journal",), stop_after=1)
    assert swept.writes > 10
    swept.assert_clean()
    # killed after its commit block, not replayed: the next update's open
    # replays the journal, and the update then finds nothing left to do
    # (the last such point)
    if crashlib.first_crash(base, op, work, crashlib.needs_recovery,
                            range(swept.writes - 1, 0, -1)) is None:
        pytest.fail("no crash point leaves the journal to replay")
    res = update(work, v2)
    assert ", 0 reflinked" in res.stdout, res.stdout
    checkers_clean(work)
    assert _state_of(work, tmp_path / "again") == new


def _state_of(img, out):
    out.mkdir()
    helpers.run(["debugfs", "-R", f"rdump / {out}", str(img)])
    return _state(out)


@pytest.mark.parametrize("feature", ["quota", "^has_journal"])
def test_update_quota_and_no_journal(tmp_path, feature):
    """Quota usage stays what e2fsck counts; without a journal the
    update runs on the ordered path and leaves the same files."""
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    img = tmp_path / "t.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-O", feature, "-d",
                 str(v1), str(img)])
    update(img, v2)
    checkers_clean(img)
    for rel in ["dir0/f05", "dir1/f06", "dir3/new", "dir4/f08_moved"]:
        assert helpers.debugfs_cat(img, "/" + rel) == \
            (v2 / rel).read_bytes(), rel


def test_update_delete(tmp_path):
    """--delete, as rsync's: the image then holds v2 exactly; a directory
    where v2 has a file goes with everything below it."""
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    shutil.rmtree(v2 / "dir4")
    (v2 / "dir4").write_bytes(b"now a file")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    before = used_blocks(img)
    res = update(img, v2, "--delete")
    m = re.search(r"names removed +(\d+)", res.stdout)
    assert m and int(m.group(1)) == 2 + 20, res.stdout   # f07, dir4 + 20
    checkers_clean(img)
    with helpers.loop_mount(img, tmp_path / "mnt"):
        got = describe_tree(tmp_path / "mnt")
    assert got == describe_tree(v2)
    assert used_blocks(img) < before        # dir4's 20 files went


def _files_state(root):
    """Each regular file's bytes and user.big, by path (a kernel mount)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            try:
                big = os.getxattr(p, "user.big")
            except OSError:
                big = None
            out[os.path.relpath(p, root)] = (
                hashlib.sha256(open(p, "rb").read()).hexdigest(), big)
    return out


@pytest.mark.crash
@pytest.mark.slow
def test_update_crash_split(tmp_path):
    """An update bigger than half the journal (700 new attribute blocks,
    written in place early) is still one commit: killed anywhere, once
    replayed, both checkers are clean and every file (data and
    attributes) is as before the update, or every one as after it: never
    some of each (tests/test_update_atomic.py crashes larger ones)."""
    reason = helpers.fault_injection_skip_reason()
    if reason:
        pytest.skip(reason)
    v1 = build_v1(tmp_path / "v1")
    many = tmp_path / "many"
    for d in range(2):
        (many / f"d{d}").mkdir(parents=True)
        for f in range(350):    # an attribute block each: 700 held blocks
            p = many / f"d{d}" / f"f{f}"
            p.write_bytes(f"{d} {f}\n".encode())
            os.setxattr(p, "user.big", (f"{d}.{f}." * 400).encode()[:2000])
    base, work = tmp_path / "base.img", tmp_path / "w.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(v1),
                 str(base), "64M"])          # a 4 MiB journal
    op = crashlib.tool_op([helpers.binary("mkfs.extref"), "--update", "-q",
                           "-d", many])
    crashlib.sparse_copy(base, work)
    assert op(work).returncode == 0
    with helpers.loop_mount(base, tmp_path / "m0"):
        old = _files_state(tmp_path / "m0")
    with helpers.loop_mount(work, tmp_path / "m1"):
        new = _files_state(tmp_path / "m1")
    partial = []

    def oracle(img, how):
        try:
            checkers_clean(img)
        except AssertionError as e:
            return [str(e)[-1000:]]
        with helpers.loop_mount(img, tmp_path / "m2"):
            got = _files_state(tmp_path / "m2")
        partial.append(old != got != new)
        return [rel for rel in set(old) | set(new) | set(got)
                if got.get(rel) not in (old.get(rel), new.get(rel))]
    crashlib.sweep(base, op, oracle, tmp_path, 10,
                   faults=crashlib.only("crash"), replayers=("journal",),
                   stop_after=1, e2fsck_worst=255).assert_clean()
    assert not any(partial), "a crash left the update half done"


def test_update_progress_on_a_terminal(tmp_path):
    """Two phases, each drawn forward and ending full, a few redraws a
    second; then the update's summary and the build's."""
    from test_mkfs_frontend import bars, run_pty
    v1 = build_v1(tmp_path / "v1")
    v2 = make_v2(v1, tmp_path / "v2")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    status, out, secs = run_pty([helpers.binary("mkfs.extref"), "--update",
                                 "-d", str(v2), str(img)])
    assert status == 0, out
    got = bars(out)
    phases = list(dict.fromkeys(ph for ph, _ in got))
    assert phases == ["reading the image", "updating"], out
    for phase in phases:
        pcts = [p for ph, p in got if ph == phase]
        assert pcts == sorted(pcts) and pcts[-1] == 100, (phase, pcts)
    assert len(got) <= 5 * secs + 2 * len(phases) + 2, (len(got), secs)
    assert "shared with image" in out and "stored data" in out, out


def test_update_shares_within_a_file(tmp_path):
    """A block repeated in a new file is written once, as --dedup=block
    writes it."""
    v1 = build_v1(tmp_path / "v1")
    rep = tmp_path / "rep"
    rep.mkdir()
    blk = random.Random(5).randbytes(BS)
    (rep / "r").write_bytes(blk * 8 + b"tail")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    before = used_blocks(img)
    update(img, rep, "--at", "/dir0")
    checkers_clean(img)
    assert helpers.debugfs_cat(img, "/dir0/r") == blk * 8 + b"tail"
    # one block for the 8 copies and the tail (a copy: 9), then metadata:
    # an extent block, and the reference-count tree's first two blocks
    # (v1's tree is empty: nothing was shared before)
    assert used_blocks(img) - before <= 5
    ext = helpers.debugfs_stat(img, "/dir0/r").split("EXTENTS:")[1]
    pblks = {int(p) for lb, p in re.findall(r"\((\d+)\):(\d+)", ext)
             if int(lb) < 8}
    assert len(pblks) == 1, ext           # the 8 copies: one block


def test_update_out_of_room_rolls_back(tmp_path):
    """A failure met half-way (no room for the data) rolls the whole
    update back: the filesystem is as it was (blocks that were free may
    hold bytes, still free), clean for both checkers."""
    v1 = build_v1(tmp_path / "v1")
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    hdr = helpers.dumpe2fs_header(img)
    free = int(hdr["Free blocks"])
    big = tmp_path / "big"
    shutil.copytree(v1 / "dir0", big / "aa_first")      # written first
    (big / "zz_huge").write_bytes(
        random.Random(3).randbytes((free + 16) * BS))
    listing = helpers.debugfs(img, "ls -l /").stdout
    used = used_blocks(img)
    res = update(img, big, check=False)
    assert res.returncode != 0, helpers.describe(res)
    assert str(img) in res.stderr and "zz_huge" in res.stderr, res.stderr
    checkers_clean(img)
    assert used_blocks(img) == used
    assert helpers.debugfs(img, "ls -l /").stdout == listing


def test_update_at_a_new_directory(tmp_path, loop_mount):
    """--at naming a missing directory in one that exists makes it, with
    the source root's owner, mode and times, as rsync makes its
    destination; a unchanged file there is a reflink of the image's."""
    v1 = build_v1(tmp_path / "v1")
    layer = tmp_path / "layer"
    layer.mkdir()
    (layer / "app").write_bytes((v1 / "dir1" / "f03").read_bytes())
    os.symlink("y" * 100, layer / "slow")      # a new slow symlink
    os.symlink("app", layer / "fast")
    os.chmod(layer, 0o750)
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    res = update(img, layer, "--at", "/dir2/opt/")
    assert ", 1 reflinked" in res.stdout, res.stdout
    checkers_clean(img)
    mnt, _ = loop_mount(img)
    st, src = os.lstat(mnt / "dir2" / "opt"), os.lstat(layer)
    assert (st.st_mode, st.st_uid, st.st_mtime_ns) == \
        (src.st_mode, src.st_uid, src.st_mtime_ns)
    assert (mnt / "dir2" / "opt" / "app").read_bytes() == \
        (layer / "app").read_bytes()
    assert os.readlink(mnt / "dir2" / "opt" / "slow") == "y" * 100
    assert os.readlink(mnt / "dir2" / "opt" / "fast") == "app"


def test_update_bigger_than_journal_after_a_clone(tmp_path):
    """An update whose changed file shares blocks with the image (a clone,
    which writes its new extent blocks in place early) and which then
    writes more than the journal holds is one commit all the same.  With
    1 KiB blocks and 1 KiB inodes each new file costs an inode table
    block of its own: 5,000 of them are more than the journal's 4,096;
    they lie past the part of the inode table the committed descriptors
    call used, so they are new blocks, written in place early, not
    journaled."""
    rnd = random.Random(5)
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    (v1 / "a").mkdir(parents=True)
    big = rnd.randbytes(256 * 1024)
    (v1 / "a" / "big").write_bytes(big)
    (v2 / "a").mkdir(parents=True)
    changed = big[:70000] + b"x" * 100 + big[70100:]
    (v2 / "a" / "big").write_bytes(changed)      # first: cloned, then 1 block
    (v2 / "z").mkdir()
    for i in range(5000):
        (v2 / "z" / f"f{i}").write_bytes(b"%d\n" % i)
    img = tmp_path / "t.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "1024", "-I",
                 "1024", "-N", "8192", "-d", str(v1), str(img), "32M"])
    assert helpers.dumpe2fs_header(img)["Total journal size"] == "4096k"
    res = update(img, v2)
    shared = re.search(r"shared with image\s+([0-9.]+) MiB", res.stdout)
    assert shared and float(shared.group(1)) > 0, res.stdout
    checkers_clean(img)
    assert helpers.debugfs_cat(img, "/a/big") == changed
    for i in (0, 2500, 4999):
        assert helpers.debugfs_cat(img, f"/z/f{i}") == b"%d\n" % i


def _pblk(img, path, lblk):
    out = helpers.run(["debugfs", "-R", f"bmap {path} {lblk}",
                       str(img)]).stdout.strip()
    return int(out)


def test_update_shares_an_equal_last_block(tmp_path):
    """A changed file whose last, partial block holds the bytes of
    another file's last block of as many bytes shares it (a clone ending
    at both files' EOF, as the kernel allows); a tail of other length
    (the same bytes and a zero more) does not.  Read back by stock
    debugfs and a kernel read-only mount; both checkers clean."""
    rnd = random.Random(5)
    bs = 4096
    head, tail = _data(rnd, 3 * bs), _data(rnd, 1000)
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "a").write_bytes(head + tail)
    img = tmp_path / "t.img"
    mkfs_d(img, v1)
    v2 = tmp_path / "v2"
    shutil.copytree(v1, v2)
    changed = _data(rnd, bs) + head[bs:] + tail   # first block changed
    longer = _data(rnd, 2 * bs) + tail + b"\0"    # a tail of 1001 bytes
    (v2 / "a").write_bytes(changed)
    (v2 / "b").write_bytes(longer)
    before = _pblk(img, "/a", 3)
    res = update(img, v2, "--delete")
    assert "2 reflinked" not in res.stdout
    assert _pblk(img, "/a", 3) == before            # shared, not written
    assert _pblk(img, "/b", 2) != before
    for name, data in (("a", changed), ("b", longer)):
        assert helpers.debugfs_cat(img, f"/{name}") == data
    checkers_clean(img)
    with helpers.loop_mount(img, tmp_path / "mnt"):
        assert (tmp_path / "mnt" / "a").read_bytes() == changed
        assert (tmp_path / "mnt" / "b").read_bytes() == longer
