"""mkfs.extref --convert --shrink (issue 12): a converted, deduplicated
image is cut down to the size a fresh build of the same tree has.

The source images are made by stock mke2fs -d (256 MiB, two groups of
4 KiB blocks, mke2fs's inode count for that size: 65,536), so the shrink
has to move blocks down (shared ones among them), cut a group off, and cut
the inode table.  Oracles: stock e2fsck -fn, a read-only loop mount of the
kernel compared with the source tree and with the same image converted
without --shrink, stock debugfs for the physical mappings, and a fresh
mkfs.extref -d build of the same tree for the size.

"A few blocks", precisely: the shrunk image's block count minus the fresh
build's differs by at most max(16, 1 % of the fresh build) blocks once the
reserved GDT blocks are set aside.  Those are mke2fs's room for growing
the source image to 1024 times its size (31 blocks for 256 MiB); resize2fs
keeps them and a fresh build of a small image reserves 1.  The rest of the
difference is the fresh build's estimate: it sizes directories, extent
trees and the tree's nodes from the source before it builds, while the
shrink counts the blocks in use.
"""

import hashlib
import os
import random
import re
import stat
import time

import pytest

import crashlib
import helpers

BS = 4096
EPOCH = "1700000000"
FSCK = "fsck/fsck.extref"


def make_tree(root, seed=12):
    """Duplicates (whole files, shared blocks at several offsets), a
    sparse file, xattrs, hard links, fast and slow symlinks, empty
    files and directories."""
    rnd = random.Random(seed)
    root.mkdir()
    for d in ("low", "dups", "late", "misc", "misc/empty_dir"):
        (root / d).mkdir()
    for i in range(8):
        (root / "low" / f"u{i}").write_bytes(rnd.randbytes(300 * 1024 + i))
    for i in range(6):
        b = rnd.randbytes(256 * 1024 + 100 * i)
        (root / "dups" / f"p{i}a").write_bytes(b)
        (root / "dups" / f"p{i}b").write_bytes(b)
    blk = rnd.randbytes(BS)
    z = rnd.randbytes(400 * 1024 + 5)
    (root / "late" / "z1").write_bytes(z)
    (root / "late" / "z2").write_bytes(z)
    (root / "late" / "z3").write_bytes(z[:200 * 1024] + blk +
                                       rnd.randbytes(3000))
    (root / "late" / "w").write_bytes(rnd.randbytes(2 * BS) + blk + blk)
    os.link(root / "late" / "z1", root / "late" / "z1_hard")
    with open(root / "misc" / "sparse", "wb") as f:
        f.write(rnd.randbytes(BS + 7))
        f.seek(3 << 20)
        f.write(rnd.randbytes(5000))
    os.symlink("../late/z1", root / "misc" / "link")
    os.symlink("x" * 300, root / "misc" / "longlink")
    (root / "misc" / "empty").write_bytes(b"")
    (root / "misc" / "small").write_bytes(b"hello\n")
    os.setxattr(root / "late" / "z1", "user.big", b"v" * 700)
    os.setxattr(root / "misc" / "small", "user.tag", b"t")
    os.chmod(root / "misc" / "small", 0o640)
    os.chown(root / "misc" / "small", 1234, 567)
    os.utime(root / "misc" / "small", ns=(1600000000123456789,
                                          1600000000987654321))
    return root


def source_image(img, src, bs=BS, size="256M", journal=("-J", "size=4")):
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", str(bs),
                 *journal, "-E", "lazy_itable_init=0",
                 "-d", str(src), str(img), size],
                env={"E2FSPROGS_FAKE_TIME": EPOCH})


def convert(img, *opts, check=True, env=None):
    e = {"SOURCE_DATE_EPOCH": EPOCH}
    e.update(env or {})
    return helpers.run([helpers.binary("mkfs.extref"), "--convert",
                        "--dedup=block", *opts, str(img)], check=check,
                       env=e)


def fsck_fn(img):
    res = helpers.run([helpers.binary(FSCK), "-fn", str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)


def header(img):
    h = helpers.dumpe2fs_header(img)
    # (no "Reserved GDT blocks" line without a resize inode)
    return {k: int(h.get(k, 0)) for k in ("Block count", "Free blocks",
                                          "Inode count",
                                          "Reserved GDT blocks")}


def mappings(img, root):
    """{(relative path, lblk): pblk} of every regular file (each inode
    once), read by stock debugfs from the extent tree (index blocks left
    out)."""
    out, seen = {}, set()
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            if os.path.islink(p) or os.stat(p).st_ino in seen:
                continue            # a hard link's inode once
            seen.add(os.stat(p).st_ino)
            rel = os.path.relpath(p, root)
            text = helpers.debugfs(img, f"stat /{rel}").stdout
            ext = text.split("EXTENTS:", 1)[1] if "EXTENTS:" in text else ""
            for m in re.finditer(r"\((\d+)(?:-(\d+))?\):(\d+)(?:-\d+)?",
                                 ext):
                lo = int(m.group(1))
                hi = int(m.group(2) or lo)
                for i in range(hi - lo + 1):
                    out[(rel, lo + i)] = int(m.group(3)) + i
    return out


def sharing(maps):
    """The mappings grouped by the block they share: a set of frozensets,
    each the (path, lblk) pairs of one block mapped two or more times."""
    by = {}
    for k, b in maps.items():
        by.setdefault(b, set()).add(k)
    return {frozenset(v) for v in by.values() if len(v) > 1}, by


def data_runs(path):
    """[(start, end)] of the data in a file (SEEK_DATA / SEEK_HOLE)."""
    runs, off = [], 0
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        while off < size:
            try:
                start = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            runs.append((start, end))
            off = end
    return runs


def compare_with_source(mnt, src):
    for dirpath, dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for name in dirs + files:
            a, b = os.path.join(dirpath, name), mnt / rel / name
            sa, sb = os.lstat(a), os.lstat(b)
            assert (sa.st_mode, sa.st_uid, sa.st_gid, sa.st_nlink) == \
                (sb.st_mode, sb.st_uid, sb.st_gid, sb.st_nlink), b
            # stock mke2fs -d (1.47.0) keeps whole seconds
            assert int(sa.st_mtime) == int(sb.st_mtime), b
            if stat.S_ISLNK(sa.st_mode):
                assert os.readlink(a) == os.readlink(b), b
                continue
            xa = {k: os.getxattr(a, k) for k in os.listxattr(a)
                  if k.startswith("user.")}
            xb = {k: os.getxattr(b, k) for k in os.listxattr(b)
                  if k.startswith("user.")}
            assert xa == xb, b
            if stat.S_ISREG(sa.st_mode):
                assert sa.st_size == sb.st_size, b
                with open(a, "rb") as fa, open(b, "rb") as fb:
                    assert fa.read() == fb.read(), b


def plain_again(source, tmp_path):
    again = tmp_path / "again.img"
    helpers.run(["cp", "--sparse=always", str(source), str(again)])
    convert(again)
    return again


def test_shrink_to_a_fresh_builds_size(tmp_path, loop_mount):
    src = make_tree(tmp_path / "src")
    plain, shrunk = tmp_path / "plain.img", tmp_path / "shrunk.img"
    source_image(plain, src)
    source_copy = tmp_path / "source.img"
    helpers.run(["cp", "--sparse=always", str(plain), str(source_copy)])
    helpers.run(["cp", "--sparse=always", str(plain), str(shrunk)])
    convert(plain)                           # the same, without --shrink
    res = convert(shrunk, "--shrink")
    assert "shrunk from 65536 to" in res.stdout, res.stdout

    hp, hs = header(plain), header(shrunk)
    assert os.path.getsize(shrunk) == hs["Block count"] * BS
    # the group cut off and the inode table cut to a fresh build's
    assert hs["Block count"] < 32768 and hs["Inode count"] < 100, hs
    # everything in use moved along: the same blocks in use, but the
    # group metadata the cut freed
    helpers.e2fsck_fn(shrunk)
    fsck_fn(shrunk)

    # every file byte for byte, with its metadata, and the same as the
    # image converted without --shrink
    mnt, _ = loop_mount(shrunk)
    compare_with_source(mnt, src)
    mnt_plain, _ = loop_mount(plain)
    for dirpath, dirs, files in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        for name in dirs + files:
            a = os.lstat(mnt_plain / rel / name)
            b = os.lstat(mnt / rel / name)
            # (st_blocks may grow by an extent block: resize2fs splits
            # extents it moves into several free runs)
            assert (a.st_size, a.st_atime_ns, a.st_mtime_ns,
                    a.st_ctime_ns) == (b.st_size, b.st_atime_ns,
                                       b.st_mtime_ns, b.st_ctime_ns), \
                f"{rel}/{name}"
            if stat.S_ISREG(a.st_mode):
                assert data_runs(mnt_plain / rel / name) == \
                    data_runs(mnt / rel / name), f"{rel}/{name}"
    assert data_runs(mnt / "misc/sparse") == [(0, 2 * BS),
                                              (3 << 20, (3 << 20) + 5000)]
    assert os.stat(mnt / "late/z1").st_ino == \
        os.stat(mnt / "late/z1_hard").st_ino

    # shared blocks stay shared: the same mappings share a block, and
    # some of them were above the new end (moved, all together).  The
    # image converted without --shrink is the shrunk one before its
    # shrink: the conversion is deterministic (the same image, the same
    # SOURCE_DATE_EPOCH), which the first assertion checks
    assert _sha(plain) == _sha(plain_again(source_copy, tmp_path))
    mp, ms = mappings(plain, src), mappings(shrunk, src)
    assert set(mp) == set(ms)
    sp, by_p = sharing(mp)
    ss, _ = sharing(ms)
    assert sp and sp == ss
    moved = [b for b, v in by_p.items() if len(v) > 1 and
             b >= hs["Block count"]]
    assert moved, "no shared block had to move: the test proves nothing"

    # the host file: within a few blocks (module docstring) of a fresh
    # build of the same tree, at the same block size and journal size
    fresh = tmp_path / "fresh.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(src),
                 "--dedup=block", str(fresh)],
                env={"SOURCE_DATE_EPOCH": EPOCH})
    hf = header(fresh)
    jf = helpers.dumpe2fs_header(fresh)["Total journal blocks"]
    js = helpers.dumpe2fs_header(shrunk)["Total journal blocks"]
    assert int(jf) == int(js) == (4 << 20) // BS
    extra_gdt = hs["Reserved GDT blocks"] - hf["Reserved GDT blocks"]
    few = max(16, hf["Block count"] // 100)
    diff = hs["Block count"] - extra_gdt - hf["Block count"]
    assert abs(diff) <= few, (hs, hf)
    assert os.path.getsize(shrunk) <= os.path.getsize(fresh) + \
        (extra_gdt + few) * BS
    assert hs["Inode count"] == hf["Inode count"]


def test_shrunk_image_takes_writes(tmp_path, loop_mount):
    """The journal and inode 5 survive: a reflink into the shrunk image
    goes through both, and both checkers stay clean."""
    src = make_tree(tmp_path / "src")
    img = tmp_path / "t.img"
    source_image(img, src)
    convert(img, "--shrink", "-q")
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "reflink /late/z2 /z2_copy", str(img)])
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    # the tree's records are exactly the counts of the mappings that
    # stock debugfs reads from every file's extents (z2 and its copy
    # share all their blocks with z1, some with z3)
    records = {}
    for start, length, count in crashlib.refcount_records(img):
        for b in range(start, start + length):
            records[b] = count
    maps = mappings(img, src)
    maps.update({("z2_copy", lblk): b for (rel, lblk), b in maps.items()
                 if rel == "late/z2"})
    counts = {}
    for b in maps.values():
        counts[b] = counts.get(b, 0) + 1
    assert records == {b: c for b, c in counts.items() if c >= 2}
    assert {records[b] for (rel, _), b in maps.items()
            if rel == "z2_copy"} >= {3}
    mnt, _ = loop_mount(img)
    assert (mnt / "z2_copy").read_bytes() == (src / "late/z2").read_bytes()


def test_shrink_many_groups_1k(tmp_path, loop_mount):
    """1 KiB blocks: groups of 8 MiB, so the result keeps several groups
    (their inode tables laid out again); still clean, every byte there,
    shared blocks shared, whether every cut went through or one was
    rolled back."""
    src = make_tree(tmp_path / "src")
    img = tmp_path / "t.img"
    source_image(img, src, bs=1024, size="64M")
    before = header(img)["Block count"]
    inodes = header(img)["Inode count"]
    res = convert(img, "--shrink", "-q", check=False)
    # e2fsprogs 1.47.0's undo manager has failed a resize2fs run of such
    # images ("Corrupt extent header", "Resize inode is corrupt"); it is
    # rolled back, never run again without an undo file: sound, and says
    # so.
    assert res.returncode == 0 or (
        res.returncode == 1 and "rolled back with e2undo" in res.stderr
        and "not shrunk as far as planned" in res.stderr), \
        helpers.describe(res)
    h = header(img)
    if res.returncode == 0:
        assert h["Inode count"] < inodes, "the tables were not laid out"
        assert h["Block count"] < before // 2
    else:                       # rolled back: the new layout too
        assert h["Inode count"] == inodes
    assert os.path.getsize(img) == h["Block count"] * 1024
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)
    ss, _ = sharing(mappings(img, src))
    assert any(("late/z1", 0) in s for s in ss)


def test_shrink_without_journal(tmp_path, loop_mount):
    """No journal: the inode tables of the group cut off lie between the
    image's start and its data (nothing in between), so the first cut
    stops above all of them and the second takes them."""
    src = make_tree(tmp_path / "src")
    img = tmp_path / "t.img"
    source_image(img, src, journal=("-O", "^has_journal"))
    res = convert(img, "--shrink")
    h = header(img)
    assert f"shrunk from 65536 to {h['Block count']} blocks" in res.stdout
    assert h["Block count"] * BS < 8 << 20, h
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)


# ----- refusals: the image byte for byte as it was -----

def _sha(img):
    return hashlib.sha256(open(img, "rb").read()).hexdigest()


@pytest.fixture
def plain_image(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(random.Random(1).randbytes(40000))
    (src / "b").write_bytes((src / "a").read_bytes())
    img = tmp_path / "t.img"
    source_image(img, src, size="16M")
    return img


@pytest.mark.parametrize("args,needle", [
    (["--shrink"], "not an extref image"),
    (["--shrink", "-d", "SRC"], "--shrink cuts an existing image"),
    (["--shrink", "IMG", "8M"], "--shrink cuts an existing image"),
    (["--shrink", "--dedup=block"], "--dedup needs -d SOURCE or --convert"),
    (["--convert", "--shrink", "-d", "SRC"], "cannot be combined"),
    (["--convert", "--shrink", "IMG", "8M"], "takes no SIZE"),
])
def test_bad_combinations(plain_image, args, needle):
    src = plain_image.parent / "src"
    args = [str(src) if a == "SRC" else a for a in args]
    if "IMG" in args:
        args[args.index("IMG")] = str(plain_image)
        cmd = [helpers.binary("mkfs.extref"), *args]
    else:
        cmd = [helpers.binary("mkfs.extref"), *args, str(plain_image)]
    before = _sha(plain_image)
    res = helpers.run(cmd, check=False)
    assert res.returncode != 0 and needle in res.stderr, \
        helpers.describe(res)
    assert _sha(plain_image) == before


def test_replays_an_image_needing_recovery(plain_image, tmp_path):
    """A journal that needs recovery is replayed first (as e2fsck does),
    then the image is converted and shrunk."""
    blk = tmp_path / "blk"
    blk.write_bytes(b"j" * BS)
    helpers.run(["debugfs", "-w", "-f", "-", str(plain_image)],
                input=f"jo\njw -b 300 {blk}\njc\n")
    assert "needs_recovery" in helpers.dumpe2fs_features(plain_image)
    before = header(plain_image)["Block count"]
    res = convert(plain_image, "--shrink")
    assert f"{plain_image}: journal recovered (1 transaction)" in res.stdout
    assert "needs_recovery" not in helpers.dumpe2fs_features(plain_image)
    assert header(plain_image)["Block count"] < before
    helpers.e2fsck_fn(plain_image)
    fsck_fn(plain_image)


def test_refuses_a_mounted_image(plain_image, loop_mount):
    before = _sha(plain_image)
    loop_mount(plain_image)
    res = convert(plain_image, "--shrink", check=False)
    assert res.returncode != 0 and "mounted" in res.stderr.lower(), \
        helpers.describe(res)
    assert _sha(plain_image) == before


def test_refuses_a_block_device(plain_image):
    helpers.require_loop()
    dev = helpers.run(["losetup", "-f", "--show", str(plain_image)]
                      ).stdout.strip()
    try:
        before = _sha(plain_image)
        res = convert(dev, "--shrink", check=False)
        assert res.returncode != 0 and "block device" in res.stderr, \
            helpers.describe(res)
        assert _sha(plain_image) == before
    finally:
        helpers.run(["losetup", "-d", dev], check=False)


def test_refuses_with_an_undo_file_left(plain_image):
    undo = f"{plain_image}.e2undo"
    with open(undo, "wb") as f:
        f.write(b"left by an interrupted run")
    before = _sha(plain_image)
    res = convert(plain_image, "--shrink", check=False)
    assert res.returncode != 0 and f"run e2undo {undo}" in res.stderr, \
        helpers.describe(res)
    assert _sha(plain_image) == before
    assert open(undo, "rb").read() == b"left by an interrupted run"


def test_resize2fs_failing_leaves_a_sound_image(plain_image, tmp_path,
                                                loop_mount):
    """A resize2fs that fails (here one that changes nothing and exits 1)
    is reported; the new layout of step 1 is taken back too (its undo
    file, kept until the first cut went through), and the converted
    image is sound, with its own inodes."""
    fake = tmp_path / "resize2fs"
    fake.write_text("#!/bin/sh\necho 'resize2fs: Invalid argument' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    inodes = header(plain_image)["Inode count"]
    res = convert(plain_image, "--shrink", check=False,
                  env={"MKFS_EXTREF_RESIZE2FS": str(fake)})
    assert res.returncode == 1, helpers.describe(res)
    assert "resize2fs failed" in res.stderr and \
        "rolled back the new layout too" in res.stderr and \
        "not shrunk as far as planned" in res.stderr, res.stderr
    assert "Invalid argument" in res.stderr
    assert header(plain_image)["Inode count"] == inodes
    assert not list(plain_image.parent.glob("*.e2undo"))
    helpers.e2fsck_fn(plain_image)
    fsck_fn(plain_image)
    mnt, _ = loop_mount(plain_image)
    src = plain_image.parent / "src"
    assert (mnt / "b").read_bytes() == (src / "a").read_bytes()


# ----- interrupted: stock e2fsck -fy, then fsck.extref -fy, repair it -----

_NO_FAULTS = helpers.fault_injection_skip_reason()


@pytest.fixture(scope="module")
def crash_source(tmp_path_factory):
    """The tree and its stock ext4 image, made once."""
    d = tmp_path_factory.mktemp("shrink-crash")
    src = make_tree(d / "src")
    img = d / "source.img"
    source_image(img, src)
    return src, img


def repair_and_check(img, src, loop_mount):
    """Stock e2fsck -fy, then fsck.extref -fy; then both checkers clean
    and every file as in the source."""
    e = helpers.run(["e2fsck", "-fy", str(img)], check=False)
    assert e.returncode in (0, 1), helpers.describe(e)
    f = helpers.run([helpers.binary(FSCK), "-fy", str(img)], check=False)
    assert f.returncode in (0, 1), helpers.describe(f)
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)


KILLS = [(41, 1), (37, 1), (37, 40), (33, 1)]


def _no_test_io():
    """Why resize2fs cannot be aborted here (None: it can): e2fsprogs
    built with --disable-testio-debug has no test_io manager."""
    import shutil
    path = shutil.which("resize2fs") or "/sbin/resize2fs"
    try:
        if b"TEST_IO_FLAGS" in open(path, "rb").read():
            return None
    except OSError:
        pass
    return "resize2fs was built without the test_io manager"


_NO_TEST_IO = _no_test_io()


def killed_run(crash_source, tmp_path, block, count, env=()):
    src, base = crash_source
    img = tmp_path / "t.img"
    helpers.run(["cp", "--sparse=always", str(base), str(img)])
    e = {"TEST_IO_FLAGS": "0", "TEST_IO_BLOCK": str(block),
         "TEST_IO_WRITE_ABORT": str(count)}
    e.update(env)
    res = convert(img, "--shrink", check=False, env=e)
    assert res.returncode == 1, helpers.describe(res)
    assert "resize2fs failed (signal 6)" in res.stderr, res.stderr
    return img, res


@pytest.mark.skipif(_NO_TEST_IO is not None, reason=_NO_TEST_IO or "")
@pytest.mark.parametrize("block,count", KILLS)
def test_resize2fs_killed_is_rolled_back(crash_source, tmp_path, loop_mount,
                                         block, count):
    """resize2fs aborted (e2fsprogs' test_io manager: TEST_IO_BLOCK and
    TEST_IO_WRITE_ABORT) at its count-th write of a block: 41, the first
    block it moves data to; 37, the first inode-table block (inodes
    rewritten to their moved blocks, one by one); 33, the block bitmap,
    written at its end.  e2undo puts back what it wrote: both checkers
    are clean with no repair, every file is there."""
    src, _ = crash_source
    img, res = killed_run(crash_source, tmp_path, block, count)
    assert "rolled back with e2undo" in res.stderr, res.stderr
    assert not os.path.exists(f"{img}.e2undo")
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)


@pytest.mark.skipif(_NO_TEST_IO is not None, reason=_NO_TEST_IO or "")
@pytest.mark.parametrize("block,count", KILLS)
def test_resize2fs_killed_without_rollback(crash_source, tmp_path,
                                           loop_mount, block, count):
    """The same, with e2undo failing too (a power cut in the middle of
    resize2fs, say): the undo file is kept and named; stock e2fsck -fy,
    then fsck.extref -fy, repair the image with every file's bytes."""
    src, _ = crash_source
    img, res = killed_run(crash_source, tmp_path, block, count,
                          env={"MKFS_EXTREF_E2UNDO": "/bin/false"})
    undo = f"{img}.e2undo"
    assert f"run e2undo {undo} {img}" in res.stderr, res.stderr
    assert os.path.exists(undo)
    repair_and_check(img, src, loop_mount)


@pytest.mark.skipif(_NO_TEST_IO is not None, reason=_NO_TEST_IO or "")
def test_kept_undo_file_rolls_back(crash_source, tmp_path, loop_mount):
    """The kept undo file, given to stock e2undo as the message says,
    brings the image back with no repair."""
    src, _ = crash_source
    img, res = killed_run(crash_source, tmp_path, 37, 40,
                          env={"MKFS_EXTREF_E2UNDO": "/bin/false"})
    undo = f"{img}.e2undo"
    helpers.run(["e2undo", undo, str(img)])
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)
@pytest.mark.skipif(_NO_FAULTS is not None, reason=_NO_FAULTS or "")
@pytest.mark.parametrize("step,fault", [
    ("itable", ""), ("resize", ""), ("rebuild", "crash=0"),
    ("rebuild", "crash=3"), ("rebuild", "crash=9"),
    ("rebuild", "powercut=4,seed=1"),
])
def test_shrink_killed_between_steps(crash_source, tmp_path, loop_mount,
                                     step, fault):
    """Killed right after a step of the shrink, the writes of that step
    cut short (EXTREF_FAULT_SHRINK, mkfs/shrink.c) or whole."""
    src, base = crash_source
    img = tmp_path / "t.img"
    helpers.run(["cp", "--sparse=always", str(base), str(img)])
    env = {"EXTREF_FAULT_SHRINK_STEP": step}
    if fault:
        env["EXTREF_FAULT_SHRINK"] = fault
    res = convert(img, "--shrink", check=False, env=env)
    assert res.returncode == 137 and f"killed after {step}" in res.stderr, \
        helpers.describe(res)
    repair_and_check(img, src, loop_mount)


def test_refuses_a_damaged_filesystem(plain_image):
    """resize2fs moves blocks and rewrites what points at them: --shrink
    runs stock e2fsck -fn first and refuses a filesystem it finds damaged
    (here a directory block overwritten with dd), the image unchanged."""
    root = helpers.debugfs(plain_image, "blocks /").stdout.split()
    assert root, "the root directory has no block"
    with open(plain_image, "r+b") as f:
        f.seek(int(root[0]) * BS)
        f.write(random.Random(8).randbytes(BS))
    before = _sha(plain_image)
    res = convert(plain_image, "--shrink", check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert (f"{plain_image}: e2fsck -fn finds it damaged" in res.stderr and
            "nothing was changed" in res.stderr), res.stderr
    assert _sha(plain_image) == before


# ----- --shrink alone: an extref image -----

def test_shrink_an_extref_image(tmp_path, loop_mount):
    """An image built with a SIZE much larger than its content is cut to
    the size a build without SIZE gives, every file and share kept."""
    src = make_tree(tmp_path / "src")
    img, fresh = tmp_path / "t.img", tmp_path / "fresh.img"
    build = [helpers.binary("mkfs.extref"), "-q", "-d", str(src),
             "--dedup=block"]
    helpers.run([*build, str(img), "256M"])
    helpers.run([*build, str(fresh)])
    before = header(img)
    jbefore = int(helpers.dumpe2fs_header(img)["Total journal blocks"])
    res = helpers.run([helpers.binary("mkfs.extref"), "--shrink", str(img)])
    h, hf = header(img), header(fresh)
    assert f"shrunk from {before['Block count']} to {h['Block count']}" \
        in res.stdout, res.stdout
    assert h["Inode count"] == hf["Inode count"], (h, hf)
    extra_gdt = h["Reserved GDT blocks"] - hf["Reserved GDT blocks"]
    few = max(16, hf["Block count"] // 100)
    assert -few <= h["Block count"] - hf["Block count"] <= extra_gdt + few, \
        (h, hf)
    assert os.path.getsize(img) == h["Block count"] * BS
    # the journal mke2fs sized for 256 MiB is cut to a fresh build's,
    # and takes a transaction (a reflink) that both checkers then like
    js = int(helpers.dumpe2fs_header(img)["Total journal blocks"])
    jf = int(helpers.dumpe2fs_header(fresh)["Total journal blocks"])
    assert js == jf < jbefore, (js, jf, jbefore)
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "reflink /late/z2 /z2_copy", str(img)])
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)
    assert (mnt / "z2_copy").read_bytes() == (src / "late/z2").read_bytes()
    ss, _ = sharing(mappings(img, src))
    assert any(("late/z1", 0) in s for s in ss)


def test_shrink_alone_refuses(tmp_path, plain_image):
    """Not an extref image (--convert --shrink is for those), and an
    extref image whose reference counts fsck.extref finds damaged (its
    tree's first block overwritten with dd; stock e2fsck sees nothing
    there): refused, the image byte for byte as it was."""
    before = _sha(plain_image)
    res = helpers.run([helpers.binary("mkfs.extref"), "--shrink",
                       str(plain_image)], check=False)
    assert res.returncode == 1 and "not an extref image" in res.stderr, \
        helpers.describe(res)
    assert _sha(plain_image) == before

    src = make_tree(tmp_path / "src2")
    img = tmp_path / "x.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(src),
                 "--dedup=block", str(img), "64M"])
    tree = helpers.debugfs(img, "blocks <5>").stdout.split()
    assert tree, "inode 5 has no block"
    with open(img, "r+b") as f:
        f.seek(int(tree[0]) * BS)
        f.write(random.Random(3).randbytes(BS))
    helpers.e2fsck_fn(img)
    before = _sha(img)
    res = helpers.run([helpers.binary("mkfs.extref"), "--shrink", str(img)],
                      check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "fsck.extref -fy" in res.stderr and \
        "nothing was changed" in res.stderr, res.stderr
    assert _sha(img) == before


def test_shrink_is_reproducible(crash_source, tmp_path):
    """Two shrinks of the same image, a second apart, under
    SOURCE_DATE_EPOCH: the same bytes."""
    _, base = crash_source
    shas = []
    for i in range(2):
        img = tmp_path / f"r{i}.img"
        helpers.run(["cp", "--sparse=always", str(base), str(img)])
        convert(img, "--shrink", "-q")
        shas.append(_sha(img))
        time.sleep(1.1)
    assert shas[0] == shas[1]


def copies_and_rejecting_e2fsck(crash_source, tmp_path):
    """(the image to shrink, the same converted without --shrink, a
    stand-in e2fsck that calls the image damaged at its third call,
    after the cut: before the conversion, after the new layout, after
    the cut; the real e2fsck otherwise, and a file counting the calls)."""
    _, base = crash_source
    img, conv = tmp_path / "t.img", tmp_path / "conv.img"
    for f in (img, conv):
        helpers.run(["cp", "--sparse=always", str(base), str(f)])
    convert(conv)
    count = tmp_path / "count"
    fake = tmp_path / "e2fsck"
    fake.write_text(f"""#!/bin/sh
n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
if [ $n -eq 3 ]; then echo "stand-in: damaged" >&2; exit 4; fi
exec e2fsck "$@"
""")
    fake.chmod(0o755)
    return img, conv, fake, count


def test_cut_that_e2fsck_rejects_is_taken_back_whole(crash_source, tmp_path,
                                                     loop_mount):
    """resize2fs went through but stock e2fsck -fn rejects what it left
    (a stand-in e2fsck says so at that call; resize2fs 1.47.0 does it for
    real when it moves an orphan file): the run's undo file, then the
    tail's (resize2fs cut the file, losing the originals of the blocks it
    moved down), then the new layout's put the image back byte for byte
    as converted, at its full length."""
    src, _ = crash_source
    img, conv, fake, count = copies_and_rejecting_e2fsck(crash_source,
                                                         tmp_path)
    res = convert(img, "--shrink", check=False,
                  env={"MKFS_EXTREF_E2FSCK": str(fake)})
    assert res.returncode == 1, helpers.describe(res)
    assert "finds the image damaged after resize2fs" in res.stderr and \
        "rolled back the new layout too" in res.stderr, res.stderr
    assert count.read_text().strip() == "3"
    assert os.path.getsize(img) == os.path.getsize(conv)
    assert _sha(img) == _sha(conv)
    assert not list(tmp_path.glob("*.e2undo"))
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)


def test_undo_files_left_are_named_in_order(plain_image):
    """All three undo files left (a kill at the wrong moment): the
    refusal names them in the order e2undo must take them, the newest
    first, the image untouched."""
    img = str(plain_image)
    for ext in (".layout.e2undo", ".e2undo", ".tail.e2undo"):
        with open(img + ext, "wb") as f:
            f.write(b"left")
    before = _sha(plain_image)
    res = convert(plain_image, "--shrink", check=False)
    assert res.returncode == 1, helpers.describe(res)
    order = re.findall(r"e2undo (\S+) " + re.escape(img), res.stderr)
    assert order == [img + ".e2undo", img + ".tail.e2undo",
                     img + ".layout.e2undo"], res.stderr
    assert "e2undo -f" in res.stderr and "nothing was changed" in res.stderr
    assert _sha(plain_image) == before


def test_failed_rollback_names_what_puts_it_back(crash_source, tmp_path,
                                                 loop_mount):
    """The cut went through, e2fsck rejects it, and e2undo fails on the
    cut's undo file: the run names every undo file left in order, and
    doing what it says with stock e2undo brings the image back byte for
    byte as converted (the tail too, which resize2fs had cut off)."""
    src, _ = crash_source
    img, conv, fsck, _ = copies_and_rejecting_e2fsck(crash_source, tmp_path)
    undo = tmp_path / "e2undo"
    undo.write_text("""#!/bin/sh
case "$1" in *.tail.e2undo|*.layout.e2undo) exec e2undo "$@" ;; esac
echo "stand-in: cannot" >&2; exit 1
""")
    undo.chmod(0o755)
    res = convert(img, "--shrink", check=False,
                  env={"MKFS_EXTREF_E2FSCK": str(fsck),
                       "MKFS_EXTREF_E2UNDO": str(undo)})
    assert res.returncode == 1, helpers.describe(res)
    advice = res.stderr.split("to put it back, ", 1)[1]
    order = re.findall(r"e2undo (\S+) " + re.escape(str(img)), advice)
    assert order == [f"{img}.e2undo", f"{img}.tail.e2undo",
                     f"{img}.layout.e2undo"], res.stderr
    for u in order:
        helpers.run(["e2undo", u, str(img)])
    assert _sha(img) == _sha(conv)
    helpers.e2fsck_fn(img)
    fsck_fn(img)
    mnt, _ = loop_mount(img)
    compare_with_source(mnt, src)
