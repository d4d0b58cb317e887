"""mkfs.extref -d writes the image itself, through the library's populate
path: a directory, or a tar, pax or cpio archive (gzip'd or not) read
entry by entry, with nothing unpacked on the host.

Every image is checked by stock e2fsck -fn and read back through a
read-only loop mount of the kernel, entry by entry, against the source
as the host's own stat, readlink, getxattr and reads see it; the
archives are made by GNU tar and GNU cpio.  Rules the kernel has (a
directory indexed when its first block fills) are compared with a plain
ext4 the kernel itself wrote.
"""

import gzip
import os
import pathlib
import shutil
import stat
import subprocess
import tempfile

import pytest

import helpers
from test_mkfs_d import build_tree, mkfs_d

NOBODY = 65534
UTF8_NAMES = ["h\u00e9llo/na\u00efve.txt", "\u65e5\u672c/\u8a9e.txt"]


def full_tree(root):
    """build_tree's every file type, plus UTF-8 names, a file of zeros
    and a file with a zero block inside."""
    build_tree(root)
    for n in UTF8_NAMES:
        p = root / n
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(n.encode() * 3)
    (root / "zeros").write_bytes(bytes(65536))
    (root / "zero_mid").write_bytes(b"a" * 4096 + bytes(8192) + b"b" * 4096)
    return root


def describe(root, ns=True, xattrs=True, other_times=True):
    """Every entry: type and mode, owner, size, data, link target,
    device, hard-link group, times, extended attributes."""
    return helpers.host_tree(
        root, ns=ns, xattrs=xattrs,
        times=("mtime", "atime", "ctime") if other_times else ("mtime",))


def make_archive(src, kind, out):
    """The tree src as an archive of kind: tar (GNU format), pax (with
    xattrs and UTF-8 names), both with sparse entries; cpio (newc);
    '.gz' compressed."""
    base = kind.split(".")[0]
    raw = out.with_suffix(".raw")
    if base == "tar":
        helpers.run(["tar", "--format=gnu", "--sparse", "-cpf", str(raw),
                     "-C", str(src), "."])
    elif base == "pax":
        helpers.run(["tar", "--format=posix", "--sparse", "--xattrs",
                     "--xattrs-include=*", "-cpf", str(raw), "-C", str(src),
                     "."])
    else:
        names = subprocess.run(["find", "."], cwd=src, check=True,
                               capture_output=True).stdout
        with open(raw, "wb") as f:
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=src,
                           input=names, stdout=f, check=True)
    if kind.endswith(".gz"):
        out.write_bytes(gzip.compress(raw.read_bytes()))
        raw.unlink()
    else:
        raw.rename(out)
    return out


def blocks_of(mnt, rel):
    return os.lstat(mnt / rel).st_blocks * 512


def nonzero_bytes(path, bs=4096):
    """Bytes of the 4 KiB blocks of path holding anything but zeros."""
    data = open(path, "rb").read()
    return bs * sum(1 for i in range(0, len(data), bs)
                    if data[i:i + bs].strip(b"\0"))


@pytest.mark.parametrize("kind", ["dir", "tar", "tar.gz", "pax", "pax.gz",
                                  "cpio", "cpio.gz"])
def test_every_type_from_each_source(tmp_path, loop_mount, kind):
    src = full_tree(tmp_path / "src")
    if kind.startswith("tar") or kind.startswith("pax"):
        os.unlink(src / "sock")          # tar does not store sockets
    source = src if kind == "dir" else \
        make_archive(src, kind, tmp_path / f"src.{kind}")
    describe(src)   # read once: relatime's atimes settle before the copy
    img = tmp_path / "t.img"
    mkfs_d(img, source, "-b", "4096")
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    # what each source records: the directory everything; pax
    # nanosecond mtimes and xattrs; GNU tar and cpio seconds, no xattrs
    opts = {"dir": dict(),
            "pax": dict(other_times=False),
            "tar": dict(ns=False, xattrs=False, other_times=False),
            "cpio": dict(ns=False, xattrs=False, other_times=False)}
    o = opts[kind.split(".")[0]]
    want, got = describe(src, **o), describe(mnt, **o)
    assert got == want
    if not o.get("xattrs", True):
        assert all(not d.get("xattrs") for d in got.values())
    # holes stay holes, zero blocks become holes
    for rel in ("zeros", "zero_mid", "f_sparse", "f_plain"):
        assert blocks_of(mnt, rel) == nonzero_bytes(src / rel), rel
    assert blocks_of(mnt, "zeros") == 0
    # names as the source stores them
    names = set(os.listdir(os.fsencode(mnt)))
    assert {n.split("/")[0].encode() for n in UTF8_NAMES} <= names


def test_root_of_an_archive(tmp_path, loop_mount):
    """The archive's "./" gives the root its mode, owner and times."""
    src = full_tree(tmp_path / "src")
    os.unlink(src / "sock")
    os.chmod(src, 0o750)
    os.chown(src, 123, 456)
    tarball = make_archive(src, "pax", tmp_path / "src.pax")
    img = tmp_path / "t.img"
    mkfs_d(img, tarball)
    mnt, _ = loop_mount(img)
    st, want = os.stat(mnt), os.stat(src)
    assert (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns) == \
        (want.st_mode, want.st_uid, want.st_gid, want.st_mtime_ns)


def test_crtime_from_the_source(tmp_path):
    """A directory source's birth times become the inodes' crtime."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"born\n")
    btime = helpers.run(["stat", "--format=%.9W", str(src / "f")]).stdout
    sec, ns = btime.strip().split(".")
    if sec == "0":
        pytest.skip("the host's filesystem gives no birth time")
    img = tmp_path / "t.img"
    mkfs_d(img, src)
    out = helpers.run(["debugfs", "-R", "stat /f", str(img)]).stdout
    line = next(x for x in out.splitlines() if x.startswith("crtime:"))
    hsec, hextra = line.split()[1].split(":")
    assert (int(hsec, 16), int(hextra, 16) >> 2) == (int(sec), int(ns))


def test_as_nobody_from_cpio_with_devices_and_setuid(tmp_path, loop_mount,
                                                   request):
    """An unprivileged user builds the image of an archive that holds
    devices, a FIFO, a socket and root's setuid files: nothing needs
    root, and the image holds them all as the archive says."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "su").write_bytes(b"#!/bin/sh\n")
    os.chmod(src / "su", 0o4755)
    (src / "sg").write_bytes(b"sg\n")
    os.chown(src / "sg", 0, 42)
    os.chmod(src / "sg", 0o2711)
    os.mknod(src / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(src / "sda", 0o660 | stat.S_IFBLK, os.makedev(8, 0))
    os.mkfifo(src / "fifo")
    os.link(src / "su", src / "su2")
    # a directory the user can reach and write (tmp_path is root's 0700)
    work = pathlib.Path(tempfile.mkdtemp(prefix="extref-populate-"))
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    os.chmod(work, 0o755)
    os.chown(work, NOBODY, NOBODY)
    archive = make_archive(src, "cpio.gz", work / "a.cpio.gz")
    img = work / "t.img"
    cmd = [helpers.binary("mkfs.extref"), "-q", "-d", str(archive),
           str(img)]
    res = subprocess.run(["setpriv", f"--reuid={NOBODY}",
                          f"--regid={NOBODY}", "--clear-groups", *cmd],
                         capture_output=True, text=True,
                         env=dict(os.environ, TMPDIR=str(work)))
    assert res.returncode == 0, res.stderr
    assert os.stat(img).st_uid == NOBODY
    assert sorted(os.listdir(work)) == ["a.cpio.gz", "t.img"]
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    o = dict(ns=False, xattrs=False, other_times=False)
    want, got = describe(src, **o), describe(mnt, **o)
    assert got == want
    assert os.lstat(mnt / "su").st_mode & stat.S_ISUID


def test_big_directory_indexed_as_the_kernel_does(tmp_path, loop_mount):
    """A directory whose first block fills is indexed (htree), as the
    kernel indexes one it fills on a plain ext4."""
    src = tmp_path / "src"
    (src / "many").mkdir(parents=True)
    (src / "few").mkdir()
    names = [f"entry-{i:05d}-{'x' * 20}" for i in range(600)]
    for n in names:
        (src / "many" / n).write_bytes(b"")
    (src / "few" / "one").write_bytes(b"")
    img = tmp_path / "t.img"
    mkfs_d(img, src, "-b", "4096")
    helpers.e2fsck_fn(img)
    # the kernel on a plain ext4, the same names
    plain = tmp_path / "plain.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-b", "4096", str(plain),
                 "32M"])
    mnt, _ = loop_mount(plain, "rw")
    for d in ("many", "few"):
        (mnt / d).mkdir()
    for n in names:
        (mnt / "many" / n).write_bytes(b"")
    (mnt / "few" / "one").write_bytes(b"")
    subprocess.run(["umount", str(mnt)], check=True)

    def indexed(image, d):
        out = helpers.run(["debugfs", "-R", f"stat /{d}",
                           str(image)]).stdout
        flags = int(out.split("Flags: ")[1].split()[0], 16)
        return bool(flags & 0x1000)
    for d in ("many", "few"):
        assert indexed(img, d) == indexed(plain, d), d
    assert indexed(img, "many")
    mnt2, _ = loop_mount(img)
    assert sorted(os.listdir(mnt2 / "many")) == sorted(names)


def pax_bytes(entries):
    """A pax archive of (name, type, data, linkname)."""
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, typ, data, link in entries:
            ti = tarfile.TarInfo(name)
            ti.type = typ
            ti.mtime = 1600000000
            ti.mode = {tarfile.SYMTYPE: 0o777,
                       tarfile.DIRTYPE: 0o755}.get(typ, 0o644)
            ti.linkname = link or ""
            ti.size = len(data or b"")
            tf.addfile(ti, io.BytesIO(data) if data else None)
    return buf.getvalue()


@pytest.mark.parametrize("bad", ["dir_then_file", "link_to_dir",
                                 "link_to_itself"])
def test_bad_archive_entries_refused(tmp_path, bad):
    """A directory given again as a file, a hard link to a directory or
    to itself: one line naming the archive and the entry, no image."""
    import tarfile
    ents = [("d", tarfile.DIRTYPE, None, None),
            ("d/f", tarfile.REGTYPE, b"abc", None)]
    if bad == "dir_then_file":
        ents.append(("d", tarfile.REGTYPE, b"now a file", None))
        where = ": d:"
    elif bad == "link_to_dir":
        ents.append(("l", tarfile.LNKTYPE, None, "d"))
        where = ": l:"
    else:
        ents.append(("d/f", tarfile.LNKTYPE, None, "d/f"))
        where = ": d/f:"
    arch = tmp_path / "a.tar"
    arch.write_bytes(pax_bytes(ents))
    img = tmp_path / "t.img"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(arch),
                       str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert str(arch) + where in res.stderr, res.stderr
    assert not img.exists()


def test_archive_entry_given_again_replaces(tmp_path, loop_mount):
    """A file the archive gives again (tar -r appends) is replaced by the
    later entry, as unpacking the archive would replace it: as tar -x
    itself leaves it on a host directory.  A hard link made before keeps
    the first content."""
    import tarfile
    ents = [("d", tarfile.DIRTYPE, None, None),
            ("d/f", tarfile.REGTYPE, b"first" * 1000, None),
            ("d/keep", tarfile.LNKTYPE, None, "d/f"),
            ("d/s", tarfile.SYMTYPE, None, "x"),
            ("d/f", tarfile.REGTYPE, b"second", None),
            ("d/s", tarfile.REGTYPE, b"a file now", None),
            ("d/g", tarfile.REGTYPE, b"g" * 9000, None),
            ("d/g", tarfile.SYMTYPE, None, "f")]
    arch = tmp_path / "a.tar"
    arch.write_bytes(pax_bytes(ents))
    img = tmp_path / "t.img"
    mkfs_d(img, arch)
    helpers.e2fsck_fn(img)
    host = tmp_path / "host"
    host.mkdir()
    helpers.run(["tar", "-xpf", str(arch), "-C", str(host)])
    mnt, _ = loop_mount(img)
    o = dict(other_times=False, xattrs=False)
    assert describe(mnt, **o) == describe(host, **o)
    assert (mnt / "d/f").read_bytes() == b"second"
    assert (mnt / "d/keep").read_bytes() == b"first" * 1000


@pytest.mark.parametrize("opts", [["-O", "inline_data"], ["-I", "128"],
                                  ["-O", "quota"], ["-b", "1024"]],
                         ids=["inline_data", "small_inodes", "quota", "1k"])
def test_directory_source_with_features(tmp_path, loop_mount, opts):
    """The same copy with inline data, 128-byte inodes (no nanoseconds:
    seconds compared), quotas, 1 KiB blocks."""
    src = full_tree(tmp_path / "src")
    describe(src)
    img = tmp_path / "t.img"
    mkfs_d(img, src, *opts)
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    o = dict(ns=False, other_times=False) if "128" in opts else {}
    assert describe(mnt, **o) == describe(src, **o)


@pytest.mark.parametrize("size", [[], ["64M"]], ids=["sized", "given"])
def test_archive_from_a_pipe_same_image(tmp_path, size):
    """An archive read from a pipe (spooled without SIZE, read once with
    it) gives the image the same archive gives from a file, byte for
    byte, under SOURCE_DATE_EPOCH."""
    src = full_tree(tmp_path / "src")
    tarball = make_archive(src, "pax.gz", tmp_path / "a.pax.gz")
    env = dict(os.environ, SOURCE_DATE_EPOCH="1600000000",
               TMPDIR=str(tmp_path))
    imgs = []
    for how in ("file", "pipe"):
        img = tmp_path / f"{how}.img"
        cmd = [helpers.binary("mkfs.extref"), "-q", "-U",
               "0e2b6a3f-9d1c-4a57-8f00-123456789abc", "-E",
               "hash_seed=0e2b6a3f-9d1c-4a57-8f00-123456789abc", "-d",
               str(tarball) if how == "file" else "/dev/stdin", str(img),
               *size]
        with open(tarball, "rb") as f:
            res = subprocess.run(cmd, env=env, capture_output=True,
                                 stdin=subprocess.PIPE if how == "file"
                                 else None,
                                 input=None if how == "file" else
                                 f.read())
        assert res.returncode == 0, res.stderr
        imgs.append(img)
    assert helpers.sha256(imgs[0]) == helpers.sha256(imgs[1])
    helpers.e2fsck_fn(imgs[1])
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["a.pax.gz", "file.img", "pipe.img", "src"])


@pytest.mark.parametrize("unreadable", ["d/sub", "d/secret"])
def test_unreadable_entry_named(unreadable, request):
    """Sizing a source reads every entry: one the user cannot read (a
    directory, a file) is named in the refusal, not the source's top."""
    work = pathlib.Path(tempfile.mkdtemp(prefix="extref-unreadable-"))
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    os.chmod(work, 0o755)
    src = work / "src"
    (src / "d" / "sub").mkdir(parents=True)
    (src / "d" / "sub" / "f").write_bytes(b"f\n")
    (src / "d" / "secret").write_bytes(b"s\n")
    (src / "d" / "ok").write_bytes(b"ok\n")
    for d in (src, src / "d"):
        os.chmod(d, 0o755)
    os.chmod(src / unreadable, 0)
    out = work / "out"
    out.mkdir()
    os.chown(out, NOBODY, NOBODY)
    img = out / "t.img"
    res = subprocess.run(["setpriv", f"--reuid={NOBODY}",
                          f"--regid={NOBODY}", "--clear-groups",
                          helpers.binary("mkfs.extref"), "-q", "-d",
                          str(src), str(img)],
                         capture_output=True, text=True)
    assert res.returncode != 0
    assert f"cannot read {src / unreadable}: Permission denied" in \
        res.stderr, res.stderr
    assert not img.exists() or img.stat().st_size == 0, res.stderr
