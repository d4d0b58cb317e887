"""mkfs.extref -d with its deduplication planned before the blocks are
allocated, and its image sized from what it holds (issue 12).

Oracles: the test computes the distinct non-zero blocks of its source
itself (each inode once, a partial last block zero-padded) and reads the
image's block maps with stock debugfs; stock e2fsck -fn and fsck.extref
-fn must be clean; the files are read back through a read-only kernel
mount; sizes come from stock dumpe2fs.
"""

import hashlib
import os
import random
import tarfile

import pytest

import crashlib
import helpers

UUID = "0e2b6a3f-9d1c-4a57-8f00-123456789abc"
MiB = 1 << 20


def mkfs_d(img, src, *opts, env=None, check=True):
    return helpers.run([helpers.binary("mkfs.extref"), "-q", "-U", UUID,
                        "-E", f"hash_seed={UUID}", *opts, "-d", str(src),
                        str(img)], env=env, check=check)


def dup_source(root, seed=7):
    """Blocks repeated inside files and across them, at 1 KiB and 4 KiB
    granularity, zero blocks inside files, a sparse file, a hard link,
    equal tails of files of different sizes, empty and tiny files."""
    rnd = random.Random(seed)

    def blob(n):
        return bytes(rnd.randrange(256) for _ in range(n))

    root.mkdir()
    common = [blob(4096) for _ in range(6)]
    small = [blob(1024) for _ in range(4)]
    for i in range(40):
        d = root / f"d{i % 5}"
        d.mkdir(exist_ok=True)
        parts = [common[(i * 5) % 6], blob(4096), bytes(8192),
                 common[(i * 3) % 6], small[i % 4] * 3, blob(100 + i)]
        (d / f"f{i:02d}").write_bytes(b"".join(parts))
    (root / "same_a").write_bytes(common[0] + b"tail")
    (root / "same_b").write_bytes(common[0] + b"tail")
    (root / "same_c").write_bytes(common[0] + b"tail" + bytes(50))
    with open(root / "sparse", "wb") as f:
        f.truncate(3 * MiB)
        f.seek(MiB)
        f.write(common[1] * 3)
    os.link(root / "same_a", root / "hardlink")
    (root / "empty").write_bytes(b"")
    (root / "zeros").write_bytes(bytes(20000))
    (root / "tiny").write_bytes(b"x")
    return root


def floor(root, bs):
    """(distinct, non-zero) blocks of bs bytes of the regular files;
    per file path (first name of each inode) its non-zero block count."""
    seen, inodes, nonzero, per_file = set(), set(), 0, {}
    zero = bytes(bs)
    for d, _, files in os.walk(root):
        for name in sorted(files):
            p = os.path.join(d, name)
            st = os.lstat(p)
            if (st.st_dev, st.st_ino) in inodes:
                continue
            inodes.add((st.st_dev, st.st_ino))
            n = 0
            with open(p, "rb") as f:
                while True:
                    b = f.read(bs)
                    if not b:
                        break
                    b = b.ljust(bs, b"\0")
                    if b != zero:
                        n += 1
                        seen.add(hashlib.sha256(b).digest())
            nonzero += n
            per_file[os.path.relpath(p, root)] = n
    return len(seen), nonzero, per_file


def image_blocks(img, paths):
    """Stock debugfs: each path's mapped data blocks (leaf extents only,
    not the extent tree's own blocks), a list."""
    cmds = img.parent / "blocks.cmd"
    cmds.write_text("".join(f"dump_extents -l /{p}\n" for p in paths))
    out = helpers.run(["debugfs", "-f", str(cmds), str(img)]).stdout
    got, cur = {}, None
    for line in out.splitlines():
        if line.startswith("debugfs: dump_extents -l /"):
            cur = line.split("/", 1)[1]
            got[cur] = []
            continue
        t = line.split()
        if cur is None or len(t) < 5 or "/" not in t[0]:
            continue
        t = t[4:]                       # past "a/ b  c/ d"
        if len(t) >= 7 and t[1] == "-":
            p0, n = int(t[3]), int(t[6])
        else:
            p0, n = int(t[1]), int(t[2])
        got[cur] += list(range(p0, p0 + n))
    return got


def check_clean(img):
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    assert res.returncode == 0, helpers.describe(res)


def same_files(mnt, src):
    for d, _, files in os.walk(src):
        for name in files:
            p = os.path.join(d, name)
            rel = os.path.relpath(p, src)
            with open(p, "rb") as a, open(mnt / rel, "rb") as b:
                assert a.read() == b.read(), rel


@pytest.mark.parametrize("bs", [1024, 4096])
@pytest.mark.parametrize("source", ["dir", "tar"])
def test_block_dedupe_stores_each_distinct_block_once(tmp_path, loop_mount,
                                                      bs, source):
    src = dup_source(tmp_path / "src")
    distinct, nonzero, per_file = floor(src, bs)
    assert nonzero > distinct * 1.3          # the source does repeat itself
    arg = src
    if source == "tar":
        arg = tmp_path / "src.tar"
        with tarfile.open(arg, "w") as tf:
            tf.add(src, arcname=".")
    img = tmp_path / "t.img"
    mkfs_d(img, arg, "-b", str(bs), "--dedup=block")
    check_clean(img)
    maps = image_blocks(img, per_file)
    used = set()
    for rel, n in per_file.items():
        # zero blocks (and the sparse file's holes) are holes
        assert len(maps[rel]) == n, (rel, maps[rel])
        used.update(maps[rel])
    assert len(used) == distinct, (len(used), distinct)
    mnt, _ = loop_mount(img)
    same_files(mnt, src)


def test_block_dedupe_writes_the_distinct_data_contiguously(tmp_path):
    """Each distinct block is written once, one after the other, in the
    order the sorted walk meets it: the blocks used are one run."""
    src = dup_source(tmp_path / "src")
    _, _, per_file = floor(src, 4096)
    img = tmp_path / "t.img"
    mkfs_d(img, src, "--dedup=block")
    used = sorted({b for v in image_blocks(img, per_file).values()
                   for b in v})
    # one run, but for the directories' blocks, made as the walk goes
    dirs = sum(len(d) for _, d, _ in os.walk(src)) + 2
    assert used[-1] - used[0] + 1 - len(used) <= dirs, used


def test_block_dedupe_reproducible_whatever_the_order(tmp_path):
    """The same tree made in two orders (so the host lists it in two
    orders): the same image, byte for byte, under SOURCE_DATE_EPOCH."""
    a = dup_source(tmp_path / "a")
    b = tmp_path / "b"
    b.mkdir()
    for d, dirs, files in sorted(os.walk(a), reverse=True):
        rel = os.path.relpath(d, a)
        (b / rel).mkdir(parents=True, exist_ok=True)
    inodes = {}
    for d, _, files in os.walk(a):
        for name in sorted(files, reverse=True):
            p = os.path.join(d, name)
            st = os.lstat(p)
            q = b / os.path.relpath(p, a)
            if st.st_ino in inodes:
                os.link(inodes[st.st_ino], q)
                continue
            inodes[st.st_ino] = q
            with open(p, "rb") as f, open(q, "wb") as g:
                data = f.read()
                g.write(data)
                if name == "sparse":
                    g.truncate(len(data))
    env = {"SOURCE_DATE_EPOCH": "1600000000"}
    for d, _, files in os.walk(b):
        for n in files + [""]:
            os.utime(os.path.join(d, n), (1600000000, 1600000000))
    for d, _, files in os.walk(a):
        for n in files + [""]:
            os.utime(os.path.join(d, n), (1600000000, 1600000000))
    ia, ib = tmp_path / "a.img", tmp_path / "b.img"
    mkfs_d(ia, a, "--dedup=block", env=env)
    mkfs_d(ib, b, "--dedup=block", env=env)
    assert helpers.sha256(ia) == helpers.sha256(ib)


def fs_numbers(img):
    h = helpers.dumpe2fs_header(img)
    return {k: int(h[k].split()[0].rstrip("k")) for k in
            ("Block count", "Free blocks", "Reserved block count",
             "Inode count", "Free inodes", "Total journal size",
             "Block size")}


def test_size_without_size_is_content_and_headroom(tmp_path):
    """No SIZE: the filesystem holds the content with little to spare
    (--headroom=0), and --headroom=N adds N percent; no reserved blocks;
    a 4 MiB journal; 4 KiB blocks; inodes for the entries and a few."""
    src = dup_source(tmp_path / "src")
    # enough data that fixed costs (the journal) do not hide the rest
    big = src / "big"
    big.mkdir()
    rnd = random.Random(1)
    for i in range(60):
        (big / f"b{i}").write_bytes(rnd.randbytes(200000))
    entries = sum(len(f) + len(d) for _, d, f in os.walk(src)) + 1
    distinct, nonzero, _ = floor(src, 4096)
    sizes = {}
    for hr in (0, 50):
        img = tmp_path / f"h{hr}.img"
        mkfs_d(img, src, "--dedup=block", f"--headroom={hr}")
        check_clean(img)
        n = fs_numbers(img)
        assert n["Block size"] == 4096
        assert n["Reserved block count"] == 0
        assert n["Total journal size"] == 4096    # KiB
        assert entries <= n["Inode count"] - 10
        sizes[hr] = n
    n0, n50 = sizes[0], sizes[50]
    used0 = n0["Block count"] - n0["Free blocks"]
    # headroom 0: within a few percent of what it holds
    assert n0["Free blocks"] <= 0.04 * n0["Block count"] + 16, n0
    # what it holds: the distinct data, the journal and the metadata
    meta = used0 - distinct - 1024
    assert 0 < meta <= 0.10 * distinct + 64, (meta, distinct)
    assert n0["Inode count"] - n0["Free inodes"] >= entries - 1
    assert n0["Free inodes"] <= 0.1 * entries + 64
    # headroom 50: half as much again, in blocks and in inodes
    ratio = n50["Block count"] / n0["Block count"]
    assert 1.45 <= ratio <= 1.56, ratio
    assert n50["Inode count"] >= 1.4 * entries


@pytest.mark.parametrize("source", ["dir", "tar"])
def test_size_follows_the_distinct_data(tmp_path, source):
    """The deduplicated build is smaller than the plain one by about
    what it saves: its size comes from the distinct blocks (of a
    directory, or of an archive read before the build)."""
    src = tmp_path / "src"
    src.mkdir()
    rnd = random.Random(2)
    block = rnd.randbytes(4096)
    for i in range(200):
        (src / f"f{i}").write_bytes(block * 20 + rnd.randbytes(15 * 4096))
    distinct, nonzero, _ = floor(src, 4096)
    arg = src
    if source == "tar":
        arg = tmp_path / "src.tar"
        with tarfile.open(arg, "w") as tf:
            tf.add(src, arcname=".")
    n = {}
    for mode in ("none", "block"):
        img = tmp_path / f"{mode}.img"
        mkfs_d(img, arg, f"--dedup={mode}", "--headroom=0")
        check_clean(img)
        n[mode] = fs_numbers(img)["Block count"]
    saved = nonzero - distinct
    assert abs((n["none"] - n["block"]) - saved) <= 0.05 * saved + 64, \
        (n, saved)


def test_with_size_the_unused_part_is_a_hole(tmp_path):
    src = dup_source(tmp_path / "src")
    img = tmp_path / "t.img"
    helpers.run([helpers.binary("mkfs.extref"), "-q", "--dedup=block",
                 "-d", str(src), str(img), "512M"])
    check_clean(img)
    st = os.stat(img)
    assert st.st_size == 512 * MiB
    # the data, the journal (mke2fs's for 512 MiB), the metadata
    assert st.st_blocks * 512 < 40 * MiB, st.st_blocks * 512


def test_block_dedupe_leaves_symlink_blocks_alone(tmp_path):
    """Only regular files share: two slow symlinks with one target, and a
    file holding the same bytes, keep a block each."""
    src = tmp_path / "src"
    src.mkdir()
    target = "t" * 100
    os.symlink(target, src / "l1")
    os.symlink(target, src / "l2")
    (src / "f").write_bytes(target.encode())
    img = tmp_path / "t.img"
    mkfs_d(img, src, "--dedup=block")
    check_clean(img)
    blocks = [helpers.debugfs(img, f"blocks /{n}").stdout.split()
              for n in ("l1", "l2", "f")]
    assert all(len(b) == 1 for b in blocks), blocks
    assert len({b[0] for b in blocks}) == 3, blocks


def test_block_dedupe_archive_replacing_a_shared_file(tmp_path, loop_mount):
    """An archive names a file twice (tar -r): the later entry replaces
    it; the blocks it shared with another file stay that file's, the
    ones only it had are given back, and counts stay right."""
    rnd = random.Random(4)
    common, own = rnd.randbytes(4 * 4096), rnd.randbytes(3 * 4096)
    src = tmp_path / "src"
    src.mkdir()
    (src / "keep").write_bytes(common)
    (src / "twice").write_bytes(common + own)
    tar = tmp_path / "a.tar"
    with tarfile.open(tar, "w") as tf:
        tf.add(src / "keep", arcname="keep")
        tf.add(src / "twice", arcname="twice")
        (src / "twice").write_bytes(own[:5000])
        tf.add(src / "twice", arcname="twice")
    img = tmp_path / "t.img"
    mkfs_d(img, tar, "--dedup=block")
    check_clean(img)
    distinct, _, per_file = floor(src, 4096)
    maps = image_blocks(img, per_file)
    assert len({b for v in maps.values() for b in v}) == distinct
    mnt, _ = loop_mount(img)
    same_files(mnt, src)


@pytest.mark.parametrize("other", [False, True],
                         ids=["alone", "shared_with_another"])
def test_block_dedupe_archive_replacing_a_file_sharing_itself(tmp_path,
                                                              other):
    """The replaced file maps one block several times (its own identical
    blocks, shared): the punch gives it back once per mapping, and the
    block is freed once, or kept while another file maps it (a block was
    left marked in use, e2fsck: "Block bitmap differences: -B")."""
    rnd = random.Random(5)
    block = rnd.randbytes(4096)
    src = tmp_path / "src"
    src.mkdir()
    (src / "twice").write_bytes(block * 3 + b"tail")
    if other:
        (src / "keep").write_bytes(block)
    tar = tmp_path / "a.tar"
    with tarfile.open(tar, "w") as tf:
        if other:
            tf.add(src / "keep", arcname="keep")
        tf.add(src / "twice", arcname="twice")
        (src / "twice").write_bytes(b"short")
        tf.add(src / "twice", arcname="twice")
    img = tmp_path / "t.img"
    mkfs_d(img, tar, "--dedup=block")
    check_clean(img)
    assert helpers.debugfs_cat(img, "/twice") == b"short"
    if other:
        assert helpers.debugfs_cat(img, "/keep") == block


def test_block_dedupe_populate_refuses_an_image_with_counts(tmp_path):
    """The library's populate with block dedupe bulk-loads the tree at
    the end: on an image whose tree already holds counts it is refused
    before anything changes (tests/unit/populate_dedupe_api)."""
    src = dup_source(tmp_path / "src")
    img = tmp_path / "t.img"
    mkfs_d(img, src, "--dedup=block")
    assert crashlib.refcount_records(img)                # counts there
    before = helpers.sha256(img)
    res = helpers.run([helpers.binary("tests/unit/populate_dedupe_api"),
                       str(img), str(src)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert helpers.sha256(img) == before
    check_clean(img)


def file_floor(root, bs):
    """Non-zero blocks of one file of each distinct content (and size);
    the paths (first name of each inode) grouped by content."""
    groups, inodes = {}, set()
    for d, _, files in os.walk(root):
        for name in sorted(files):
            p = os.path.join(d, name)
            st = os.lstat(p)
            if (st.st_dev, st.st_ino) in inodes:
                continue
            inodes.add((st.st_dev, st.st_ino))
            data = open(p, "rb").read()
            groups.setdefault(hashlib.sha256(data).digest(), []).append(
                os.path.relpath(p, root))
    return groups


@pytest.mark.parametrize("source", ["dir", "tar"])
def test_file_dedupe_stores_each_distinct_file_once(tmp_path, loop_mount,
                                                    source):
    src = dup_source(tmp_path / "src")
    groups = file_floor(src, 4096)
    _, _, per_file = floor(src, 4096)
    assert any(len(g) > 1 for g in groups.values())
    arg = src
    if source == "tar":
        arg = tmp_path / "src.tar"
        with tarfile.open(arg, "w") as tf:
            tf.add(src, arcname=".")
    img = tmp_path / "t.img"
    mkfs_d(img, arg, "--dedup=file")
    check_clean(img)
    maps = image_blocks(img, per_file)
    want = 0
    for paths in groups.values():
        assert all(len(maps[p]) == per_file[p] for p in paths)
        # every copy maps the first one's blocks, as they are
        assert all(maps[p] == maps[paths[0]] for p in paths), paths
        want += per_file[paths[0]]
    assert len({b for v in maps.values() for b in v}) == want
    mnt, _ = loop_mount(img)
    same_files(mnt, src)


def test_file_dedupe_archive_replacing_the_first_copy(tmp_path,
                                                      loop_mount):
    """An archive names a file again after a copy of it came: the copy
    keeps the blocks, the new content gets its own, counts stay right."""
    rnd = random.Random(6)
    first, later = rnd.randbytes(5 * 4096 + 10), rnd.randbytes(9000)
    src = tmp_path / "src"
    src.mkdir()
    tar = tmp_path / "a.tar"
    (src / "a").write_bytes(first)
    (src / "b").write_bytes(first)
    with tarfile.open(tar, "w") as tf:
        tf.add(src / "a", arcname="a")
        tf.add(src / "b", arcname="b")
        (src / "a").write_bytes(later)
        tf.add(src / "a", arcname="a")
        tf.add(src / "b", arcname="c")       # a third copy of first
    (src / "c").write_bytes(first)
    img = tmp_path / "t.img"
    mkfs_d(img, tar, "--dedup=file")
    check_clean(img)
    maps = image_blocks(img, ["a", "b", "c"])
    assert maps["b"] == maps["c"] and len(maps["b"]) == 6
    assert not set(maps["a"]) & set(maps["b"]) and len(maps["a"]) == 3
    mnt, _ = loop_mount(img)
    same_files(mnt, src)


@pytest.mark.parametrize("mode", ["none", "file", "block"])
def test_size_with_no_headroom_still_fits(tmp_path, mode):
    """--headroom=0 on what costs metadata: a large (indexed) directory,
    empty directories, slow symlinks, attributes too large for the
    inode, files whose shared blocks make many extents."""
    src = tmp_path / "src"
    src.mkdir()
    rnd = random.Random(8)
    big = src / "big"
    big.mkdir()
    for i in range(1500):
        (big / f"a_rather_long_file_name_{i:05d}").write_bytes(b"%d" % i)
    for i in range(200):
        (src / f"empty{i}").mkdir()
    for i in range(100):
        os.symlink("x" * 200 + str(i), src / f"link{i}")
    for i in range(100):
        f = src / f"attr{i}"
        f.write_bytes(b"a")
        os.setxattr(f, "user.big", rnd.randbytes(600))
    shared = [rnd.randbytes(4096) for _ in range(8)]
    for i in range(10):
        parts = []
        for k in range(300):
            parts.append(shared[k % 8] if k % 2 else rnd.randbytes(4096))
        (src / f"frag{i}").write_bytes(b"".join(parts))
    img = tmp_path / "t.img"
    mkfs_d(img, src, f"--dedup={mode}", "--headroom=0")
    check_clean(img)


def journal_bytes(img):
    return helpers.run(["debugfs", "-R", "cat <8>", str(img)],
                       text=False).stdout


def test_journal_of_a_new_file_is_a_hole_of_zeros(tmp_path):
    """A build into a file it creates leaves the journal unwritten (a
    hole: the same zeros, 4 MiB less on the host)."""
    src = dup_source(tmp_path / "src")
    img = tmp_path / "t.img"
    mkfs_d(img, src, "--dedup=block")
    check_clean(img)
    j = journal_bytes(img)
    assert len(j) == 4 * MiB
    assert any(j[:4096]) and not any(j[4096:])    # its superblock only
    assert os.stat(img).st_blocks * 512 < 2 * MiB


def test_journal_over_old_bytes_kept_by_nodiscard_is_zeroed(tmp_path):
    """A file given with old bytes in it and -E nodiscard (nothing
    punched): the journal is written with zeros as mke2fs writes it."""
    src = dup_source(tmp_path / "src")
    img = tmp_path / "given.img"
    img.write_bytes(b"\xa5" * (16 * MiB))
    mkfs_d(img, src, "-E", "nodiscard", "--dedup=block")
    check_clean(img)
    j = journal_bytes(img)
    assert any(j[:4096]) and not any(j[4096:])
