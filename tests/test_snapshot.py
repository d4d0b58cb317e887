"""A recursive preserve-mode reflink is an exact snapshot.

The source tree is made by the kernel (a plain ext4 image mounted
read-write: files, hard links inside and outside the tree, fast and slow
symlinks, a FIFO, a device, a socket, user.*, trusted.* and security.*
attributes, inode flags, an external xattr block, a project id), then
the image becomes an extref image (mkfs.extref --convert) and
`reflink -r -p` copies the tree.  Through the kernel's read-only mount,
every inode of the copy is compared with its source: os.lstat with
nanosecond times, every extended attribute, link counts within the tree,
hard-link groups, contents; through stock debugfs: crtime with its extra
field, the inode flags a user sets, the project id.  Stock e2fsck -fn is
clean.
"""

import os
import re
import stat
import subprocess

import pytest

import helpers
from helpers import debugfs, e2fsck_fn, run

pytestmark = pytest.mark.skipif(helpers.loop_skip_reason() is not None,
                                reason=str(helpers.loop_skip_reason()))

# Flags describing an inode's layout, not a user's choice: extents,
# inline data, hashed directory, ea_inode, huge file.
LAYOUT_FLAGS = 0x80000 | 0x10000000 | 0x1000 | 0x200000 | 0x40000


def shell(img, *requests, check=True):
    """debugfs.extref -w IMG -R REQUEST, once a request."""
    for r in requests:
        res = run([helpers.binary("debugfs.extref"), "-w", str(img),
                   "-R", r], check=check)
    return res


def populate(root):
    """The source tree, made through the kernel."""
    t = root / "t"
    (t / "sub" / "deep").mkdir(parents=True)
    (t / "small").write_bytes(b"small\n")
    (t / "big").write_bytes(os.urandom(40000))
    (t / "sub" / "deep" / "f").write_bytes(os.urandom(9000))
    os.link(t / "big", t / "sub" / "big_link")        # inside the tree
    os.link(t / "small", root / "outside")           # outside it
    os.symlink("small", t / "fast")
    os.symlink("x" * 300, t / "slow")
    os.mkfifo(t / "fifo")
    os.mknod(t / "chr", 0o620 | stat.S_IFCHR, os.makedev(1, 3))
    os.link(t / "chr", t / "sub" / "chr2")           # a hard-linked device
    subprocess.run(["python3", "-c", "import socket; s = socket.socket("
                    "socket.AF_UNIX); s.bind('sock')"], cwd=t, check=True)
    os.setxattr(t / "sub", "user.colour", b"blue")
    os.setxattr(t / "sub", "trusted.t", b"\x00\x01binary")
    os.setxattr(t / "sub", "security.selinux",
                b"system_u:object_r:dir_t:s0\x00")
    os.setxattr(t / "slow", "security.selinux",
                b"system_u:object_r:lnk_t:s0\x00", follow_symlinks=False)
    os.setxattr(t / "fifo", "trusted.fifo", b"f")
    os.setxattr(t / "big", "user.data", b"d")
    os.setxattr(t / "small", "user.s", b"inline data and an xattr")
    os.setxattr(t / "small", "security.selinux", b"u:object_r:s_t:s0\x00")
    os.setxattr(t, "user.large", b"y" * 2500)        # an xattr block
    os.setxattr(t / "sub" / "deep", "user.large", b"z" * 2500)
    run(["chattr", "+A", str(t / "sub")])
    run(["chattr", "+d", str(t / "sub" / "deep")])
    run(["chattr", "+d", str(t / "big")])
    os.chmod(t / "sub", 0o1750)
    os.chmod(t / "small", 0o4755)
    os.chown(t / "fifo", 12, 34)
    os.lchown(t / "slow", 56, 78)
    os.utime(t / "big", ns=(1_000_000_123, 981_234_567_891))
    os.utime(t / "fast", ns=(2_000_000_321, 3_000_000_999),
             follow_symlinks=False)
    os.utime(t / "sub" / "deep", ns=(5, 6))


@pytest.fixture(params=["plain", "inline_data"])
def source_img(request, tmp_path):
    img = tmp_path / "src.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    feats = ["-O", "inline_data"] if request.param == "inline_data" else []
    run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-I", "256",
         *feats, str(img)])
    with helpers.loop_mount(img, tmp_path / "rw", options="rw"):
        populate(tmp_path / "rw")
    run(["debugfs", "-w", "-R", "set_inode_field /t/sub/deep projid 77",
         str(img)])
    run([helpers.binary("mkfs.extref"), "--convert", str(img)])
    e2fsck_fn(img)
    if request.param == "inline_data":     # the inline path is taken
        assert "Size of inline data" in debugfs(img, "stat /t/small").stdout
    return img


def tree(root):
    """Relative path -> os.lstat result, for root and everything under it."""
    out = {".": os.lstat(root)}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, root)] = os.lstat(p)
    return out


def xattrs(path):
    return {n: os.getxattr(path, n, follow_symlinks=False)
            for n in os.listxattr(path, follow_symlinks=False)}


def links_within(entries):
    """Inode -> names it has inside the tree (directories: 2 + subdirs)."""
    n = {}
    for rel, st in entries.items():
        if stat.S_ISDIR(st.st_mode):
            n[st.st_ino] = n.get(st.st_ino, 0) + 2
            if rel != ".":
                parent = entries[os.path.dirname(rel) or "."]
                n[parent.st_ino] = n.get(parent.st_ino, 0) + 1
        else:
            n[st.st_ino] = n.get(st.st_ino, 0) + 1
    return n


def groups(entries):
    """The hard-link groups, as sets of relative paths."""
    g = {}
    for rel, st in entries.items():
        g.setdefault(st.st_ino, set()).add(rel)
    return sorted(sorted(s) for s in g.values())


def debugfs_fields(img, path):
    """crtime (seconds:extra), user flags, project id by stock debugfs."""
    out = debugfs(img, f"stat {path}").stdout
    crtime = re.search(r"crtime: (0x[0-9a-f]+:[0-9a-f]+)", out).group(1)
    flags = int(re.search(r"Flags: (0x[0-9a-f]+)", out).group(1), 16)
    proj = int(re.search(r"Project:\s+(\d+)", out).group(1))
    return crtime, flags & ~LAYOUT_FLAGS, proj


def test_recursive_preserve_is_exact_snapshot(source_img, loop_mount):
    img = source_img
    res = shell(img, "reflink -r -p /t /snap")
    assert "linked directory tree" in res.stdout
    e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    src, dst = tree(mnt / "t"), tree(mnt / "snap")
    assert sorted(src) == sorted(dst)
    assert groups(src) == groups(dst)
    want_links = links_within(src)
    kinds = set()
    for rel, s in src.items():
        d = dst[rel]
        kinds.add(stat.S_IFMT(s.st_mode))
        for f in ("st_mode", "st_uid", "st_gid", "st_atime_ns",
                  "st_mtime_ns", "st_ctime_ns", "st_rdev"):
            assert getattr(s, f) == getattr(d, f), (rel, f)
        if not stat.S_ISDIR(s.st_mode):
            assert s.st_size == d.st_size, rel
        assert d.st_nlink == want_links[s.st_ino], rel
        assert xattrs(mnt / "t" / rel) == xattrs(mnt / "snap" / rel), rel
        if stat.S_ISREG(s.st_mode):
            assert (mnt / "t" / rel).read_bytes() == \
                (mnt / "snap" / rel).read_bytes(), rel
        if stat.S_ISLNK(s.st_mode):
            assert os.readlink(mnt / "t" / rel) == \
                os.readlink(mnt / "snap" / rel), rel
        sp = "/t" if rel == "." else "/t/" + rel
        dp = "/snap" if rel == "." else "/snap/" + rel
        assert debugfs_fields(img, sp) == debugfs_fields(img, dp), rel
    # every kind of inode was compared, the interesting fields were set
    assert kinds == {stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK, stat.S_IFIFO,
                     stat.S_IFCHR, stat.S_IFSOCK}
    assert src["small"].st_nlink == 2 and dst["small"].st_nlink == 1
    assert debugfs_fields(img, "/snap/sub/deep")[2] == 77
    assert src["sub/deep"].st_mtime_ns == 6
    assert "security.selinux" in xattrs(mnt / "snap" / "sub")


def test_preserve_refused_with_ea_inode_xattr(tmp_path, loop_mount):
    """A source (or a tree) with an attribute whose value lives in an
    inode of its own (ea_inode, made by the kernel) is refused in
    preserve mode, image unchanged; the rest of the image is not."""
    img = tmp_path / "ea.img"
    with open(img, "wb") as f:
        f.truncate(32 << 20)
    run(["mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096", "-O", "ea_inode",
         str(img)])
    with helpers.loop_mount(img, tmp_path / "rw", options="rw"):
        root = tmp_path / "rw"
        (root / "d").mkdir()
        (root / "d" / "big").write_bytes(b"big")
        (root / "f").write_bytes(b"f")
        os.setxattr(root / "d" / "big", "user.big", os.urandom(20000))
        os.setxattr(root / "f", "user.small", b"x")
    e2fsck_fn(img)
    # the value is in an inode of its own, flagged EXT4_EA_INODE_FL
    flags = [int(m, 16) for m in re.findall(
        r"Flags: (0x[0-9a-f]+)", debugfs(img, "stat <15>").stdout +
        debugfs(img, "stat <16>").stdout)]
    assert any(f & 0x200000 for f in flags), flags
    run([helpers.binary("mkfs.extref"), "--convert", str(img)])
    before = helpers.sha256(img)
    for req, path in (("reflink -p /d/big /g", "/d/big"),
                      ("reflink -r -p /d /g", "/d")):
        res = shell(img, req, check=False)
        assert res.returncode != 0
        assert "ea_inode" in res.stderr and path in res.stderr
        assert helpers.sha256(img) == before
    shell(img, "reflink /d/big /g")     # copy mode drops xattrs: allowed
    shell(img, "reflink -p /f /h")      # no ea_inode attribute: allowed
    e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    assert os.getxattr(mnt / "h", "user.small") == b"x"
    assert os.listxattr(mnt / "g") == []
