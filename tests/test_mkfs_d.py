"""mkfs.extref -d SOURCE: a directory becomes an image, with deduplication.

The source tree holds every file type a root filesystem does; the image
is compared with it through a read-only loop mount of the kernel, and
stock e2fsck and fsck.extref must find nothing to fix.
"""

import os
import random
import socket
import stat

import pytest

import helpers

UUID = "0e2b6a3f-9d1c-4a57-8f00-123456789abc"


def build_tree(root, order=1, seed=3):
    """Every file type; `order` changes the creation order only."""
    rnd = random.Random(seed)

    def data(n):
        return bytes(rnd.randrange(1, 256) for _ in range(n))

    big = data(70000)
    items = [
        ("f_plain", lambda p: p.write_bytes(big)),
        ("f_copy", lambda p: p.write_bytes(big)),
        ("f_small", lambda p: p.write_bytes(b"x" * 10)),
        ("f_setuid", lambda p: (p.write_bytes(b"#!/bin/sh\n"),
                                os.chmod(p, 0o4755))),
        ("f_sparse", lambda p: (open(p, "wb").truncate(1 << 20),
                                _write_at(p, 700000, data(5000)))),
        ("n" * 255, lambda p: p.write_bytes(b"long name")),
        ("fifo", lambda p: os.mkfifo(p)),
        ("chr", lambda p: os.mknod(p, 0o644 | stat.S_IFCHR,
                                   os.makedev(1, 3))),
        ("blk", lambda p: os.mknod(p, 0o600 | stat.S_IFBLK,
                                   os.makedev(7, 0))),
        ("sl_fast", lambda p: os.symlink("f_plain", p)),
        ("sl_slow", lambda p: os.symlink("t" * 100, p)),
    ]
    root.mkdir()
    if order < 0:
        items.reverse()
    for name, make in items:
        make(root / name)
    os.link(root / "f_plain", root / "f_hardlink")
    deep = root
    for i in range(12):
        deep = deep / f"d{i}"
        deep.mkdir()
    (deep / "bottom").write_bytes(big[:3000])
    sticky = root / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    os.setxattr(root / "f_small", "user.note", b"hello")
    os.setxattr(root / "f_small", "trusted.t", b"secret")
    os.setxattr(root / "f_small", "security.capability",
                bytes.fromhex("0100000200200000000000000000000000000000"))
    os.chown(root / "f_small", 1234, 5678)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(root / "sock"))
    s.close()
    return root


def _write_at(p, off, b):
    with open(p, "r+b") as f:
        f.seek(off)
        f.write(b)


def mkfs_d(img, src, *opts, env=None):
    return helpers.run([helpers.binary("mkfs.extref"), "-q", "-U", UUID,
                        "-E", f"hash_seed={UUID}", *opts, "-d", str(src),
                        str(img)], env=env)


def describe_tree(root, times=True):
    """What the image must reproduce, entry by entry."""
    return helpers.host_tree(root, times=("mtime",) if times else ())


@pytest.mark.parametrize("bs", ["1024", "4096"])
@pytest.mark.parametrize("mode", ["none", "file", "block"])
def test_tree_round_trip(tmp_path, loop_mount, bs, mode):
    src = build_tree(tmp_path / "src")
    img = tmp_path / "t.img"
    mkfs_d(img, src, "-b", bs, f"--dedup={mode}")
    helpers.e2fsck_fn(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-n", "-f",
                       str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    mnt, _ = loop_mount(img)
    assert describe_tree(mnt) == describe_tree(src)
    # identical files share their blocks once deduplicated
    du = helpers.run([helpers.binary("debugfs.extref"), "-R",
                      "du --raw /f_plain /f_copy", str(img)]).stdout
    rows = [line.split() for line in du.splitlines()[1:]]
    total = [int(r[0]) for r in rows]
    excl = [int(r[1]) for r in rows]
    if mode == "none":
        assert excl == total, du
    elif mode == "file":
        assert excl == [0, 0], du              # the whole files shared
    else:
        assert all(e <= int(bs) for e in excl), du   # all but the tail


def test_same_as_mke2fs_d(tmp_path, loop_mount):
    """The same files as stock mke2fs -d makes from the tree."""
    src = build_tree(tmp_path / "src")
    ours, theirs = tmp_path / "ours.img", tmp_path / "theirs.img"
    mkfs_d(ours, src, "--dedup=block")
    helpers.run(["mke2fs", "-q", "-F", "-t", "ext4", "-d", str(src),
                 str(theirs), "64M"])
    m1, _ = loop_mount(ours)
    m2, _ = loop_mount(theirs)
    # mke2fs 1.47.0 drops the nanoseconds, which mkfs.extref keeps
    assert describe_tree(m1, times=False) == describe_tree(m2, times=False)
    for rel in describe_tree(m1, times=False):
        assert int(os.lstat(m1 / rel).st_mtime) == \
            int(os.lstat(m2 / rel).st_mtime), rel


def test_reproducible_whatever_the_creation_order(tmp_path):
    env = {"SOURCE_DATE_EPOCH": "1600000000"}
    a = build_tree(tmp_path / "a", order=1)
    b = build_tree(tmp_path / "b", order=-1)
    ia, ib = tmp_path / "a.img", tmp_path / "b.img"
    mkfs_d(ia, a, "--dedup=block", env=env)
    mkfs_d(ib, b, "--dedup=block", env=env)
    assert helpers.sha256(ia) == helpers.sha256(ib)
    ic = tmp_path / "c.img"
    mkfs_d(ic, a, "--dedup=block", env={"SOURCE_DATE_EPOCH": "1600000001"})
    assert helpers.sha256(ic) != helpers.sha256(ia)


def test_all_root_and_clamped_times(tmp_path, loop_mount):
    src = build_tree(tmp_path / "src")
    img = tmp_path / "t.img"
    mkfs_d(img, src, "--all-root", env={"SOURCE_DATE_EPOCH": "1000000000"})
    mnt, _ = loop_mount(img)
    for rel, d in describe_tree(mnt, times=False).items():
        st = os.lstat(mnt / rel)
        assert (st.st_uid, st.st_gid) == (0, 0), rel
        assert st.st_mtime <= 1000000000 and st.st_ctime <= 1000000000, rel


def test_size_computed_with_headroom(tmp_path):
    src = build_tree(tmp_path / "src")
    small, big = tmp_path / "s.img", tmp_path / "b.img"
    mkfs_d(small, src, "--headroom=0")
    mkfs_d(big, src, "--headroom=200")
    assert os.path.getsize(big) > os.path.getsize(small) > 0
    helpers.e2fsck_fn(small)


@pytest.mark.parametrize("what", ["missing", "file", "too_small"])
def test_bad_source(tmp_path, what):
    img = tmp_path / "t.img"
    if what == "missing":
        args, needle = ["-d", str(tmp_path / "nope"), str(img)], "nope"
    elif what == "file":
        f = tmp_path / "f"
        f.write_bytes(b"x")
        # a regular file is read as an archive: this one is not
        args, needle = ["-d", str(f), str(img)], str(f)
    else:
        src = build_tree(tmp_path / "src")
        args, needle = ["-d", str(src), str(img), "150K"], "needs about"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", *args],
                      check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert len(res.stderr.strip().splitlines()) == 1, helpers.describe(res)
    assert needle in res.stderr, helpers.describe(res)
    assert not img.exists()


def _pax(path, entries):
    """A pax archive of (name, data, xattrs) regular files."""
    import io
    import tarfile
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for name, data, xattrs in entries:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.pax_headers = {f"SCHILY.xattr.{k}": v
                              for k, v in xattrs.items()}
            tf.addfile(ti, io.BytesIO(data))


def test_archive_sized_for_the_directories_it_implies(tmp_path):
    """One entry 1,333 directories deep, none of them listed: each is an
    inode and a block the image is sized for (it was not: "image too
    small ... needs about" the size just made)."""
    tar = tmp_path / "deep.tar"
    _pax(tar, [("/".join(["d"] * 1333) + "/f", b"deep\n", {})])
    img = tmp_path / "t.img"
    mkfs_d(img, tar)
    helpers.e2fsck_fn(img)
    path = "/" + "/".join(["d"] * 1333) + "/f"
    assert helpers.debugfs_cat(img, path) == b"deep\n"


def test_archive_xattrs_larger_than_a_block(tmp_path):
    """Attributes that fit in no inode and block are refused naming the
    entry, not taken for an image too small."""
    tar = tmp_path / "xa.tar"
    _pax(tar, [("ok", b"x", {"user.a": "v" * 900}),
               ("big", b"x", {"user.a": "v" * 900, "user.b": "w" * 900})])
    img = tmp_path / "t.img"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-b", "1024",
                       "-d", str(tar), str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert "too small" not in res.stderr, helpers.describe(res)
    assert "big: Insufficient space to store extended attribute data" in \
        res.stderr, helpers.describe(res)
    assert not img.exists()


@pytest.mark.parametrize("compress", ["", "z", "J"])
def test_tar_archive_source(tmp_path, loop_mount, compress):
    """A tar archive (plain, gzip, xz) gives the same image contents as its
    directory: owners, modes, nanosecond times, xattrs, devices, links."""
    src = build_tree(tmp_path / "src")
    os.unlink(src / "sock")                  # tar does not store sockets
    os.chmod(src, 0o700)                     # the archive's "./" entry
    tarball = tmp_path / f"src.tar{'.' + compress if compress else ''}"
    helpers.run(["tar", "--format=posix", "--xattrs",
                 "--xattrs-include=*", f"-cp{compress}f", str(tarball),
                 "-C", str(src), "."])
    img = tmp_path / "t.img"
    cwd_mode = os.stat(".").st_mode
    mkfs_d(img, tarball, "--dedup=block")
    # the unpacking touched nothing outside its own directory (an early
    # version set the working directory's mode from "./")
    assert os.stat(".").st_mode == cwd_mode
    helpers.e2fsck_fn(img)
    mnt, _ = loop_mount(img)
    assert describe_tree(mnt) == describe_tree(src)


def test_bad_archive(tmp_path):
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"this is not a tar archive\n" * 40)
    img = tmp_path / "t.img"
    res = helpers.run([helpers.binary("mkfs.extref"), "-q", "-d", str(bad),
                       str(img)], check=False)
    assert res.returncode == 1, helpers.describe(res)
    assert len(res.stderr.strip().splitlines()) == 1
    assert str(bad) in res.stderr
    assert not img.exists()


def test_posix_acls_kept(tmp_path, loop_mount):
    """POSIX ACLs (system.posix_acl_*) survive, read back by getfacl."""
    src = tmp_path / "src"
    (src / "dir").mkdir(parents=True)
    (src / "file").write_bytes(b"acl\n")
    helpers.run(["setfacl", "-m", "u:1234:rw-,g:99:r--", str(src / "file")])
    helpers.run(["setfacl", "-d", "-m", "u:1234:rwx", str(src / "dir")])
    img = tmp_path / "t.img"
    mkfs_d(img, src, "--dedup=block")
    mnt, _ = loop_mount(img)
    for rel in ("file", "dir"):
        want = helpers.run(["getfacl", "-cp", str(src / rel)]).stdout
        got = helpers.run(["getfacl", "-cp", str(mnt / rel)]).stdout
        assert got == want and "1234" in got, (rel, got, want)


def test_progress_only_on_a_terminal(tmp_path):
    """On a terminal the long phases show a percentage; piped, nothing."""
    import pty
    import subprocess
    src = build_tree(tmp_path / "src")
    cmd = [helpers.binary("mkfs.extref"), "--dedup=block", "-d", str(src),
           str(tmp_path / "a.img")]
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait() == 0, out
    os.close(master)
    assert b"%" in out and b"copying" in out, out
    piped = helpers.run(cmd[:-1] + [str(tmp_path / "b.img")]).stdout
    assert "%" not in piped and "copying" not in piped, piped


def _fsyncs(cmd, tmp_path):
    """How many fsync/fdatasync calls cmd makes (strace -f -c)."""
    out = tmp_path / "strace.out"
    # LeakSanitizer cannot run under ptrace: leaks are not what is counted
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    res = helpers.run(["strace", "-f", "-qq", "-c", "-o", str(out), "-e",
                       "trace=fsync,fdatasync", *cmd], check=False, env=env)
    assert res.returncode == 0, helpers.describe(res)
    calls = 0
    for line in out.read_text().splitlines():
        f = line.split()
        if f and f[-1] in ("fsync", "fdatasync"):
            calls += int(f[3])
    return calls


def test_dedup_of_a_new_image_syncs_once_not_per_commit(tmp_path):
    """mkfs -d --dedup builds a new image: its commits go to the file in
    order without an fsync each (EXTREF_OPEN_NOSYNC); --convert works on
    an image the user already has, through its journal, in transactions
    as large as the journal takes: a handful of fsyncs, not one or more
    per shared file."""
    src = tmp_path / "src"
    src.mkdir()
    data = os.urandom(12288)
    for i in range(40):
        (src / f"copy{i}").write_bytes(data)
    img = tmp_path / "new.img"
    n_new = _fsyncs([helpers.binary("mkfs.extref"), "-q", "-d", str(src),
                     "--dedup=file", str(img), "32M"], tmp_path)
    helpers.e2fsck_fn(img)
    plain = tmp_path / "plain.img"
    helpers.run(["mke2fs", "-q", "-t", "ext4", "-d", str(src), str(plain),
                 "32M"])
    n_conv = _fsyncs([helpers.binary("mkfs.extref"), "--convert",
                      "--dedup=file", "-q", str(plain)], tmp_path)
    helpers.e2fsck_fn(plain)
    # issue 11's target: not one per file.  The undo file that makes a
    # failed --convert take itself back (mkfs/convert_undo.c) and the
    # stock e2fsck -fn before it add a constant few: 17 for 40 files and
    # for 800 alike, measured with strace.
    assert n_conv <= 20, n_conv
    # not one per shared file (the stock e2fsck -fp that indexes the new
    # image's directories adds its own handful)
    assert n_new < 30, n_new
