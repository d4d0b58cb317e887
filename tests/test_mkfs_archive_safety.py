"""mkfs.extref -d ARCHIVE exposes nothing on the host and leaves nothing.

The archive (written with Python's tarfile, so no host file is ever a
device or setuid) holds device nodes, a FIFO, setuid and setgid files
owned by root, a "./" entry of mode 0777, hard links to a device and to
a setuid file, high owner ids, nanosecond times, extended attributes a
non-root user cannot set (trusted.*, security.capability), a POSIX ACL
and pax UTF-8 names.  The archive is read entry by entry straight into
the image (the library's populate path): nothing of it is unpacked on
the host.  Checked:

- while the archive is being read from a pipe (the test holds the pipe
  open: without SIZE the stream is copied to an unnamed O_TMPFILE, with
  SIZE it goes straight into the image) and while mke2fs lays out the
  image (the mke2fs child is stopped), TMPDIR holds no file of the
  archive at all (only mke2fs's configuration, and nothing there is a
  device, FIFO, socket, setuid, setgid or sticky, grants group or other
  users anything, has an extended attribute, or belongs to another user);
- SIGINT, SIGTERM and SIGHUP at either point, and a bad archive, leave
  nothing in TMPDIR, no image, no mke2fs process; the signal is the exit
  status;
- built as root and as an unprivileged user (also under LC_ALL=C), the
  image passes stock e2fsck -fn, and each archive entry read back with
  stock debugfs (type, mode, owner, device numbers, size, data, times,
  extended attributes, link targets, hard links) is what tarfile wrote;
  the two images are byte-identical.
"""
import io
import os
import pathlib
import re
import shutil
import signal
import stat
import subprocess
import tarfile
import tempfile
import time

import pytest

import helpers

NOBODY = 65534
UUID = "0e2b6a3f-9d1c-4a57-8f00-123456789abc"
T0 = 1600000000
CAP = bytes.fromhex("0100000200200000000000000000000000000000")
ACL = "user::rw-,user:1234:r--,group::r--,mask::r--,other::---"


def _info(name, kind, mode, uid=0, gid=0, mtime=T0, **kw):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.uid, ti.gid = uid, gid
    ti.uname = ti.gname = ""
    ti.mtime = mtime
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti


def entries():
    """(TarInfo, data) of the test archive, in archive order."""
    su = b"#!/bin/sh\necho I am root\n"
    return [
        (_info("./", tarfile.DIRTYPE, 0o777), None),
        (_info("bin", tarfile.DIRTYPE, 0o755), None),
        (_info("bin/su", tarfile.REGTYPE, 0o4755, pax_headers={
            "SCHILY.xattr.security.capability": CAP.decode("latin-1"),
            "SCHILY.xattr.trusted.t": "secret",
            "SCHILY.xattr.user.note": "hello"}), su),
        (_info("bin/sg", tarfile.REGTYPE, 0o2711, gid=42), b"sg\n"),
        (_info("bin/su2", tarfile.LNKTYPE, 0o4755, linkname="bin/su"),
         None),
        (_info("tmp", tarfile.DIRTYPE, 0o1777), None),
        (_info("dev", tarfile.DIRTYPE, 0o755), None),
        (_info("dev/null", tarfile.CHRTYPE, 0o666, devmajor=1,
               devminor=3), None),
        (_info("dev/sda", tarfile.BLKTYPE, 0o660, gid=6, devmajor=8,
               devminor=0), None),
        (_info("dev/big", tarfile.CHRTYPE, 0o600, devmajor=300,
               devminor=70000), None),
        (_info("dev/initctl", tarfile.FIFOTYPE, 0o600), None),
        (_info("dev/null2", tarfile.LNKTYPE, 0o666, linkname="dev/null"),
         None),
        (_info("lib", tarfile.SYMTYPE, 0o777, linkname="usr/lib"), None),
        # usr and usr/lib are implied, not listed
        (_info("usr/lib/libc.so", tarfile.REGTYPE, 0o644,
               pax_headers={"mtime": f"{T0 + 5}.123456789"}), b"\x7fELF"),
        (_info("home/u/f", tarfile.REGTYPE, 0o640, uid=100000, gid=200000,
               pax_headers={"SCHILY.acl.access": ACL}), b"u\n"),
        (_info("h\u00e9llo/na\u00efve.txt", tarfile.REGTYPE, 0o644),
         b"utf-8\n"),
        (_info("\u65e5\u672c/\u8a9e.txt", tarfile.REGTYPE, 0o644),
         b"nihongo\n"),
    ]


def archive_bytes():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT,
                      encoding="utf-8") as tf:
        for ti, data in entries():
            if data is not None:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
            else:
                tf.addfile(ti)
    return buf.getvalue()


@pytest.fixture
def work():
    """A directory the unprivileged user owns, outside root's 0700 tmp:
    TMPDIR (tmp/), the archive and the images go there."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="extref-archive-"))
    os.chmod(d, 0o755)
    (d / "tmp").mkdir()
    for p in (d, d / "tmp"):
        os.chown(p, NOBODY, NOBODY)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def as_user(cmd):
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", *cmd]


def mkfs_cmd(img, src):
    return [helpers.binary("mkfs.extref"), "-q", "-U", UUID,
            "-E", f"hash_seed={UUID}", "-d", str(src), str(img)]


def environ(work, **extra):
    env = dict(os.environ, TMPDIR=str(work / "tmp"),
               SOURCE_DATE_EPOCH=str(T0 + 100))
    env.update(extra)
    return env


# --- the host side --------------------------------------------------------

def host_problems(tmpdir, uid):
    """What an unpacked tree under tmpdir shows other users: a list of
    problems, empty when there are none."""
    bad = []
    for dirpath, dirs, files in os.walk(tmpdir):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            kind = stat.S_IFMT(st.st_mode)
            if kind not in (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK):
                bad.append(f"{p}: type {oct(kind)}")
            if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o7077:
                bad.append(f"{p}: mode {oct(st.st_mode)}")
            if st.st_uid != uid:
                bad.append(f"{p}: owner {st.st_uid}")
            if not stat.S_ISLNK(st.st_mode):
                xa = [x for x in os.listxattr(p, follow_symlinks=False)
                      if x != "security.selinux"]
                if xa:
                    bad.append(f"{p}: xattrs {xa}")
    return bad


def processes_with_parent(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def wait_for(cond, what, proc=None, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = cond()
        if got:
            return got
        if proc and proc.poll() is not None:
            pytest.fail(f"mkfs.extref ended (status {proc.returncode}) "
                        f"before {what}: {proc.stderr.read()}")
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def start(work, user, img, src, size=None, **env):
    cmd = mkfs_cmd(img, src) + ([size] if size else [])
    return subprocess.Popen(as_user(cmd) if user else cmd,
                            env=environ(work, **env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            preexec_fn=helpers.default_signals)


def start_from_pipe(work, user, img, size=None):
    """mkfs.extref reading the archive from a FIFO, and the FIFO's write
    end: the test writes all but the end of the archive, so the
    reading waits for more."""
    fifo = work / "in.tar"
    os.mkfifo(fifo)
    os.chown(fifo, NOBODY, NOBODY)
    proc = start(work, user, img, fifo, size)

    def opened():
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:         # no reader yet
            if proc.poll() is not None:
                pytest.fail("mkfs.extref did not read the pipe: " +
                            proc.stderr.read().decode())
            return None
    fd = wait_for(opened, "mkfs.extref to open the pipe")
    os.set_blocking(fd, True)
    return proc, os.fdopen(fd, "wb")


def unpacked_names(work):
    return {n for _, _, files in os.walk(work / "tmp") for n in files}


def pipe_drained(w):
    """Nothing written to the pipe is left unread."""
    import fcntl
    import struct
    import termios
    buf = fcntl.ioctl(w.fileno(), termios.FIONREAD, struct.pack("i", 0))
    return struct.unpack("i", buf)[0] == 0


@pytest.mark.parametrize("size", [None, "64M"], ids=["spooled", "straight"])
@pytest.mark.parametrize("user", [False, True], ids=["root", "user"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM,
                                 signal.SIGHUP],
                         ids=["INT", "TERM", "HUP"])
def test_signal_while_reading(work, user, sig, size):
    data = archive_bytes()
    img = work / "t.img"
    proc, w = start_from_pipe(work, user, img, size)
    try:
        # all but the last byte of the last entry: no end blocks, so
        # the reading waits for more
        w.write(data[:len(data.rstrip(b"\0")) - 1])
        w.flush()
        wait_for(lambda: pipe_drained(w), "the reading", proc)
        # nothing of the archive on the host, not even a placeholder
        assert unpacked_names(work) == set()
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        w.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig, proc.stderr.read()
    assert os.listdir(work / "tmp") == []
    assert not img.exists()


def test_pipe_with_size_read_once(work):
    """With SIZE an archive from a pipe goes straight into the image."""
    data = archive_bytes()
    img = work / "t.img"
    proc, w = start_from_pipe(work, True, img, "64M")
    with w:
        w.write(data)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert os.listdir(work / "tmp") == []
    check_image(img, work)


def stopping_mke2fs(work):
    """An mke2fs (MKFS_EXTREF_MKE2FS) that stops itself before it runs,
    so the test looks at the host while the tree waits to be copied."""
    wrapper = work / "mke2fs-stop"
    wrapper.write_text('#!/bin/sh\nkill -STOP $$\nexec mke2fs "$@"\n')
    os.chmod(wrapper, 0o755)
    return str(wrapper)


def stopped(pid):
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] \
            == "T"
    except OSError:
        return False


@pytest.mark.parametrize("user", [False, True], ids=["root", "user"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM,
                                 signal.SIGHUP],
                         ids=["INT", "TERM", "HUP"])
def test_signal_while_mke2fs_runs(work, user, sig):
    src = work / "a.tar"
    src.write_bytes(archive_bytes())
    img = work / "t.img"
    proc = start(work, user, img, src, MKFS_EXTREF_MKE2FS=stopping_mke2fs(work))
    child = None
    try:
        child = wait_for(lambda: [p for p in processes_with_parent(proc.pid)
                                  if stopped(p)], "mke2fs to stop", proc)[0]
        uid = NOBODY if user else 0
        assert host_problems(work / "tmp", uid) == []
        # mke2fs's configuration, nothing of the archive
        assert all(n.startswith("mkfs.extref.conf.")
                   for n in unpacked_names(work)), unpacked_names(work)
        assert img.exists()
        proc.send_signal(sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if child and os.path.exists(f"/proc/{child}"):
            os.kill(child, signal.SIGKILL)
    assert proc.returncode == -sig, proc.stderr.read()
    # the mke2fs child was killed and reaped, not left stopped
    assert not os.path.exists(f"/proc/{child}")
    assert os.listdir(work / "tmp") == []
    assert not img.exists()


def test_stopped_mke2fs_continued(work):
    """The same stop, then SIGCONT: the build completes (the wrapper is
    a working mke2fs)."""
    src = work / "a.tar"
    src.write_bytes(archive_bytes())
    img = work / "t.img"
    proc = start(work, True, img, src, MKFS_EXTREF_MKE2FS=stopping_mke2fs(work))
    child = wait_for(lambda: [p for p in processes_with_parent(proc.pid)
                              if stopped(p)], "mke2fs to stop", proc)[0]
    os.kill(child, signal.SIGCONT)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert os.listdir(work / "tmp") == []
    check_image(img, work)


@pytest.mark.parametrize("bad", ["dotdot", "truncated", "link_outside",
                                 "through_symlink", "too_small",
                                 "no_ext_attr"])
def test_error_leaves_nothing(work, bad):
    data = archive_bytes()
    size = []
    if bad == "too_small":      # mke2fs fails
        size = ["150K"]
    elif bad == "no_ext_attr":  # the archive's xattrs cannot be written
        size = ["-O", "^ext_attr"]
    elif bad == "truncated":
        data = data[:len(data) // 2 // 512 * 512 + 100]
    else:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w",
                          format=tarfile.PAX_FORMAT) as tf:
            for ti, d in entries()[:8]:
                if d is not None:
                    ti.size = len(d)
                tf.addfile(ti, io.BytesIO(d) if d is not None else None)
            if bad == "dotdot":
                ti = _info("bin/../../escape", tarfile.REGTYPE, 0o644)
            elif bad == "through_symlink":
                tf.addfile(_info("up", tarfile.SYMTYPE, 0o777,
                                 linkname=str(work)))
                ti = _info("up/escape", tarfile.REGTYPE, 0o644)
            else:
                ti = _info("bin/passwd", tarfile.LNKTYPE, 0o644,
                           linkname="/etc/passwd")
            tf.addfile(ti)
        data = buf.getvalue()
    src = work / "bad.tar"
    src.write_bytes(data)
    img = work / "t.img"
    res = subprocess.run(as_user(mkfs_cmd(img, src) + size),
                         env=environ(work), capture_output=True, text=True)
    assert res.returncode == 1, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert str(src) in res.stderr
    assert "mkfs.extref." not in res.stderr     # not the unpacked copy
    assert os.listdir(work / "tmp") == []
    assert not img.exists()
    assert not (work.parent / "escape").exists()
    assert not (work / "escape").exists()


# --- the image side -------------------------------------------------------

def debugfs(img, request):
    return helpers.run(["debugfs", "-R", request, str(img)]).stdout


def stat_fields(img, path):
    """Stock debugfs stat of path: the fields compared."""
    out = debugfs(img, f'stat "{path}"')
    f = {}
    for line in out.splitlines():
        w = line.split()
        if line.startswith("Inode:"):
            m = re.search(r"Type: (.*?)\s+Mode:\s+(\d+)", line)
            f["type"], f["mode"] = m.group(1), int(m.group(2), 8)
        elif line.startswith("User:"):
            f["uid"], f["gid"] = int(w[1]), int(w[3])
            f["size"] = int(w[w.index("Size:") + 1])
        elif line.startswith("Links:"):
            f["links"] = int(w[1])
        elif line.startswith(" mtime:"):
            sec, ns = w[1].split(":")
            f["mtime"] = (int(sec, 16), int(ns, 16) >> 2)
        elif "Device major/minor number:" in line:
            m = re.search(r"number: (\d+):(\d+)", line)
            f["dev"] = (int(m.group(1)), int(m.group(2)))
        elif line.startswith("Fast link dest:"):
            f["target"] = line.split('"')[1]
    return f


def xattr(img, path, name, tmpdir):
    out = tmpdir / "xattr.out"
    res = helpers.run(["debugfs", "-R", f'ea_get -f {out} "{path}" {name}',
                       str(img)], check=False)
    if not out.exists():
        return None, res.stdout + res.stderr
    data = out.read_bytes()
    out.unlink()
    return data, ""


KIND = {tarfile.REGTYPE: "regular", tarfile.DIRTYPE: "directory",
        tarfile.SYMTYPE: "symlink", tarfile.CHRTYPE: "character special",
        tarfile.BLKTYPE: "block special", tarfile.FIFOTYPE: "FIFO"}


def check_image(img, tmpdir):
    """Every archive entry, read back with stock debugfs."""
    helpers.e2fsck_fn(img)
    ents = {ti.name.rstrip("/"): (ti, d) for ti, d in entries()}
    for name, (ti, data) in ents.items():
        path = "/" + name.lstrip("./")
        if ti.type == tarfile.LNKTYPE:
            ti, data = ents[ti.linkname]
        f = stat_fields(img, path)
        assert f["type"] == KIND[ti.type], (name, f)
        assert f["mode"] == ti.mode, (name, oct(f["mode"]))
        assert (f["uid"], f["gid"]) == (ti.uid, ti.gid), (name, f)
        mtime = ti.pax_headers.get("mtime")
        if mtime:
            sec, ns = mtime.split(".")
            assert f["mtime"] == (int(sec), int(ns)), (name, f)
        else:
            assert f["mtime"][0] == ti.mtime, (name, f)
        if ti.type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
            assert f["dev"] == (ti.devmajor, ti.devminor), (name, f)
        if ti.type in (tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE):
            assert f["size"] == 0, (name, f)
        if ti.type == tarfile.SYMTYPE:
            assert f["target"] == ti.linkname, (name, f)
        if data is not None and ti.type == tarfile.REGTYPE:
            got = helpers.run(["debugfs", "-R", f'cat "{path}"', str(img)],
                              text=False).stdout
            assert got == data, name
        for key, val in ti.pax_headers.items():
            if key.startswith("SCHILY.xattr."):
                got, err = xattr(img, path, key[13:], tmpdir)
                assert got == val.encode("latin-1" if "capab" in key
                                         else "utf-8"), (name, key, err)
    # hard links share their inode
    assert stat_fields(img, "/dev/null2")["links"] == 2
    assert stat_fields(img, "/bin/su2")["links"] == 2
    # the implied directories: 0755, root's
    for d in ("/usr", "/usr/lib", "/home", "/home/u"):
        f = stat_fields(img, d)
        assert (f["type"], f["mode"], f["uid"]) == ("directory", 0o755, 0)
    # the POSIX ACL, as a stock tool reads it back
    acl = debugfs(img, 'ea_list "/home/u/f"')
    assert "system.posix_acl_access" in acl, acl
    # the directory entries name the right file types (e2fsck checked
    # them too)
    ls = debugfs(img, "ls -l /dev")
    assert "null2" in ls


@pytest.mark.parametrize("lc", ["C", "C.UTF-8"])
def test_image_as_root_and_as_user(work, lc):
    src = work / "a.tar"
    src.write_bytes(archive_bytes())
    imgs = []
    for user in (False, True):
        img = work / f"{'user' if user else 'root'}.img"
        cmd = mkfs_cmd(img, src)
        res = subprocess.run(as_user(cmd) if user else cmd,
                             env=environ(work, LC_ALL=lc),
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert os.listdir(work / "tmp") == []
        check_image(img, work)
        imgs.append(img)
    assert helpers.sha256(imgs[0]) == helpers.sha256(imgs[1])


def test_acl_read_back_by_the_kernel(work, loop_mount):
    """The archive's POSIX ACL, as getfacl reads it on a kernel mount."""
    src = work / "a.tar"
    src.write_bytes(archive_bytes())
    img = work / "t.img"
    res = subprocess.run(as_user(mkfs_cmd(img, src)), env=environ(work),
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    mnt, _ = loop_mount(img)
    acl = helpers.run(["getfacl", "-cpn", str(mnt / "home/u/f")]).stdout
    assert acl.split() == ["user::rw-", "user:1234:r--", "group::r--",
                           "mask::r--", "other::---"], acl
    st = os.lstat(mnt / "dev/big")
    assert stat.S_ISCHR(st.st_mode)
    assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (300, 70000)
    assert os.getxattr(mnt / "bin/su", "trusted.t") == b"secret"
    assert os.getxattr(mnt / "bin/su", "security.capability") == CAP
    names = set(os.listdir(os.fsencode(mnt)))
    assert "h\u00e9llo".encode() in names and "\u65e5\u672c".encode() in names
