"""mkfs.extref -d IMAGE: an ext4 or extref image as the source
(mkfs.extref(8), BUILDING FROM AN IMAGE).

The image's tree is read through libext2fs, read-only, and copied into a
new image of another block size or inode size; extents its files share
(reflinks) are shared the same way in the result.

Oracles nobody here wrote: stock mke2fs -d makes the ext4 source; stock
e2fsck -fn on every image; the kernel, mounting source and result
read-only on loop devices, for `diff -r` and the metadata os.lstat and
os.listxattr report (owner, mode, times, extended attributes, hard
links, symlinks, devices, holes); filefrag -v (FIEMAP on the ro mounts)
for which files share physical blocks; `cmp` for reproducibility.
"""

import hashlib
import os
import random
import re
import stat
import subprocess

import pytest

import helpers

UUID = "0e2b6a3f-9d1c-4a57-8f00-123456789abc"


def make_tree(root):
    """Every kind of entry mke2fs -d copies, with metadata to check."""
    os.makedirs(root / "d" / "e")
    (root / "a").write_bytes(b"hello\n")
    os.link(root / "a", root / "hl")
    os.link(root / "a", root / "d" / "hl2")
    os.symlink("a", root / "fast")
    os.symlink("x" * 300, root / "slow")
    os.mknod(root / "cdev", 0o620 | stat.S_IFCHR, os.makedev(4, 5))
    os.mknod(root / "bdev", 0o640 | stat.S_IFBLK, os.makedev(300, 70000))
    os.mkfifo(root / "fifo", 0o600)
    with open(root / "sparse", "wb") as f:
        f.truncate(8 << 20)
        f.seek(5 << 20)
        f.write(b"middle")
    (root / "d" / "e" / "big").write_bytes(os.urandom(300000))
    os.setxattr(root / "a", "user.colour", b"blue")
    os.setxattr(root / "d", "trusted.t", b"\x00\x01binary")
    subprocess.run(["setfacl", "-m", "u:1234:rw", str(root / "d" / "e" /
                                                     "big")], check=True)
    os.chown(root / "d" / "e" / "big", 1234, 5678)
    os.chown(root / "fast", 42, 43, follow_symlinks=False)
    os.chmod(root / "d", 0o2751)
    for i, p in enumerate(["a", "d", "d/e/big", "sparse", "fifo"]):
        t = 1000000000 + i * 1000
        os.utime(root / p, ns=(t * 10**9 + 123456789, t * 10**9 + 987654321))


def stock_image(tmp_path, *opts):
    src = tmp_path / "tree"
    if not src.exists():
        make_tree(src)
    img = tmp_path / "ext4.img"
    helpers.run(["mke2fs", "-q", "-F", *opts, "-d", str(src), str(img),
                 "32M"])
    helpers.e2fsck_fn(img)
    return img


@pytest.fixture
def ext4_src(tmp_path):
    return stock_image(tmp_path, "-t", "ext4", "-b", "1024", "-I", "256")


def extref_src(tmp_path):
    """An extref image whose files share extents: a reflink of a whole
    file, a range cloned into another, a reflink of that one."""
    src = tmp_path / "etree"
    src.mkdir()
    (src / "f").write_bytes(os.urandom(200000))
    (src / "g").write_bytes(os.urandom(10000))
    (src / "h").write_bytes(os.urandom(50000))
    img = tmp_path / "extref.img"
    helpers.mkfs(img, "16M", "-q", "-d", str(src))
    dbg = helpers.binary("debugfs.extref")
    for req in ["reflink /f /f2", "clone_range /f 40960 /g 4096 81920",
                "reflink /g /g2", "mkdir /sub", "reflink /h /sub/h2"]:
        helpers.run([dbg, "-w", "-R", req, str(img)])
    helpers.e2fsck_fn(img)
    return img


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def build(src, img, *opts, env=None):
    return helpers.run([helpers.binary("mkfs.extref"), "-q", *opts, "-d",
                        str(src), str(img)], env=env)


def lsattr(path):
    """The flags chattr sets, by lsattr; those of the layout (extents,
    an indexed directory, inline data, a huge file) left out."""
    flags = helpers.run(["lsattr", "-d", path]).stdout.split()[0]
    return "".join(c for c in flags if c not in "eINh-")


def set_flags(img, path, add):
    """debugfs: the inode's flags with add ORed in."""
    out = helpers.run(["debugfs", "-R", f"stat {path}", str(img)]).stdout
    cur = int(re.search(r"Flags: (0x[0-9a-f]+)", out)[1], 16)
    debugfs_w(img, f"sif {path} flags {cur | add:#x}")


def meta(root):
    """Every entry's metadata, its hard-link group among them (the
    contents: diff -r)."""
    return helpers.host_tree(
        root, data=False, link_xattrs=True, all_nlink=True,
        extra=lambda p, st: {"attrs": lsattr(p)}
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) else {})


def phys(path):
    """The file's physical bytes (start, end) by filefrag -v (FIEMAP),
    each extent cut at the file's size (a block's bytes past it are no
    file's data, and another block size cuts there)."""
    size = os.lstat(path).st_size
    res = helpers.run(["filefrag", "-v", "-b1", str(path)])
    out = []
    for line in res.stdout.splitlines():
        f = line.replace(":", " ").replace("..", " ").split()
        if len(f) >= 6 and f[0].isdigit():
            lstart, start, end = int(f[1]), int(f[3]), int(f[4]) + 1
            end = min(end, start + max(0, size - lstart))
            out.append((start, end))
    return out


def sharing(root):
    """Bytes each pair of regular files (one name an inode) shares
    physically."""
    by_ino = {}
    for d, _, fs in os.walk(root):
        for n in fs:
            st = os.lstat(os.path.join(d, n))
            rel = os.path.relpath(os.path.join(d, n), root)
            if stat.S_ISREG(st.st_mode) and rel < by_ino.get(st.st_ino,
                                                                "\xff"):
                by_ino[st.st_ino] = rel
    files = sorted(by_ino.values())
    ext = {f: phys(os.path.join(root, f)) for f in files}
    out = {}
    for i, a in enumerate(files):
        for b in files[i + 1:]:
            n = sum(max(0, min(e1, e2) - max(s1, s2))
                    for s1, e1 in ext[a] for s2, e2 in ext[b])
            if n:
                out[(a, b)] = n
    return out


def compare(src_img, out_img, loop_mount):
    m1, _ = loop_mount(src_img)
    m2, _ = loop_mount(out_img)
    res = helpers.run(["diff", "-r", "--no-dereference", str(m1), str(m2)],
                      check=False)
    # diff names a pair of FIFOs or devices, which it cannot compare; the
    # kinds and device numbers are compared by meta() below
    other = [ln for ln in res.stdout.splitlines()
             if not re.fullmatch(r"File .* is a (.*) while file .* is a \1",
                                 ln)]
    assert res.returncode in (0, 1) and not other and not res.stderr, \
        helpers.describe(res)
    a, b = meta(m1), meta(m2)
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k] == b[k], k
    return m1, m2


@pytest.mark.parametrize("kind", [
    ("-t", "ext4", "-b", "1024", "-I", "256"),
    ("-t", "ext2", "-b", "2048"),                   # block maps
    ("-t", "ext4", "-O", "inline_data"),            # data in the inode
])
def test_ext4_into_new_geometry(tmp_path, loop_mount, kind):
    """A stock image into 4 KiB blocks and 512-byte inodes: the same
    tree, the same metadata; the source untouched."""
    ext4_src = stock_image(tmp_path, *kind)
    set_flags(ext4_src, "/d/e/big", 0x10 | 0x40)    # immutable, nodump
    set_flags(ext4_src, "/a", 0x20)                 # append only
    set_flags(ext4_src, "/d", 0x80)                 # noatime
    helpers.e2fsck_fn(ext4_src)
    before = sha(ext4_src)
    out = tmp_path / "out.img"
    build(ext4_src, out, "-b", "4096", "-I", "512")
    assert sha(ext4_src) == before
    helpers.e2fsck_fn(out)
    hdr = helpers.dumpe2fs_header(out)
    assert hdr["Block size"] == "4096" and hdr["Inode size"] == "512"
    m1, m2 = compare(ext4_src, out, loop_mount)
    assert lsattr(m2 / "d" / "e" / "big") == "id"
    # holes stay holes (sizes were compared; stock mke2fs -O inline_data
    # gets this one's size wrong in the source already)
    st = os.stat(m2 / "sparse")
    assert st.st_size > 5 << 20 and st.st_blocks * 512 <= 16384
    assert sharing(m2) == {}


@pytest.mark.parametrize("opts", [(), ("-b", "1024", "-I", "512")])
def test_extref_sharing_kept(tmp_path, loop_mount, opts):
    """Files sharing physical blocks in the source share the same bytes
    in the result, same block size or not."""
    src = extref_src(tmp_path)
    out = tmp_path / "out.img"
    build(src, out, *opts)
    helpers.e2fsck_fn(out)
    helpers.run([helpers.binary("fsck/fsck.extref"), "-n", str(out)])
    m1, m2 = compare(src, out, loop_mount)
    s1, s2 = sharing(m1), sharing(m2)
    assert s1 and s1 == s2


def test_dedupe_on_top(tmp_path):
    """--dedup=file on an image source keeps its reflinks and shares the
    copies the source stored twice."""
    src = tmp_path / "etree"
    src.mkdir()
    data = os.urandom(65536)
    (src / "a").write_bytes(data)
    (src / "b").write_bytes(data)
    img = tmp_path / "extref.img"
    helpers.mkfs(img, "16M", "-q", "--dedup=none", "-d", str(src))
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "reflink /a /c", str(img)])
    plain, dd = tmp_path / "plain.img", tmp_path / "dd.img"
    build(img, plain, "--dedup=none")
    build(img, dd, "--dedup=file")
    for i in (plain, dd):
        helpers.e2fsck_fn(i)

    def blocks(img, path):
        return helpers.run(["debugfs", "-R", f"blocks {path}", str(img)]
                           ).stdout.split()

    for img in (plain, dd):                 # the reflink kept
        assert blocks(img, "/a") == blocks(img, "/c")
    assert blocks(plain, "/a") != blocks(plain, "/b")
    assert blocks(dd, "/a") == blocks(dd, "/b")     # and the copy found
    helpers.run([helpers.binary("fsck/fsck.extref"), "-n", str(dd)])


def test_reproducible(tmp_path):
    """Two builds from one image under two MALLOC_PERTURB_ values: the
    same bytes."""
    src = extref_src(tmp_path)
    env = {"SOURCE_DATE_EPOCH": "1000000000"}
    imgs = []
    for perturb in ("0", "165"):
        img = tmp_path / f"r{perturb}.img"
        helpers.run([helpers.binary("mkfs.extref"), "-q", "-U", UUID, "-E",
                     f"hash_seed={UUID}", "-d", str(src), str(img)],
                    env=dict(os.environ, **env, MALLOC_PERTURB_=perturb))
        imgs.append(img)
    assert helpers.run(["cmp", str(imgs[0]), str(imgs[1])],
                       check=False).returncode == 0


def debugfs_w(img, *reqs):
    for r in reqs:
        helpers.run(["debugfs", "-w", "-R", r, str(img)])


def hostile(tmp_path, ext4_src, name):
    img = tmp_path / f"{name}.img"
    img.write_bytes(ext4_src.read_bytes())
    if name == "garbage":
        with open(img, "r+b") as f:       # the magic, nothing else sane
            f.write(os.urandom(1024 + 0x38))
            f.seek(1024 + 0x3a)
            f.write(os.urandom(2000))
    elif name == "recovery":
        debugfs_w(img, "feature needs_recovery")
    elif name == "loop":
        debugfs_w(img, "ln /d /d/e/up")
    elif name == "outside":
        debugfs_w(img, "sif /d/e/big block[5] 0x7ffffff0")
    elif name == "dirblock":
        blk = helpers.run(["debugfs", "-R", "blocks /d", str(img)]
                          ).stdout.split()[0]
        with open(img, "r+b") as f:
            f.seek(int(blk) * 1024)
            f.write(b"\xff" * 1024)
    return img


@pytest.mark.parametrize("name,words", [
    ("garbage", "cannot read the image"),
    ("recovery", "needs recovery"),
    ("loop", "meets a directory twice"),
    ("outside", "outside its filesystem"),
    ("dirblock", "/d"),
])
def test_hostile_source(tmp_path, ext4_src, name, words):
    """A damaged or hostile source: a clear error naming it, exit 1, no
    crash, no image left, the source untouched."""
    img = hostile(tmp_path, ext4_src, name)
    before = sha(img)
    out = tmp_path / "out.img"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(img),
                       str(out)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert words in res.stderr and str(img) in res.stderr, res.stderr
    assert "Sanitizer" not in res.stderr
    assert sha(img) == before
    assert not out.exists()


def test_block_device(tmp_path, ext4_src, loop_mount):
    """A read-only loop device holding the image is a source too."""
    dev = helpers.run(["losetup", "--read-only", "--find", "--show",
                       str(ext4_src)]).stdout.strip()
    try:
        out = tmp_path / "out.img"
        build(dev, out)
    finally:
        helpers.run(["losetup", "-d", dev], check=False)
    helpers.e2fsck_fn(out)
    compare(ext4_src, out, loop_mount)


def test_mounted_rw_refused(tmp_path, ext4_src, loop_mount):
    """The kernel changes a tree mounted read-write: refused."""
    loop_mount(ext4_src, options="rw")
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d",
                       str(ext4_src), str(tmp_path / "out.img")],
                      check=False)
    assert res.returncode == 1 and "mounted read-write" in res.stderr, \
        helpers.describe(res)


def test_same_file_refused(tmp_path, ext4_src):
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-F", "-d",
                       str(ext4_src), str(ext4_src)], check=False)
    assert res.returncode == 1 and "image to make" in res.stderr
    helpers.e2fsck_fn(ext4_src)


@pytest.mark.slow
def test_corrupted_sources_never_crash(tmp_path, ext4_src):
    """Bytes of the source's metadata changed at random (seeded): each
    build ends with exit 0 and an image stock e2fsck finds clean, or
    exit 1 and one line naming the source; never a crash.  (120 seeds
    pass under --enable-sanitizers too.)"""
    base = ext4_src.read_bytes()
    img, out = tmp_path / "t.img", tmp_path / "o.img"
    for seed in range(40):
        r = random.Random(seed)
        b = bytearray(base)
        for _ in range(r.choice([1, 4, 16, 64])):
            b[r.randrange(1024, 600 * 1024)] = r.randrange(256)
        img.write_bytes(b)
        if out.exists():
            out.unlink()
        res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d",
                           str(img), str(out)], check=False)
        assert res.returncode in (0, 1), (seed, helpers.describe(res))
        if res.returncode == 0:
            helpers.e2fsck_fn(out)
        else:
            assert res.stderr.startswith(f"mkfs.extref: {img}"), \
                (seed, res.stderr)
            assert len(res.stderr.strip().splitlines()) == 1, res.stderr
            assert not out.exists()
