"""extref-fuse, the writable FUSE mount (issue 31): what is made through
it is judged after the unmount by tools nobody here wrote (stock e2fsck
-fn, stock debugfs, a read-only kernel loop mount), and by fsck.extref.

Every mount is `extref-fuse IMAGE MNT -f` in a subprocess; the fixture
always unmounts (fusermount3 -u, then kill) and reaps it, even when the
test failed.
"""

import ctypes
import errno
import os
import re
import stat
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

import crashlib
import helpers

DOC_PACKAGES = ["coreutils", "tar", "e2fsprogs"]


def fuse_skip_reason():
    if os.geteuid() != 0:
        return "needs root (FUSE mounts, chown)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not shutil.which("fusermount3"):
        return "no fusermount3 (install fuse3: scripts/install-deps)"
    return None


pytestmark = pytest.mark.skipif(fuse_skip_reason() is not None,
                                reason=str(fuse_skip_reason()))


def server():
    return helpers.binary("fuse/extref-fuse")


def mounted(mnt):
    entry = helpers.mount_entry(mnt)
    return entry is not None and entry[2].startswith("fuse")


def stop(mnt, proc, timeout=20):
    """fusermount3 -u, the server's exit awaited (the image closed); kill
    -9 when it will not go; a mount whose server is dead detached
    lazily.  Returns the server's exit status."""
    for _ in range(50):
        if not mounted(mnt):
            break
        if subprocess.run(["fusermount3", "-u", str(mnt)],
                          capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
    finally:
        if mounted(mnt):
            subprocess.run(["fusermount3", "-uz", str(mnt)],
                           capture_output=True)


@pytest.fixture
def fuse(tmp_path):
    """Factory: fuse(img, *options) -> (mnt, proc), mounted; fuse.stop(mnt)
    unmounts one and returns the server's exit status.  The mountpoints
    are in fuse.base, a directory every user may enter (for the tests
    of other users), removed at the end."""
    live = {}
    count = [0]
    base = Path(tempfile.mkdtemp(prefix="extref-fuse-"))
    os.chmod(base, 0o755)

    def start(img, *opts, expect=True):
        count[0] += 1
        mnt = base / f"fuse{count[0]}"
        mnt.mkdir()
        log = open(tmp_path / f"fuse{count[0]}.log", "w+")
        proc = subprocess.Popen([server(), str(img), str(mnt), "-f", *opts],
                                stdout=log, stderr=subprocess.STDOUT)
        live[mnt] = proc
        for _ in range(200):
            if mounted(mnt) or proc.poll() is not None:
                break
            time.sleep(0.05)
        if expect:
            log.seek(0)
            assert mounted(mnt), f"not mounted: {log.read()}"
        return mnt, proc

    def do_stop(mnt):
        return stop(mnt, live.pop(mnt))

    start.stop = do_stop
    start.base = base
    try:
        yield start
    finally:
        for mnt, proc in live.items():
            stop(mnt, proc)
        if not any(mounted(m) for m in base.iterdir()):
            shutil.rmtree(base)


def make_image(tmp_path, size="64M"):
    img = tmp_path / "f.img"
    helpers.mkfs(img, size, "-q")
    return img


def clean(img):
    """Both checkers clean: stock e2fsck -fn and fsck.extref -n."""
    helpers.e2fsck_fn(img)
    assert crashlib.checkers_clean(img, stock=False) == []


def source_tree(tmp_path):
    """A tar of real files (documentation packages: files, compressed
    changelogs, their symlinks) with nested directories, symlinks (to
    files, to directories, dangling, long), extended attributes, odd
    modes, POSIX ACLs (a default one too), a file capability, an empty
    file and files of a few blocks; and the tree itself
    as tar extracts it on the host (the comparison's source)."""
    extra = tmp_path / "extra"
    (extra / "a/b/c/d").mkdir(parents=True)
    (extra / "a/b/c/d/deep").write_bytes(os.urandom(70000))
    (extra / "empty").write_bytes(b"")
    (extra / "blocks").write_bytes(os.urandom(3 * 4096 + 17))
    (extra / "setuid").write_bytes(b"#!/bin/sh\n")
    os.chmod(extra / "setuid", 0o4755)
    os.chmod(extra / "a/b", 0o750)
    os.symlink("a/b/c/d/deep", extra / "to_file")
    os.symlink("a/b", extra / "to_dir")
    os.symlink("nowhere", extra / "dangling")
    os.symlink("x" * 200, extra / "long_link")
    os.link(extra / "blocks", extra / "a/hardlink")
    os.mkfifo(extra / "fifo", 0o640)
    os.mknod(extra / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(extra / "disk", 0o660 | stat.S_IFBLK, os.makedev(259, 70000))
    os.setxattr(extra / "blocks", "user.comment", b"shared blocks")
    os.setxattr(extra / "a/b/c", "user.big", os.urandom(300))
    os.chown(extra / "empty", 1234, 5678)
    helpers.run(["setfacl", "-m", "u:1234:rw,g:55:r", str(extra / "blocks")])
    helpers.run(["setfacl", "-d", "-m", "g:55:rx", str(extra / "a/b/c")])
    # security.capability, as setcap writes it (v2: 20 bytes)
    os.setxattr(extra / "setuid", "security.capability",
                bytes.fromhex("01000002" "00200000" "00000000"
                              "00000000" "00000000"))
    tar = tmp_path / "src.tar"
    with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as t:
        for p in DOC_PACKAGES:
            if os.path.isdir(f"/usr/share/doc/{p}"):
                t.add(f"/usr/share/doc/{p}", arcname=f"doc/{p}")
    helpers.run(["tar", "-C", str(extra), "-rf", str(tar), "--xattrs",
                 "--xattrs-include=*", "--acls", "."])
    src = tmp_path / "src"
    src.mkdir()
    extract(tar, src)
    return tar, src


def extract(tar, dest):
    helpers.run(["tar", "-C", str(dest), "-xpf", str(tar), "--xattrs",
                 "--xattrs-include=*", "--acls", "--same-owner"])


def test_tar_through_the_mount_equals_the_source(tmp_path, fuse,
                                                 loop_mount):
    tar, src = source_tree(tmp_path)
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    extract(tar, mnt)
    # what the mount itself shows, before the unmount: modes, owners,
    # hard-link groups, devices, modification times to the nanosecond
    want = tree_with_times(src)
    assert tree_with_times(mnt) == want
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert len(want) > 30, sorted(want)
    assert want["a/hardlink"]["links"] == 2
    assert stat.S_ISFIFO(want["fifo"]["mode"])
    assert want["disk"]["rdev"] == os.makedev(259, 70000)
    assert tree_with_times(ro) == want


def tree_with_times(root):
    """host_tree with modification times, but for doc/, which the archive
    does not hold (tar makes it when it extracts, with the time then)."""
    tree = helpers.host_tree(root, times=("mtime",))
    tree["doc"].pop("mtime")
    return tree


def blocks(img, path):
    """The file's data blocks, by stock debugfs."""
    out = helpers.debugfs(img, f"blocks {path}").stdout.split()
    return [int(b) for b in out]


def test_cp_makes_reflinks_and_writes_are_cow(tmp_path, fuse, loop_mount):
    img = make_image(tmp_path)
    data = bytearray(os.urandom(4 * 1024 * 1024 + 1000))
    mnt, _ = fuse(img)
    (mnt / "big").write_bytes(data)
    helpers.run(["cp", str(mnt / "big"), str(mnt / "copy")])
    assert (mnt / "copy").read_bytes() == data
    assert fuse.stop(mnt) == 0
    clean(img)
    a, b = blocks(img, "/big"), blocks(img, "/copy")
    assert len(a) == len(b) and len(a) > 1000
    shared = set(a) & set(b)
    # every whole block is cloned; the 1000-byte tail is copied
    assert len(shared) == len(a) - 1, (len(shared), len(a))

    # write into the copy, then into the original: the other stays
    copy = bytearray(data)
    mnt, _ = fuse(img)
    with open(mnt / "copy", "r+b") as f:
        f.seek(5000)
        f.write(b"C" * 100000)
        os.fsync(f.fileno())
    copy[5000:105000] = b"C" * 100000
    with open(mnt / "big", "r+b") as f:
        f.seek(2 * 1024 * 1024)
        f.write(b"O" * 8192)
    data[2 * 1024 * 1024:2 * 1024 * 1024 + 8192] = b"O" * 8192
    assert (mnt / "big").read_bytes() == data
    assert (mnt / "copy").read_bytes() == copy
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert (ro / "big").read_bytes() == data
    assert (ro / "copy").read_bytes() == copy


# (src offset, dst offset, length) of copy_file_range: the whole file,
# offsets alike within a block (head copied, blocks cloned, tail
# copied), offsets unlike (all copied), past the destination's EOF, and
# past the source's EOF (short)
COPIES = [(0, 0, 1 << 20), (100, 100, 300000), (100, 2148, 300000),
          (8192, 3 << 20, 65536), (900000, 50, 500000)]


def copy_ranges(d):
    """The COPIES from d/src into d/dst (made with 2 MiB of its own):
    what each call returned."""
    got = []
    with open(d / "src", "rb") as s, open(d / "dst", "r+b") as t:
        for soff, doff, n in COPIES:
            got.append(os.copy_file_range(s.fileno(), t.fileno(), n,
                                          soff, doff))
    return got


def test_copy_file_range_as_the_kernel_copies(tmp_path, fuse, loop_mount):
    """copy_file_range through the mount returns and leaves what the
    host's kernel does with the same calls, and shares the blocks it
    could clone (stock debugfs: the same physical blocks)."""
    src, dst = os.urandom(1 << 20), os.urandom(2 << 20)
    host = tmp_path / "host"
    host.mkdir()
    (host / "src").write_bytes(src)
    (host / "dst").write_bytes(dst)
    want = copy_ranges(host)
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    (mnt / "src").write_bytes(src)
    (mnt / "dst").write_bytes(dst)
    assert copy_ranges(mnt) == want
    assert (mnt / "dst").read_bytes() == (host / "dst").read_bytes()
    assert fuse.stop(mnt) == 0
    clean(img)
    shared = set(blocks(img, "/src")) & set(blocks(img, "/dst"))
    bs = int(helpers.dumpe2fs_header(img)["Block size"])
    # the first copy clones all of src; later copies over it replace some
    assert len(shared) > (1 << 20) // bs // 2, len(shared)
    ro, _ = loop_mount(img)
    assert (ro / "dst").read_bytes() == (host / "dst").read_bytes()


def test_unlink_rmdir_and_refused_requests(tmp_path, fuse, loop_mount):
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    (mnt / "d/e").mkdir(parents=True)
    (mnt / "d/e/f").write_bytes(os.urandom(50000))
    helpers.run(["cp", str(mnt / "d/e/f"), str(mnt / "g")])
    with pytest.raises(OSError) as e:
        os.rmdir(mnt / "d/e")
    assert e.value.errno == errno.ENOTEMPTY
    os.unlink(mnt / "d/e/f")
    os.rmdir(mnt / "d/e")
    with pytest.raises(FileNotFoundError):
        os.stat(mnt / "d/e")
    with pytest.raises(OSError) as e:
        os.mkdir(mnt / "d")
    assert e.value.errno == errno.EEXIST
    os.truncate(mnt / "g", 1000)
    os.chmod(mnt / "g", 0o600)
    os.chown(mnt / "g", 42, 43)
    st = os.stat(mnt / "g")
    assert (st.st_size, st.st_mode & 0o7777, st.st_uid, st.st_gid) == \
        (1000, 0o600, 42, 43)
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert sorted(os.listdir(ro)) == ["d", "g", "lost+found"]
    assert os.listdir(ro / "d") == []
    st = os.stat(ro / "g")
    assert (st.st_size, st.st_mode & 0o7777, st.st_uid, st.st_gid) == \
        (1000, 0o600, 42, 43)


def free_blocks(img):
    """The image's free blocks, as stock dumpe2fs reads them."""
    return int(helpers.dumpe2fs_header(img)["Free blocks"])


def sibling_and_victim(tmp_path, fuse):
    """An image with file a (1 MiB) and its free count, then mounted with
    b a cp of a (reflinked) opened read-write and unlinked: (img, mnt,
    proc, fd, data of a, data b now holds, b's inode, free count)."""
    img = make_image(tmp_path)
    data = os.urandom(1 << 20)
    mnt, _ = fuse(img)
    (mnt / "a").write_bytes(data)
    assert fuse.stop(mnt) == 0
    free0 = free_blocks(img)
    mnt, proc = fuse(img)
    helpers.run(["cp", str(mnt / "a"), str(mnt / "b")])
    fd = os.open(mnt / "b", os.O_RDWR)
    ino = os.fstat(fd).st_ino
    os.unlink(mnt / "b")
    assert not (mnt / "b").exists()
    # the descriptor keeps reading and writing the kept inode: a
    # copy-on-write of shared blocks, and an extension
    bdata = bytearray(data)
    os.pwrite(fd, b"w" * 10000, 4096)
    bdata[4096:14096] = b"w" * 10000
    os.pwrite(fd, b"e" * 8192, len(data))
    bdata += b"e" * 8192
    assert os.pread(fd, len(bdata) + 10, 0) == bytes(bdata)
    # (fstat would answer ESTALE: libfuse's high-level API names an
    # inode by path, and the kernel sends a stat without the handle)
    os.ftruncate(fd, len(bdata) + 100)
    bdata += bytes(100)
    assert os.pread(fd, len(bdata) + 10, 0) == bytes(bdata)
    # a new file never gets the kept inode's number
    (mnt / "next").write_bytes(b"n" * 3000)
    assert os.stat(mnt / "next").st_ino != ino
    os.unlink(mnt / "next")
    return img, mnt, proc, fd, data, bytes(bdata), ino, free0


def test_unlinked_open_file_is_kept_until_close(tmp_path, fuse):
    """A file unlinked while open is kept (ext4's orphan list) and its
    descriptor reads and writes it; its last close frees it through the
    counts: the reflinked sibling keeps its data, the free count is the
    one before the copy (stock dumpe2fs), both checkers clean."""
    img, mnt, _, fd, data, bdata, _, free0 = sibling_and_victim(tmp_path,
                                                                fuse)
    before = os.statvfs(mnt).f_bfree
    os.close(fd)
    # released at the close, not at unmount: the blocks b had of its
    # own (the copied-on-write range, the extension) are free again
    for _ in range(50):
        if os.statvfs(mnt).f_bfree > before:
            break
        time.sleep(0.1)
    assert os.statvfs(mnt).f_bfree > before
    assert (mnt / "a").read_bytes() == data
    assert fuse.stop(mnt) == 0
    clean(img)
    assert free_blocks(img) == free0
    assert helpers.dumpe2fs_header(img).get("First orphan inode") is None
    assert helpers.debugfs_cat(img, "/a") == data


def test_file_renamed_over_while_open_is_kept(tmp_path, fuse):
    """rename over a file still open keeps it (EXTREF_RENAME_KEEP): the
    descriptor reads the old data, writes it, and its close frees it
    (the free count back to the one before it was written, stock
    dumpe2fs; both checkers clean)."""
    img = make_image(tmp_path)
    new = os.urandom(200000)
    mnt, _ = fuse(img)
    (mnt / "new").write_bytes(new)
    assert fuse.stop(mnt) == 0
    free0 = free_blocks(img)
    mnt, _ = fuse(img)
    old = os.urandom(300000)
    (mnt / "old").write_bytes(old)
    fd = os.open(mnt / "old", os.O_RDWR)
    os.rename(mnt / "new", mnt / "old")
    assert (mnt / "old").read_bytes() == new
    assert os.pread(fd, len(old) + 1, 0) == old
    os.pwrite(fd, b"k" * 5000, 100)
    assert os.pread(fd, 5000, 100) == b"k" * 5000
    os.close(fd)
    assert fuse.stop(mnt) == 0
    clean(img)
    assert free_blocks(img) == free0
    assert helpers.debugfs_cat(img, "/old") == new


@pytest.mark.parametrize("recover", ["fsck", "mount"])
def test_kill_with_an_unlinked_open_file(tmp_path, fuse, recover):
    """kill -9 of the server while an unlinked file sharing blocks with
    another is open leaves it on the orphan list (stock dumpe2fs after a
    stock replay of the journal on a copy); fsck.extref -p, or the next
    mount, releases it through the counts: both checkers clean, the
    sibling intact, the free count the one before the copy.  Stock
    e2fsck -fy on a copy instead frees the orphan's blocks in the bitmap,
    the shared ones too (its pass 5 has to mark a's back in use): what
    releasing the list first through the counts prevents."""
    img, mnt, proc, fd, data, _, ino, free0 = sibling_and_victim(tmp_path,
                                                                 fuse)
    os.fsync(fd)	# the requests so far committed (the mount batches)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    try:
        os.close(fd)
    except OSError:
        pass
    fuse.stop(mnt)
    stock = tmp_path / "stock.img"
    shutil.copyfile(img, stock)
    res = crashlib.e2fsck(stock, "-fy")
    assert res.returncode in (1, 2, 4), helpers.describe(res)
    assert f"Clearing orphaned inode {ino} " in res.stdout, res.stdout
    a_blocks = {int(b) for b in
                helpers.debugfs(stock, "blocks /a").stdout.split()}
    # pass 5 marks back in use the blocks the orphan's release freed
    # that a still maps: the shared ones
    diff = re.search(r"Block bitmap differences:(.*)", res.stdout)
    marked = set()
    for lo, hi in re.findall(r"\+\(?(\d+)(?:--(\d+))?\)?",
                             diff.group(1) if diff else ""):
        marked |= set(range(int(lo), int(hi or lo) + 1))
    assert a_blocks & marked, res.stdout
    if recover == "fsck":
        res = crashlib.fsck_run(img, "-p")
        assert res.returncode in (0, 1), helpers.describe(res)
        assert "orphan inodes" in res.stdout, helpers.describe(res)
    else:
        mnt, _ = fuse(img)
        assert (mnt / "a").read_bytes() == data
        assert fuse.stop(mnt) == 0
    clean(img)
    assert helpers.dumpe2fs_header(img).get("First orphan inode") is None
    assert free_blocks(img) == free0
    assert helpers.debugfs_cat(img, "/a") == data
    assert "not in use" in helpers.debugfs(img, f"testi <{ino}>").stdout


def test_full_image_and_long_names(tmp_path, fuse, loop_mount):
    """ENOSPC leaves what was written, and a copy-on-write overwrite of a
    shared block on a full image fails with the block and both files as
    they were; a name longer than 255 bytes is ENAMETOOLONG."""
    img = make_image(tmp_path, "16M")
    mnt, _ = fuse(img)
    with pytest.raises(OSError) as e:
        (mnt / ("x" * 256)).write_bytes(b"")
    assert e.value.errno == errno.ENAMETOOLONG
    (mnt / ("y" * 255)).write_bytes(b"long")
    data = os.urandom(4 << 20)
    (mnt / "a").write_bytes(data)
    helpers.run(["cp", str(mnt / "a"), str(mnt / "b")])
    written = 0
    with open(mnt / "fill", "wb", buffering=0) as f:
        with pytest.raises(OSError) as e:
            while True:
                written += f.write(os.urandom(1 << 20))
    assert e.value.errno == errno.ENOSPC and written > (4 << 20)
    fill = (mnt / "fill").read_bytes()
    fd = os.open(mnt / "b", os.O_WRONLY)
    with pytest.raises(OSError) as e:
        for i in range(0, 4 << 20, 64 << 10):   # every block shared
            os.pwrite(fd, b"z" * (64 << 10), i)
    os.close(fd)
    assert e.value.errno == errno.ENOSPC
    b = (mnt / "b").read_bytes()
    assert (mnt / "a").read_bytes() == data
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert (ro / "a").read_bytes() == data
    assert (ro / "b").read_bytes() == b
    assert (ro / "fill").read_bytes() == fill
    assert (ro / ("y" * 255)).read_bytes() == b"long"


def test_read_only_and_one_mount_at_a_time(tmp_path, fuse):
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    (mnt / "a").write_bytes(b"hello")
    # a second mount of the same image is refused, the first untouched
    other, proc = fuse(img, expect=False)
    assert proc.wait(timeout=20) != 0
    assert not mounted(other)
    assert (mnt / "a").read_bytes() == b"hello"
    assert fuse.stop(mnt) == 0
    before = helpers.sha256(img)

    mnt, _ = fuse(img, "-o", "ro")
    assert (mnt / "a").read_bytes() == b"hello"
    for act in (lambda: open(mnt / "a", "r+b"),
                lambda: (mnt / "b").write_bytes(b"x"),
                lambda: os.mkdir(mnt / "c"),
                lambda: os.unlink(mnt / "a")):
        with pytest.raises(OSError) as e:
            act()
        assert e.value.errno == errno.EROFS
    assert fuse.stop(mnt) == 0
    assert helpers.sha256(img) == before
    clean(img)


@pytest.mark.parametrize("after,recover", [(0.3, "fsck"), (1.5, "fsck"),
                                           (1.0, "mount")])
def test_kill_during_writes_then_recover(tmp_path, fuse, after, recover):
    """kill -9 of the server while files are written, copied and
    removed: fsck.extref -p, or the next mount (whose open replays the
    journal), leaves the image clean for both checkers, with what was
    fsynced before."""
    img = make_image(tmp_path)
    mnt, proc = fuse(img)
    durable = os.urandom(300000)
    with open(mnt / "durable", "wb") as f:
        f.write(durable)
        os.fsync(f.fileno())
    writer = subprocess.Popen(
        ["sh", "-c", f"cd {mnt} && i=0; while [ $i -lt 400 ]; do "
         "head -c 150000 /dev/urandom > f$i && cp f$i c$i && "
         "rm -f f$((i-3)); i=$((i+1)); done"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(after)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    writer.wait(timeout=30)
    fuse.stop(mnt)
    # killed with committed transactions left in the journal
    assert crashlib.needs_recovery(img)
    if recover == "fsck":
        res = crashlib.fsck_run(img, "-p")
        assert res.returncode in (0, 1), helpers.describe(res)
    else:
        mnt, _ = fuse(img)
        assert (mnt / "durable").read_bytes() == durable
        assert fuse.stop(mnt) == 0
    clean(img)
    assert helpers.debugfs_cat(img, "/durable") == durable


def as_nobody(script):
    """sh -c script as uid and gid 65534, no other group."""
    return helpers.run(["setpriv", "--reuid=65534", "--regid=65534",
                        "--clear-groups", "sh", "-c", script], check=False)


def test_other_users_are_checked_as_the_kernel_would(tmp_path, fuse,
                                                     loop_mount):
    """-o allow_other without default_permissions: the library checks
    each request for the process behind it (ctx.c's identity), and what
    it makes is that user's; the same requests on the host's own
    filesystem (under /tmp) give the same answers."""
    script = ("cd {d}; "
              "echo x > rootdir/f 2>/dev/null; echo $?; "
              "echo y > pub/mine; echo $?; "
              "mkdir pub/dir; echo $?; "
              "chmod 700 pub/dir; echo $?; "
              "chown 0 pub/mine 2>/dev/null; echo $?; "
              "rm -f rootfile 2>/dev/null; echo $?; "
              "cat secret 2>/dev/null; echo $?; "
              "getfattr -n user.k rootfile >/dev/null 2>&1; echo $?; "
              "getfattr -n user.k secret >/dev/null 2>&1; echo $?; "
              "(umask 222; echo z > pub/ro); echo $?; "
              "echo w 2>/dev/null >> pub/ro; echo $?; "
              "test -w rootdir; echo $?; test -r secret; echo $?; "
              "test -x pub; echo $?; "
              "stat -c '%u:%g %a' pub/mine pub/dir pub/ro; cat pub/ro")

    def setup(d):
        (d / "rootdir").mkdir(mode=0o755)
        (d / "pub").mkdir()
        os.chmod(d / "pub", 0o1777)
        (d / "rootfile").write_bytes(b"r")
        os.setxattr(d / "rootfile", "user.k", b"v")
        (d / "secret").write_bytes(b"s")
        os.setxattr(d / "secret", "user.k", b"v")
        os.chmod(d / "secret", 0o600)

    ref = fuse.base / "ref"
    ref.mkdir()
    os.chmod(ref, 0o755)
    setup(ref)
    want = as_nobody(script.format(d=ref)).stdout
    img = make_image(tmp_path)
    mnt, _ = fuse(img, "-o", "allow_other")
    os.chmod(mnt, 0o755)
    setup(mnt)
    got = as_nobody(script.format(d=mnt)).stdout
    assert got == want
    # a file created 0444 is written through the descriptor that made
    # it (permission is checked at the open), and not through another
    assert got.split()[:14] == ["2", "0", "0", "0", "1", "1", "1", "0",
                                "1", "0", "2", "1", "1", "0"], got
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    st = os.stat(ro / "pub/dir")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == \
        (65534, 65534, 0o700)


ACL_SCRIPT = """cd "$1" && umask 077 &&
mkdir dd && setfacl -d -m g:55:rx,o::r dd && mkdir dd/sub &&
echo > dd/file && mkdir -m 751 dd/sub2 && mkdir plain && echo > plainf &&
echo > f && setfacl -m u:1234:rw f && chmod 640 f &&
echo > g && setfacl -m u::rw,g::r,o::- g"""
ACL_SHOW = """cd "$1" &&
stat -c '%n %a' dd/sub dd/file dd/sub2 plain plainf f g &&
getfacl -p dd dd/sub dd/file dd/sub2 plain plainf f g"""


def test_acls_and_umask_as_the_kernel_keeps_them(tmp_path, fuse,
                                                 loop_mount):
    """POSIX ACLs and the umask through the mount (acl.c, ctx.c): a
    default ACL inherited by files and directories and overriding the
    umask, an access ACL setting the mode's group bits from its mask, a
    chmod rewriting the ACL, an ACL the mode says entirely kept as the
    mode only: what the host's kernel does with the same commands."""
    host = fuse.base / "host"
    host.mkdir()
    helpers.run(["sh", "-c", ACL_SCRIPT, "-", str(host)])
    want = helpers.run(["sh", "-c", ACL_SHOW, "-", str(host)]).stdout
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    helpers.run(["sh", "-c", ACL_SCRIPT, "-", str(mnt)])
    assert helpers.run(["sh", "-c", ACL_SHOW, "-", str(mnt)]).stdout == want
    assert "default:group:55:r-x" in want and "user:1234:rw-" in want
    assert os.listxattr(mnt / "g") == []
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert helpers.run(["sh", "-c", ACL_SHOW, "-", str(ro)]).stdout == want


def seeks(path, size):
    """SEEK_DATA and SEEK_HOLE from every 1000th byte and from EOF
    (ENXIO: None)."""
    out = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for off in [*range(0, size, 1000), size]:
            for whence in (os.SEEK_DATA, os.SEEK_HOLE):
                try:
                    out.append(os.lseek(fd, off, whence))
                except OSError as e:
                    assert e.errno == errno.ENXIO
                    out.append(None)
    finally:
        os.close(fd)
    return out


@pytest.fixture
def ext4_rw(tmp_path, loop_mount):
    """Factory: a new 64 MiB ext4 image of stock mkfs.ext4, loop-mounted
    read-write (the kernel's answer to compare with); its mountpoint."""
    def make():
        ext4 = tmp_path / "ext4.img"
        helpers.run(["truncate", "-s", "64M", str(ext4)])
        helpers.run(["mkfs.ext4", "-q", str(ext4)])
        return loop_mount(ext4, options="rw")[0]
    return make


def test_seek_data_and_hole_as_ext4_answers(tmp_path, fuse, loop_mount):
    """lseek SEEK_DATA/SEEK_HOLE through the mount, against the kernel's
    ext4 on the same image after the unmount."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    fd = os.open(mnt / "sparse", os.O_CREAT | os.O_RDWR, 0o644)
    for off, n in ((0, 5000), (1 << 20, 100), (3 << 20, 70000),
                   (5 << 20, 10)):
        os.pwrite(fd, os.urandom(n), off)
    os.close(fd)
    size = (5 << 20) + 10
    got = seeks(mnt / "sparse", size)
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert got == seeks(ro / "sparse", size)
    assert got.count(None) > 0 and len(set(got)) > 6


def fiemap_kinds(path):
    """[(first, last, 'data' or 'unwritten')] of path in 512-byte units,
    by stock xfs_io fiemap (merged as fstests' _filter_fiemap does)."""
    out = helpers.run(["xfs_io", "-r", "-c", "fiemap -v",
                       str(path)]).stdout
    got = []
    for m in re.finditer(r"\[(\d+)\.\.(\d+)\]:\s+(\S+)\s+\d+"
                         r"(?:\s+(0x[0-9a-f]+))?", out):
        if m.group(3) == "hole":
            continue
        kind = "unwritten" if int(m.group(4), 16) & 0x800 else "data"
        first, last = int(m.group(1)), int(m.group(2))
        if got and got[-1][2] == kind and got[-1][1] + 1 == first:
            got[-1] = (got[-1][0], last, kind)
        else:
            got.append((first, last, kind))
    return got


def test_truncate_keeps_preallocation_as_ext4(tmp_path, fuse, ext4_rw,
                                              loop_mount):
    """fstests generic/092's sequence: fallocate KEEP_SIZE of 10 MiB,
    5 MiB written, truncate to the same size (the blocks past EOF go,
    as ext4 truncates at a size at most the old one), KEEP_SIZE again
    to 10 MiB, then truncate up to 7 MiB: growing keeps the unwritten
    blocks past the new size.  Through the mount, then the fiemap of a
    kernel read-only mount of the image, against the same sequence on
    the kernel's own ext4 (a loop mount, read-write)."""
    def sequence(path, fiemap_at):
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            helpers.run(["xfs_io", "-c", "falloc -k 0 10M", "-c",
                         "pwrite 0 5M", "-c", "truncate 5M", "-c", "fsync",
                         str(path)])
            first = fiemap_at()
            helpers.run(["xfs_io", "-c", "falloc -k 5M 5M", "-c",
                         "truncate 7M", str(path)])
        finally:
            os.close(fd)
        return first

    e4 = ext4_rw()
    want_first = sequence(e4 / "f", lambda: fiemap_kinds(e4 / "f"))
    want = fiemap_kinds(e4 / "f")
    assert want_first == [(0, 10239, "data")]
    assert want == [(0, 10239, "data"), (10240, 20479, "unwritten")]

    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    sequence(mnt / "f", lambda: None)
    assert os.stat(mnt / "f").st_size == 7 << 20
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert fiemap_kinds(ro / "f") == want


def test_mount_right_after_umount(tmp_path, fuse):
    """umount returns before the server has committed and let the image
    go; a mount right after it waits for the lock (fstests' cycle
    mounts) instead of refusing.  Three rounds of 30 MiB written, umount
    by the kernel, mount again at once: every mount works, every file is
    there, both checkers clean."""
    img = make_image(tmp_path, "256M")
    data = os.urandom(30 << 20)
    for i in range(3):
        mnt, proc = fuse(img)
        for j in range(i):
            assert (mnt / f"f{j}").read_bytes() == data, j
        (mnt / f"f{i}").write_bytes(data)
        helpers.run(["umount", str(mnt)])
    assert fuse.stop(mnt) == 0
    clean(img)


def test_link_updates_the_old_names_ctime(tmp_path, fuse):
    """link(2) changes the inode's ctime and link count; the kernel
    holds each name as an inode of its own (libfuse's path API), so the
    server drops the old name's cached attributes (fstests
    generic/236)."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    (mnt / "a").write_bytes(b"x")
    before = os.stat(mnt / "a")
    time.sleep(1.1)
    os.link(mnt / "a", mnt / "b")
    after = os.stat(mnt / "a")
    assert after.st_ctime_ns > before.st_ctime_ns
    assert after.st_nlink == 2
    assert fuse.stop(mnt) == 0
    clean(img)


@pytest.mark.parametrize("opts", [(), ("-o", "default_permissions")])
def test_execute_only_file_runs(tmp_path, fuse, opts):
    """A program of mode 0001 owned by another user runs for a user who
    may not read it, as on the kernel's filesystems: execve opens the
    file asking for execute permission only (fstests generic/126).
    Reading it stays refused."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img, "-o", "allow_other", *opts)
    os.chmod(mnt, 0o755)
    prog = mnt / "t"
    shutil.copyfile("/bin/true", prog)
    os.chown(prog, 99, 99)
    os.chmod(prog, 0o001)
    as_user = ["setpriv", "--reuid=12", "--regid=100", "--clear-groups"]
    assert helpers.run([*as_user, str(prog)], check=False).returncode == 0
    res = helpers.run([*as_user, "cat", str(prog)], check=False)
    assert res.returncode != 0 and "Permission denied" in res.stderr
    assert fuse.stop(mnt) == 0
    clean(img)


def test_open_with_o_trunc_truncates(tmp_path, fuse, loop_mount):
    """open(2) with O_TRUNC empties the file (libfuse asks the kernel to
    pass O_TRUNC to the server's open: fstests generic/130), whatever
    the access mode, as on the host's own filesystem; the shell's > too.
    Read back through the mount and a kernel read-only mount."""
    def steps(d):
        for name in ("w", "r", "rw", "sh"):
            (d / name).write_bytes(b"abcdefgh" * 1000)
        fd = os.open(d / "w", os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"12")
        os.close(fd)
        os.close(os.open(d / "r", os.O_RDONLY | os.O_TRUNC))
        fd = os.open(d / "rw", os.O_RDWR | os.O_TRUNC)
        os.write(fd, b"xy")
        os.close(fd)
        helpers.run(["sh", "-c", f"echo 1 > {d / 'sh'}"])
        return {n: (d / n).read_bytes() for n in ("w", "r", "rw", "sh")}

    host = tmp_path / "host"
    host.mkdir()
    want = steps(host)
    assert want == {"w": b"12", "r": b"", "rw": b"xy", "sh": b"1\n"}
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    assert steps(mnt) == want
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert {n: (ro / n).read_bytes() for n in want} == want


def test_chattr_lsattr_as_ext4(tmp_path, fuse, ext4_rw):
    """chattr(1) and lsattr(1) through the mount (FS_IOC_GETFLAGS and
    SETFLAGS, FSGETXATTR and FSSETXATTR, which the kernel forwards), and
    what immutable and append-only then refuse, as root and as another
    user, against the same script on the kernel's own ext4 (a loop
    mount, read-write): the same exit codes and lsattr lines.  After
    the unmount both checkers are clean and stock debugfs shows the
    flags."""
    script = r"""
    cd "$1"; r() { "$@" >/dev/null 2>&1; echo "$* -> $?"; }
    as() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
    echo hi > f; mkdir d; echo x > d/in
    r chattr +i f; lsattr f; r sh -c 'echo x >> f'; r rm f; r mv f g
    r ln f h; r touch -m -d @5 f; r chmod 600 f; r setfattr -n user.a -v 1 f
    r chattr -i f; r chattr +a f; r sh -c 'echo y >> f'; r sh -c 'echo z > f'
    r sh -c 'exec 3<>f'; r sh -c 'exec 3>f'; r sh -c 'exec 3>>f'
    r rm f; r truncate -s 0 f; lsattr f; r chattr -a f
    r chattr +i d; r touch d/new; r rm d/in; r sh -c 'echo w >> d/in'
    lsattr -d d; r chattr -i d
    r xfs_io -c 'chattr +s' f; r xfs_io -c 'chattr +S' f; lsattr f
    r chattr =dAe f; lsattr f
    a=$(stat -c %Z f); sleep 1.1; chattr +d f; b=$(stat -c %Z f)
    [ "$a" != "$b" ]; echo "ctime moved: $?"; chattr -d f
    chown 1000 f; chmod 666 f
    r as chattr +i f; r as chattr +d f; r as chattr -d f; r as chattr +A d
    lsattr f; cat f
    """
    def run(d):
        return helpers.run(["bash", "-c", script, "sh", str(d)]).stdout

    e4 = ext4_rw()
    want = run(e4)
    assert "chattr +i f -> 0" in want and "rm f -> 1" in want

    img = make_image(tmp_path)
    mnt, _ = fuse(img, "-o", "allow_other")
    os.chmod(mnt, 0o755)
    assert run(mnt) == want
    assert "exec 3<>f -> 0" not in want and "exec 3>>f -> 0" in want
    assert "ctime moved: 0" in want
    assert fuse.stop(mnt) == 0
    clean(img)
    out = helpers.run(["debugfs", "-R", "stat /f", str(img)]).stdout
    assert re.search(r"Flags: 0x(\w+)", out).group(1) == "80080", out


def test_new_entries_have_nanosecond_times(tmp_path, fuse):
    """A directory, a symlink, a FIFO and a device made after a file
    have times no earlier than the file's, to the nanosecond (stat(2)
    ordering, fstests generic/423): libext2fs's mkdir and symlink set
    whole seconds, which read as earlier than a file made in the same
    second.  Read back by stock debugfs after the unmount as well."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    (mnt / "ref").write_bytes(b"r")
    ref = os.stat(mnt / "ref")
    os.mkdir(mnt / "d")
    os.symlink("target", mnt / "s")
    os.mkfifo(mnt / "p")
    os.mknod(mnt / "c", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    for name in ("d", "s", "p", "c"):
        st = os.lstat(mnt / name)
        for t in ("st_atime_ns", "st_mtime_ns", "st_ctime_ns"):
            assert getattr(st, t) >= ref.st_mtime_ns, (name, t)
    assert fuse.stop(mnt) == 0
    clean(img)
    for name in ("d", "s"):
        out = helpers.run(["debugfs", "-R", f"stat /{name}", str(img)]
                          ).stdout
        extra = re.search(r"mtime: 0x[0-9a-f]+:([0-9a-f]+)", out).group(1)
        assert int(extra, 16) >> 2 != 0, out


def test_mkdir_in_a_setgid_directory_as_ext4(tmp_path, fuse, ext4_rw):
    """A directory made in a setgid directory with a default ACL is
    setgid too, whoever makes it, in its group or not (fstests
    generic/444: mkdir followed by a chmod lost the bit for a user
    outside the group); the same script on the kernel's ext4."""
    script = r"""
    cd "$1"; mkdir t; setfacl -d -m u:101:rwx t; chown 100:100 t
    chmod 2755 t
    setpriv --reuid=100 --regid=100 --clear-groups mkdir t/s1
    setpriv --reuid=100 --regid=101 --clear-groups mkdir t/s2
    setpriv --reuid=100 --regid=101 --clear-groups sh -c 'umask 077; mkdir t/s3'
    stat -c '%A %u %g' t/s1 t/s2 t/s3; getfacl -cp t/s2 t/s3
    """
    def run(d):
        return helpers.run(["bash", "-c", script, "sh", str(d)]).stdout

    e4 = ext4_rw()
    want = run(e4)
    assert want.startswith("drwxrwsr-x 100 100\ndrwxrwsr-x 100 100"), want
    img = make_image(tmp_path)
    mnt, _ = fuse(img, "-o", "allow_other")
    os.chmod(mnt, 0o755)
    assert run(mnt) == want
    assert fuse.stop(mnt) == 0
    clean(img)


def test_xattr_changes_move_the_ctime(tmp_path, fuse):
    """setxattr and removexattr set the change time, as ext4 does
    (fstests generic/728); read through the mount after the kernel's
    attribute timeout, and by stock debugfs after the unmount."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    (mnt / "f").write_bytes(b"x")
    times = [os.stat(mnt / "f").st_ctime_ns]
    for change in (lambda: os.setxattr(mnt / "f", "user.a", b"1"),
                   lambda: os.removexattr(mnt / "f", "user.a")):
        time.sleep(1.1)
        change()
        time.sleep(1.1)
        times.append(os.stat(mnt / "f").st_ctime_ns)
    assert times[0] < times[1] < times[2], times
    assert fuse.stop(mnt) == 0
    clean(img)


def test_mount_helper(tmp_path, fuse):
    """fuse/mount.fuse.extref, what `mount -t fuse.extref` and fstab run:
    mount(8)'s own options dropped (by libfuse's mount.fuse3), the server
    in the background holding the image until umount."""
    img = make_image(tmp_path)
    mnt = fuse.base / "helper"
    mnt.mkdir()
    env = {"PATH": f"{helpers.BUILD_DIR / 'fuse'}:{os.environ['PATH']}"}
    helpers.run([str(helpers.REPO_ROOT / "fuse/mount.fuse.extref"),
                 str(img), str(mnt), "-o", "rw,noauto,nofail,_netdev"],
                env=env)
    try:
        assert helpers.mount_entry(mnt)[2] == "fuse.extref"
        (mnt / "f").write_bytes(b"through mount(8)'s helper")
        # the server holds the image's lock
        assert helpers.run(["flock", "-n", str(img), "true"],
                           check=False).returncode != 0
        # a remount is the kernel's (fstests' _scratch_remount): the
        # mount turns read-only and back, the server the same one
        pid = helpers.run(["pgrep", "-f", f"extref-fuse {img} "]).stdout
        helpers.run([str(helpers.REPO_ROOT / "fuse/mount.fuse.extref"),
                     str(img), str(mnt), "-o", "rw,remount,ro"], env=env)
        assert "ro" in helpers.mount_entry(mnt)[3].split(",")
        with pytest.raises(OSError) as e:
            (mnt / "g").write_bytes(b"x")
        assert e.value.errno == errno.EROFS
        helpers.run([str(helpers.REPO_ROOT / "fuse/mount.fuse.extref"),
                     str(img), str(mnt), "-o", "remount,rw"], env=env)
        (mnt / "g").write_bytes(b"after the remount")
        assert helpers.run(["pgrep", "-f", f"extref-fuse {img} "]
                           ).stdout == pid
    finally:
        helpers.run(["umount", str(mnt)], check=False)
    for _ in range(100):
        if helpers.run(["flock", "-n", str(img), "true"],
                       check=False).returncode == 0:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the server kept the image after umount")
    clean(img)
    assert helpers.debugfs_cat(img, "/f") == b"through mount(8)'s helper"
    assert helpers.debugfs_cat(img, "/g") == b"after the remount"


def test_usage():
    res = helpers.run([server(), "--help"])
    for opt in ("-o ro", "allow_other", "default_permissions", "-f", "-d",
                "fusermount3 -u"):
        assert opt in res.stdout, opt
    res = helpers.run([server(), "-V"])
    assert "extref" in res.stdout
    res = helpers.run([server(), str(helpers.REPO_ROOT / "README")],
                      check=False)
    assert res.returncode == 1 and "Usage:" in res.stderr


def renameat2(old, new, flags):
    """renameat2(2) through glibc (RENAME_NOREPLACE 1, RENAME_EXCHANGE 2);
    the errno, 0 for success."""
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.renameat2(-100, os.fsencode(old), -100, os.fsencode(new),
                       flags)
    return ctypes.get_errno() if r else 0


def test_rename_link_mknod_times_fallocate(tmp_path, fuse, loop_mount):
    """The namespace and attribute requests, through the mount, against
    the host kernel on a tmpfs-or-disk directory doing the same steps;
    after the unmount a kernel read-only mount shows what the host has."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    host = tmp_path / "host"
    host.mkdir()
    results = {}
    for root in (mnt, host):
        r = results.setdefault(root, [])
        (root / "d1/sub").mkdir(parents=True)
        (root / "d2").mkdir()
        (root / "d1/f").write_bytes(b"f" * 5000)
        (root / "d2/g").write_bytes(b"g" * 300)
        r.append(renameat2(root / "d1/f", root / "d2/g", 1))  # NOREPLACE
        r.append(renameat2(root / "d1/sub", root / "d2/g", 2))  # EXCHANGE
        r.append(renameat2(root / "d2", root / "d2/g/x", 0))  # into itself
        os.rename(root / "d1/f", root / "d2/moved")
        os.link(root / "d2/moved", root / "d1/hard")
        try:
            os.link(root / "d1", root / "dirlink")
            r.append(0)
        except OSError as e:
            r.append(e.errno)
        os.mkfifo(root / "fifo")
        os.mknod(root / "tty", 0o620 | stat.S_IFCHR, os.makedev(4, 1))
        os.utime(root / "d1/hard", ns=(1_000_000_123, 2_000_000_456))
        with open(root / "sparse", "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 3 * 4096)
            f.write(b"x" * 100)
        with open(root / "sparse", "r+b") as f:
            r.append(os.stat(root / "sparse").st_size)
    assert results[mnt] == results[host], results
    assert results[mnt][:3] == [errno.EEXIST, 0, errno.EINVAL]
    want = helpers.host_tree(host, times=())
    assert helpers.host_tree(mnt, times=()) == want
    assert os.stat(mnt / "d1/hard").st_mtime_ns == 2_000_000_456
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert helpers.host_tree(ro, times=()) == want
    assert os.stat(ro / "d1/hard").st_mtime_ns == 2_000_000_456
    assert os.stat(ro / "d1/hard").st_atime_ns == 1_000_000_123
    assert os.stat(ro / "d2/g/..").st_ino == os.stat(ro / "d2").st_ino


def test_paths_resolve_anew_after_renames_and_removals(tmp_path, fuse,
                                                       loop_mount):
    """The server remembers paths' inodes (fuse/pathcache.c): after a
    directory is renamed over another, a file replaced by rename, and a
    directory removed and made again, every old path answers ENOENT or
    the new file, every new path its own bytes, as on the host; after
    the unmount a kernel read-only mount agrees."""
    img = make_image(tmp_path)
    mnt, _ = fuse(img)
    for d in ("a", "b"):
        (mnt / d / "sub").mkdir(parents=True)
        (mnt / d / "sub" / "f").write_bytes(d.encode() * 100)
    for p in ("a/sub/f", "b/sub/f", "a", "b"):
        os.stat(mnt / p)                      # remembered
    shutil.rmtree(mnt / "b")
    os.rename(mnt / "a", mnt / "b")
    with pytest.raises(FileNotFoundError):
        os.stat(mnt / "a/sub/f")
    assert (mnt / "b/sub/f").read_bytes() == b"a" * 100
    (mnt / "x").write_bytes(b"x1")
    (mnt / "y").write_bytes(b"y1")
    os.stat(mnt / "x")
    os.rename(mnt / "y", mnt / "x")
    assert (mnt / "x").read_bytes() == b"y1"
    with pytest.raises(FileNotFoundError):
        os.stat(mnt / "y")
    shutil.rmtree(mnt / "b/sub")
    (mnt / "b/sub").mkdir()
    (mnt / "b/sub/g").write_bytes(b"g")
    with pytest.raises(FileNotFoundError):
        os.stat(mnt / "b/sub/f")
    assert fuse.stop(mnt) == 0
    clean(img)
    ro, _ = loop_mount(img)
    assert sorted(p.name for p in ro.iterdir()) == ["b", "lost+found", "x"]
    assert (ro / "x").read_bytes() == b"y1"
    assert sorted(p.name for p in (ro / "b/sub").iterdir()) == ["g"]
