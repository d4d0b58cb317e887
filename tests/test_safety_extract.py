"""Copying out of someone else's image: rdump and dump are as safe as stock
debugfs's by default, and faithful only when asked.

    /usr/bin/python3 -m pytest tests/test_safety_extract.py

The image is made by mkfs.extref -d from a host tree (the oracle for the
faithful copy): a set-user-ID root file, a set-group-ID directory, block
and character devices, a FIFO, a file with a file capability
(security.capability, read back with getcap), trusted.* and user.*
attributes, symlinks to host paths; then its directory entries are
edited in place (checksums recomputed, as an attacker would) to hold a
name that climbs out ("../../escape"), a second ".." and a second entry
"dup" beside a symlink "dup" to a host directory.  It is extracted as
root and as nobody, and the host tree inspected after.
"""

import os
import re
import shutil
import stat as st
import struct
import subprocess
import tempfile

import pytest

import helpers as H
from crc32c import crc32c_le

SHELL = "debugfs.extref"
NOBODY = 65534


def shell(img, request, user=None, check=None):
    def drop():
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    res = subprocess.run([H.binary(SHELL), "-R", request, str(img)],
                         capture_output=True, text=True, timeout=60,
                         preexec_fn=drop if user == "nobody" else None)
    if check is not None:
        assert res.returncode == check, H.describe(res)
    return res


def stock_stat(img, path):
    return H.run(["debugfs", "-R", f"stat {path}", str(img)]).stdout


def rename_entry(img, dirpath, old, new):
    """Rename one entry of dirpath in place, same length, and recompute the
    block's checksum (metadata_csum) as the kernel would."""
    assert len(old) == len(new)
    out = stock_stat(img, dirpath)
    ino = int(re.match(r"Inode: (\d+)", out).group(1))
    gen = int(re.search(r"Generation: (\d+)", out).group(1))
    bs = int(H.dumpe2fs_header(img)["Block size"])
    seed = H.csum_seed(img)
    blocks = H.run(["debugfs", "-R", f"blocks {dirpath}",
                    str(img)]).stdout.split()
    with open(img, "r+b") as f:
        for b in map(int, blocks):
            f.seek(b * bs)
            blk = bytearray(f.read(bs))
            off = 0
            while off < bs - 12:
                dino, rec, nlen = struct.unpack_from("<IHB", blk, off)
                if blk[off + 8:off + 8 + nlen] == old and dino:
                    blk[off + 8:off + 8 + nlen] = new
                    tail = struct.unpack_from("<IHBB", blk, bs - 12)
                    assert tail == (0, 12, 0, 0xDE), "no checksum tail"
                    c = crc32c_le(seed, struct.pack("<I", ino))
                    c = crc32c_le(c, struct.pack("<I", gen))
                    c = crc32c_le(c, blk[:bs - 12])
                    struct.pack_into("<I", blk, bs - 4, c)
                    f.seek(b * bs)
                    f.write(blk)
                    return
                off += rec
    raise AssertionError(f"{old!r} not found in {dirpath}")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """(image, source tree, victim dir): the image readable by nobody."""
    top = tempfile.mkdtemp(prefix="extref-extract-")
    os.chmod(top, 0o755)
    src = os.path.join(top, "src")
    victim = os.path.join(top, "victim")
    os.makedirs(os.path.join(src, "bin"))
    os.makedirs(os.path.join(src, "dev"))
    os.makedirs(os.path.join(src, "d", "dvp"))
    os.makedirs(os.path.join(src, "d", "bb"))
    os.mkdir(victim)
    suid = os.path.join(src, "suid")
    with open(suid, "w") as f:
        f.write("#!/bin/sh\nid\n")
    os.chmod(suid, 0o6755)
    cap = os.path.join(src, "bin", "cap")
    shutil.copyfile(suid, cap)
    os.chmod(cap, 0o755)
    os.chown(cap, 1000, 1000)
    H.run(["setcap", "cap_setuid=ep", cap])
    os.setxattr(cap, "user.note", b"hi")
    os.setxattr(cap, "trusted.t", b"x")
    sgid = os.path.join(src, "sgid")
    os.mkdir(sgid)
    os.chmod(sgid, 0o2775)
    sda = os.path.join(src, "dev", "sda")
    os.mknod(sda, 0o666 | st.S_IFBLK, os.makedev(8, 0))
    os.chmod(sda, 0o666)
    os.chown(sda, 1000, 1000)
    os.mknod(os.path.join(src, "dev", "null2"), 0o666 | st.S_IFCHR,
             os.makedev(1, 3))
    os.mkfifo(os.path.join(src, "fifo"))
    os.symlink("/etc", os.path.join(src, "etc"))
    os.symlink("/etc/passwd", os.path.join(src, "pw"))
    with open(os.path.join(src, "d", "aaaaaaaaaaaa"), "w") as f:
        f.write("climber\n")
    with open(os.path.join(src, "d", "dvp", "x"), "w") as f:
        f.write("through the symlink\n")
    with open(os.path.join(src, "d", "bb", "cc"), "w") as f:
        f.write("dotdot\n")
    os.symlink(victim, os.path.join(src, "d", "dup"))
    img = os.path.join(top, "img")
    H.mkfs(img, "8M", "-q", "-d", src)
    H.e2fsck_fn(img)
    rename_entry(img, "/d", b"aaaaaaaaaaaa", b"../../escape")
    rename_entry(img, "/d", b"dvp", b"dup")
    rename_entry(img, "/d", b"bb", b"..")
    os.chmod(img, 0o644)
    yield img, src, victim
    shutil.rmtree(top)


def out_dir(owner=0):
    """A fresh extraction directory two levels down (so "../../escape"
    would land in its parent's parent), owned by owner."""
    top = tempfile.mkdtemp(prefix="extref-out-")
    os.chmod(top, 0o755)
    out = os.path.join(top, "a", "out")
    os.makedirs(out)
    os.chmod(os.path.join(top, "a"), 0o755)
    os.chown(out, owner, owner)
    return top, out


@pytest.fixture
def out_root():
    top, out = out_dir()
    yield top, out
    shutil.rmtree(top)


@pytest.fixture
def out_nobody():
    top, out = out_dir(NOBODY)
    yield top, out
    shutil.rmtree(top)


def walk(out):
    """Every path under out, not following symlinks."""
    for root, dirs, files in os.walk(out):
        for n in dirs + files:
            yield os.path.join(root, n)


def assert_contained(top, out, victim):
    """Nothing outside out: the parents hold only the path to out, the
    victim directory (a symlink's target) stays empty."""
    assert os.listdir(top) == ["a"]
    assert os.listdir(os.path.join(top, "a")) == ["out"]
    assert os.listdir(victim) == []
    assert not os.path.exists("/etc/escape")


def getcap(path):
    return H.run(["getcap", path]).stdout


def assert_safe(out, owner, res):
    for p in walk(out):
        s = os.lstat(p)
        assert not s.st_mode & (st.S_ISUID | st.S_ISGID), p
        assert st.S_ISREG(s.st_mode) or st.S_ISDIR(s.st_mode) or \
            st.S_ISLNK(s.st_mode), p
        assert s.st_uid == owner, p
    assert not os.path.lexists(os.path.join(out, "dev", "sda"))
    assert not os.path.lexists(os.path.join(out, "fifo"))
    assert st.S_IMODE(os.stat(os.path.join(out, "suid")).st_mode) == 0o755
    assert st.S_IMODE(os.stat(os.path.join(out, "sgid")).st_mode) == 0o775
    cap = os.path.join(out, "bin", "cap")
    assert getcap(cap) == ""
    assert os.listxattr(cap) == ["user.note"]
    assert os.getxattr(cap, "user.note") == b"hi"
    assert os.readlink(os.path.join(out, "etc")) == "/etc"
    assert os.readlink(os.path.join(out, "pw")) == "/etc/passwd"
    assert "3 device(s), FIFO(s) or socket(s) skipped (--devices" \
        in res.stderr
    assert res.stderr.count("skipped (--devices") == 1
    assert "2 set-user-ID or set-group-ID bit(s) not kept" in res.stderr
    # security.capability and trusted.t
    assert "2 extended attribute(s) outside user.* not copied" in res.stderr
    # the hostile names: reported, skipped, the command fails
    assert "a name holding '/'" in res.stderr
    assert res.returncode == 1


def test_rdump_default_as_root_is_safe(hostile, out_root):
    img, src, victim = hostile
    top, out = out_root
    res = shell(img, f"rdump / {out}")
    assert_safe(out, 0, res)
    assert_contained(top, out, victim)
    assert "setting the owner" not in res.stderr
    with open(os.path.join(out, "suid")) as f:
        assert f.read() == "#!/bin/sh\nid\n"


def test_rdump_default_as_nobody_is_safe(hostile, out_nobody):
    img, src, victim = hostile
    top, out = out_nobody
    res = shell(img, f"rdump / {out}", user="nobody")
    assert_safe(out, NOBODY, res)
    assert_contained(top, out, victim)
    # no ownership change attempted, so no refusal to warn about
    assert "setting the owner" not in res.stderr


def test_rdump_faithful_as_root(hostile, out_root):
    """-p --same-permissions --xattrs --devices: the tree mkfs -d read,
    owner, mode, device numbers and attributes, as the host has them."""
    img, src, victim = hostile
    top, out = out_root
    res = shell(img, "rdump -p --same-permissions --xattrs --devices "
                f"/bin /dev /sgid /suid /fifo {out}", check=0)
    assert "not kept" not in res.stderr and "skipped" not in res.stderr
    for rel in ("bin", "bin/cap", "dev", "dev/sda", "dev/null2", "sgid",
                "suid", "fifo"):
        a = os.lstat(os.path.join(src, rel))
        b = os.lstat(os.path.join(out, rel))
        assert (b.st_mode, b.st_uid, b.st_gid, b.st_rdev) == \
            (a.st_mode, a.st_uid, a.st_gid, a.st_rdev), rel
    assert stat_str(os.path.join(out, "dev", "sda")) == "brw-rw-rw- 1000 8:0"
    assert "cap_setuid=ep" in getcap(os.path.join(out, "bin", "cap"))
    cap = os.path.join(out, "bin", "cap")
    assert sorted(os.listxattr(cap)) == ["security.capability",
                                         "trusted.t", "user.note"]
    assert os.getxattr(cap, "security.capability") == \
        os.getxattr(os.path.join(src, "bin", "cap"), "security.capability")


def stat_str(path):
    s = os.lstat(path)
    return (f"{st.filemode(s.st_mode)} {s.st_uid} "
            f"{os.major(s.st_rdev)}:{os.minor(s.st_rdev)}")


def test_rdump_devices_as_nobody_refused_by_host(hostile, out_nobody):
    """--devices as nobody: the host refuses mknod, a warning, no node."""
    img, src, victim = hostile
    top, out = out_nobody
    res = shell(img, f"rdump --devices /dev /fifo {out}", user="nobody",
                check=0)
    assert "sda: making the special file (skipped)" in res.stderr
    assert os.listdir(os.path.join(out, "dev")) == []
    assert st.S_ISFIFO(os.lstat(os.path.join(out, "fifo")).st_mode)


def test_dump_p_keeps_no_setid_unless_asked(hostile, out_root):
    img, src, victim = hostile
    top, out = out_root
    plain = os.path.join(out, "plain")
    res = shell(img, f"dump -p /suid {plain}", check=0)
    assert st.S_IMODE(os.stat(plain).st_mode) == 0o755
    assert "1 set-user-ID or set-group-ID bit(s) not kept" in res.stderr
    same = os.path.join(out, "same")
    shell(img, f"dump -p --same-permissions /suid {same}", check=0)
    assert st.S_IMODE(os.stat(same).st_mode) == 0o6755
    cap = os.path.join(out, "cap")
    shell(img, f"dump /bin/cap {cap}", check=0)
    assert getcap(cap) == "" and os.listxattr(cap) == []
    cap2 = os.path.join(out, "cap2")
    shell(img, f"dump -p --xattrs /bin/cap {cap2}", check=0)
    assert "cap_setuid=ep" in getcap(cap2)
    assert os.stat(cap2).st_uid == 1000


def test_unknown_long_option_refused(hostile, out_root):
    img, src, victim = hostile
    top, out = out_root
    res = shell(img, f"rdump --same-perms / {out}", check=1)
    assert "unknown option --same-perms; usage: rdump [-p]" in res.stderr
    assert os.listdir(out) == []
