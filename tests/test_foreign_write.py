"""Foreign writers are seen (FORMAT.md section 11, "Foreign writers").

A shared block freed by another tool and taken again by one newcomer, or
written in place through one of its sharers, leaves every count right:
stock e2fsck -fn calls such an image clean.  The tree's header records
the superblock as extref's last writer left it; fsck.extref -n must then
exit 4 naming the files changed since, -y must say what it accepts, and
the next extref writer must prove the counts in full.  Writes that touch
no shared block are no alarm.

Oracles: stock debugfs (what the files hold), stock e2fsck -fn, the
kernel's loop mount and Debian's fuse2fs as the foreign writers.
"""

import os
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

import helpers

EPOCH = "1500000000"    # the library's clock: every foreign write is later


def xenv():
    env = dict(os.environ)
    env["SOURCE_DATE_EPOCH"] = EPOCH
    return env


def stock(img, request):
    return helpers.run(["debugfs", "-w", "-R", request, str(img)])


def cat(img, path):
    res = subprocess.run(["debugfs", "-R", f"cat {path}", str(img)],
                         capture_output=True, timeout=60)
    assert res.returncode == 0
    return res.stdout


def fsck(img, *opts):
    res = subprocess.run([helpers.binary("fsck/fsck.extref"), *opts, str(img)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=300)
    return res.stdout, res.returncode


def proof(img):
    """How a stamp-using read-write open trusted the tree
    (tests/unit/open_proof)."""
    res = subprocess.run([str(helpers.BUILD_DIR / "tests/unit/open_proof"),
                          str(img)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().removeprefix("proof: ")


def make_image(tmp_path, env=None):
    """/a (13 blocks of 4 KiB) and its reflink /b, closed by extref."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "a").write_bytes(os.urandom(13 * 4096))
    img = tmp_path / "img"
    helpers.run([helpers.binary("mkfs/mkfs.extref"), "-q", "-d", str(src),
                 str(img), "16M"], env=env)
    helpers.run([helpers.binary("debug/debugfs.extref"), "-w", "-R",
                 "reflink /a /b", str(img)], env=env)
    out, st = fsck(img, "-n")
    assert st == 0 and "0x0305" not in out, out
    return img


@pytest.fixture
def image(tmp_path):
    return make_image(tmp_path, env=xenv())


def assert_named(img, name):
    out, st = fsck(img, "-n")
    assert st == 4, out
    assert "0x0305 " in out and f"({name})" in out, out
    return out


def accept(img):
    """-y says what it accepts, never "clean"; afterwards all is quiet."""
    out, st = fsck(img, "-y")
    assert st == 1, out
    assert "0x0305 " in out and "accepted as it is now" in out, out
    out, st = fsck(img, "-n")
    assert st == 0 and "0x0305" not in out, out
    assert "another tool" not in out, out
    helpers.e2fsck_fn(img)


def test_stock_rm_then_write_is_named(image, tmp_path):
    new = tmp_path / "new"
    new.write_bytes(os.urandom(13 * 4096))
    stock(image, "rm /a")
    stock(image, f"write {new} /c")
    assert cat(image, "/b") == new.read_bytes()     # the silent loss
    helpers.e2fsck_fn(image)                        # stock calls it clean
    before = helpers.sha256(image)
    assert_named(image, "/c")
    assert helpers.sha256(image) == before, "-n changed the image"
    accept(image)


def test_smaller_newcomer_is_named_and_not_called_clean(image, tmp_path):
    new = tmp_path / "new"
    new.write_bytes(os.urandom(5 * 4096))
    stock(image, "rm /a")
    stock(image, f"write {new} /c")
    assert cat(image, "/b")[:len(new.read_bytes())] == new.read_bytes()
    assert_named(image, "/c")
    out, st = fsck(image, "-y")
    assert st == 1 and "0x0305 " in out and "accepted" in out, out
    out, st = fsck(image, "-n")
    assert st == 0, out
    helpers.e2fsck_fn(image)


def test_preen_stops_at_a_foreign_write(image, tmp_path):
    new = tmp_path / "new"
    new.write_bytes(os.urandom(13 * 4096))
    stock(image, "rm /a")
    stock(image, f"write {new} /c")
    out, st = fsck(image, "-p")
    assert st == 4 and "0x0305 " in out, out
    assert "UNEXPECTED INCONSISTENCY" in out, out
    assert_named(image, "/c")       # -p accepted nothing


def test_next_writer_proves_in_full_and_carries_the_finding(image, tmp_path):
    """rm and write of as much leave the allocation state (and so the
    stamp) as it was; the next writer proves in full all the same, and
    its own writes (debugfs.extref -w, mkfs.extref --update) do not hide
    the foreign one from fsck.extref (the writers after it, the counts
    proven since, trust the stamp again)."""
    assert proof(image) == "stamp"
    new = tmp_path / "new"
    new.write_bytes(os.urandom(13 * 4096))
    stock(image, "rm /a")
    stock(image, f"write {new} /c")
    assert proof(image) == "full"
    helpers.run([helpers.binary("debug/debugfs.extref"), "-w", "-R", "mkdir /d",
                 str(image)], env=xenv())
    helpers.run([helpers.binary("mkfs/mkfs.extref"), "--update", "-q", "-d",
                 str(tmp_path / "src"), str(image)], env=xenv())
    assert proof(image) == "stamp"
    assert_named(image, "/c")
    accept(image)


@pytest.mark.parametrize("how", ["write", "resize", "e2image"])
def test_benign_foreign_writes_are_no_alarm(image, tmp_path, how):
    data = cat(image, "/b")
    if how == "write":
        new = tmp_path / "new"
        new.write_bytes(os.urandom(20 * 4096))
        stock(image, f"write {new} /c")
    elif how == "resize":
        os.truncate(image, 32 << 20)
        helpers.run(["resize2fs", str(image)])
    else:
        copy = tmp_path / "copy"
        helpers.run(["e2image", "-ra", str(image), str(copy)])
        image = copy
    out, st = fsck(image, "-n")
    assert st == 0 and "0x0305" not in out, out
    if how != "e2image":        # a byte copy: nothing was written to it
        assert "written by another tool" in out, out
    assert cat(image, "/b") == data
    helpers.e2fsck_fn(image)
    out, st = fsck(image, "-y")
    assert st == 0 and "0x0305" not in out, out
    out, st = fsck(image, "-n")
    assert st == 0 and "another tool" not in out, out


def test_images_without_a_record_stay_quiet(image, tmp_path):
    """An image whose header holds no record (an older version's) is read
    as before: nothing concluded, no alarm."""
    blk = int(helpers.run(["debugfs", "-R", "bmap <5> 0",
                           str(image)]).stdout.strip())
    with open(image, "r+b") as f:
        f.seek(blk * 4096)
        hdr = bytearray(f.read(4096))
    hdr[0x4c:0x7c] = bytes(0x7c - 0x4c)
    seed = helpers.csum_seed(image)
    hdr[0x7c:0x80] = helpers.header_csum(seed, bytes(hdr)).to_bytes(
        4, "little")
    with open(image, "r+b") as f:
        f.seek(blk * 4096)
        f.write(hdr)
    new = tmp_path / "new"
    new.write_bytes(os.urandom(13 * 4096))
    stock(image, "rm /a")
    stock(image, f"write {new} /c")
    out, st = fsck(image, "-n")
    assert st == 0 and "another tool" not in out, out


# ----- within the second of extref's last write -----

def record(img):
    """The tree header's record (FORMAT.md section 4): flags, seconds,
    nanoseconds."""
    blk = int(helpers.run(["debugfs", "-R", "bmap <5> 0",
                           str(img)]).stdout.strip())
    with open(img, "rb") as f:
        f.seek(blk * 4096)
        hdr = f.read(128)
    return (struct.unpack_from("<I", hdr, 0x4c)[0],
            struct.unpack_from("<Q", hdr, 0x58)[0],
            struct.unpack_from("<I", hdr, 0x54)[0])


def clock_env():
    """The library's real clock: no SOURCE_DATE_EPOCH."""
    return {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}


def stock_at(img, sec, *requests):
    """Stock debugfs -w with its clock set to sec (set_current_time): the
    files it writes are stamped sec, whole seconds."""
    script = "".join(f"{r}\n" for r in (f"set_current_time @{sec}",
                                          *requests))
    res = subprocess.run(["debugfs", "-w", "-f", "-", str(img)],
                         input=script, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    assert "Setting current time" in res.stdout, res.stdout


def ctime(img, path):
    """(seconds, the ctime_extra word) as stock debugfs reads them."""
    out = helpers.debugfs(img, f"stat {path}").stdout
    m = re.search(r"ctime: 0x([0-9a-f]+):([0-9a-f]+)", out)
    assert m, out
    return int(m.group(1), 16), int(m.group(2), 16)


def test_stock_write_in_the_recorded_second_is_named(tmp_path):
    """Stock debugfs stamps whole seconds; extref's clock (no
    SOURCE_DATE_EPOCH) stamps nanoseconds and its record says so, so a
    stock write in the very second extref recorded (later than it, but
    not by the seconds' count) is named."""
    img = make_image(tmp_path, env=clock_env())
    _, sec, nsec = record(img)
    assert nsec > 0                 # a clock, not a whole second
    new = tmp_path / "new"
    new.write_bytes(os.urandom(13 * 4096))
    stock_at(img, sec, "rm /a", f"write {new} /c")
    assert ctime(img, "/c") == (sec, 0)     # that second, whole
    assert cat(img, "/b") == new.read_bytes()
    helpers.e2fsck_fn(img)
    out = assert_named(img, "/c")
    assert out.count("0x0305 ") == 1, out      # not /b, extref's reflink
    accept(img)


def test_clock_stamps_in_the_recorded_second_are_not_named(tmp_path):
    """extref's own writes under its real clock (a reflink, a pwrite) in
    the second it recorded: a stock write in that second that touches no
    shared block names none of them."""
    img = make_image(tmp_path, env=clock_env())
    for i in range(5):      # a close that crossed into the next second
        helpers.run([helpers.binary("debug/debugfs.extref"), "-w", "-R",
                     f"reflink /a /e{i}", str(img)], env=clock_env())
        _, sec, _ = record(img)
        if ctime(img, f"/e{i}")[0] == sec:
            break
    else:
        pytest.fail("no reflink stamped in the second of its close")
    new = tmp_path / "new"
    new.write_bytes(os.urandom(20 * 4096))
    stock_at(img, sec, f"write {new} /c")
    out, st = fsck(img, "-n")
    assert st == 0 and "0x0305" not in out, out
    assert "written by another tool" in out, out
    helpers.e2fsck_fn(img)


def test_epoch_stamps_in_the_recorded_second_are_not_named(tmp_path):
    """SOURCE_DATE_EPOCH stamps whole seconds that are extref's own: a
    build under an epoch not yet reached, a reflink under it, then a
    write of extref's own clock (whose record stays in the epoch's
    second: never back).  A foreign write that touches no shared block
    then names nothing, though /b's ctime is that second, whole."""
    epoch = int(time.time()) + 100
    img = make_image(tmp_path, env=dict(os.environ,
                                        SOURCE_DATE_EPOCH=str(epoch)))
    helpers.run([helpers.binary("debug/debugfs.extref"), "-w", "-R",
                 "mkdir /d", str(img)], env=clock_env())
    assert ctime(img, "/b") == (epoch, 0)
    assert record(img)[1] == epoch
    new = tmp_path / "new"
    new.write_bytes(os.urandom(20 * 4096))
    stock_at(img, epoch, f"write {new} /c")
    out, st = fsck(img, "-n")
    assert st == 0 and "0x0305" not in out, out
    assert "written by another tool" in out, out
    helpers.e2fsck_fn(img)


def test_accepted_files_of_the_recorded_second_are_not_named_again(tmp_path):
    """fsck.extref -y accepts what another tool wrote and records the
    image in the second the stock files carry (the epoch's, never back):
    a later foreign write that touches no shared block names none of the
    files it accepted."""
    epoch = int(time.time()) + 100
    img = make_image(tmp_path, env=dict(os.environ,
                                        SOURCE_DATE_EPOCH=str(epoch)))
    new = tmp_path / "new"
    new.write_bytes(os.urandom(13 * 4096))
    stock_at(img, epoch, "rm /a", f"write {new} /c")
    assert ctime(img, "/c") == (epoch, 0)
    out, st = fsck(img, "-y")
    assert st in (0, 1), out
    assert record(img)[1] == epoch
    stock_at(img, epoch, f"write {new} /e")
    out, st = fsck(img, "-n")
    assert st == 0 and "0x0305" not in out, out
    assert "written by another tool" in out, out
    helpers.e2fsck_fn(img)


# ----- foreign writers that need root: fuse2fs, the kernel -----

def fuse_skip_reason():
    if os.geteuid() != 0:
        return "fuse2fs mounts need root"
    if not shutil.which("fuse2fs"):
        return "fuse2fs is not installed (scripts/install-deps)"
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    return None


@pytest.fixture
def fuse_mount(tmp_path):
    """Factory: mount img read-write with fuse2fs; unmounted in teardown
    even on failure (and by the caller's umount() before the check)."""
    reason = fuse_skip_reason()
    if reason:
        pytest.skip(reason)
    mounted = []

    def umount():
        while mounted:
            mnt = mounted.pop()
            if helpers.mount_entry(mnt) is not None:
                subprocess.run(["umount", str(mnt)], capture_output=True)
            if helpers.mount_entry(mnt) is not None:
                subprocess.run(["umount", "-l", str(mnt)],
                               capture_output=True)

    def mount(img):
        mnt = tmp_path / f"fuse{len(mounted)}"
        mnt.mkdir()
        mounted.append(mnt)
        helpers.run(["fuse2fs", str(img), str(mnt), "-o", "rw,fakeroot"])
        assert helpers.mount_entry(mnt) is not None
        return mnt

    mount.umount = umount
    try:
        yield mount
    finally:
        umount()


def write_in_place(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, data, 8192)
        os.fsync(fd)
    finally:
        os.close(fd)


def test_fuse2fs_in_place_write_is_named(tmp_path, fuse_mount):
    """Debian's fuse2fs 1.47.0 mounts an extref image read-write and
    writes a reflink in place: its sibling changes too.  The library's
    real clock (no SOURCE_DATE_EPOCH): fuse2fs stamps nanoseconds."""
    img = make_image(tmp_path)
    mnt = fuse_mount(img)
    write_in_place(mnt / "b", b"F" * 100)
    fuse_mount.umount()
    assert cat(img, "/a") == cat(img, "/b")         # /a changed too
    assert b"F" * 100 in cat(img, "/a")
    helpers.e2fsck_fn(img)
    assert_named(img, "/b")
    assert proof(img) == "full"
    accept(img)


def test_kernel_rw_mount_without_the_feature_is_named(tmp_path):
    img = make_image(tmp_path)
    stock(img, "feature -shared_blocks")
    with helpers.loop_mount(img, tmp_path / "mnt", "rw"):
        write_in_place(tmp_path / "mnt" / "b", b"K" * 100)
    assert b"K" * 100 in cat(img, "/a")             # the sibling changed
    out = assert_named(img, "/b")
    assert "0x0001 " in out, out
    out, st = fsck(img, "-y")
    assert st == 1 and "0x0305 " in out and "accepted" in out, out
    out, st = fsck(img, "-n")
    assert st == 0 and "0x0305" not in out, out
    helpers.e2fsck_fn(img)


def test_read_only_kernel_mount_is_no_alarm(tmp_path):
    img = make_image(tmp_path)
    with helpers.loop_mount(img, tmp_path / "mnt", "ro"):
        assert (tmp_path / "mnt" / "b").read_bytes() == cat(img, "/b")
    out, st = fsck(img, "-n")
    assert st == 0 and "another tool" not in out, out
    assert proof(img) == "stamp"
