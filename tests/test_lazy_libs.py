"""libarchive and libselinux are opened when used, not linked into every tool.

Linked, libarchive maps some twenty libraries (libxml2, ICU, libstdc++,
the compressors) into each process at start, a few milliseconds of every
mkfs.extref, fsck.extref and debugfs.extref run and of every program that
loads libextref.so; libselinux maps libpcre2 and looks for selinuxfs,
half a millisecond more.  Checked:

- no tool and not libextref.so names libarchive or libselinux among its
  NEEDED libraries (readelf -d), and a run of mkfs.extref maps neither
  (its /proc/PID/maps, read while mke2fs, its child, is stopped);
- with libarchive.so.13 made unloadable (a private mount namespace with
  /dev/null bound over the library file), mkfs.extref -d ARCHIVE fails
  with one line naming the archive and the library, exit status 1 and no
  image left, whether the archive is a file (refused before mke2fs runs,
  when it is measured) or a pipe with SIZE (refused by the build); the same
  archive builds once libarchive is back (stock e2fsck -fn, content read
  back with stock debugfs); an empty mkfs and -d DIRECTORY do not need
  libarchive at all;
- with libselinux.so.1 made unloadable, mkfs.extref --file-contexts FILE
  is refused before the image is touched (one line naming FILE and the
  library, the image's bytes unchanged), and a copy-mode reflink with
  -Z CONTEXT still labels (the context checked by its syntax, as on a
  host without SELinux: stock debugfs reads the label back) and still
  refuses a malformed context, the image unchanged.
"""
import ctypes.util
import io
import os
import shutil
import signal
import subprocess
import tarfile
import time

import pytest

from helpers import (BUILD_DIR, binary, debugfs_cat, describe, e2fsck_fn,
                     run, sha256)

TOOLS = ["mkfs/mkfs.extref", "fsck/fsck.extref", "debug/debugfs.extref",
         "libextref.so"]


def needed(path):
    res = run(["readelf", "-d", str(path)])
    return [line.split("[", 1)[1].split("]", 1)[0]
            for line in res.stdout.splitlines() if "(NEEDED)" in line]


@pytest.mark.parametrize("tool", TOOLS)
def test_no_libarchive_needed(tool):
    path = BUILD_DIR / tool
    assert path.exists(), f"{path} not built"
    libs = needed(path)
    assert "libext2fs.so.2" in libs, libs      # readelf read the file
    assert not [lib for lib in libs
                if "archive" in lib or "selinux" in lib], libs


def _lib_file(soname):
    """The file the dynamic loader opens for soname."""
    res = run(["ldconfig", "-p"])
    for line in res.stdout.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            return os.path.realpath(line.rsplit("=>", 1)[1].strip())
    name = ctypes.util.find_library(soname.split(".")[0][3:])
    pytest.skip(f"{soname} not found by ldconfig ({name})")


def _libarchive_file():
    return _lib_file("libarchive.so.13")


def _tar(path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in (("etc/motd", b"hello from the archive\n"),
                           ("bin/tool", b"\x7fELF" + b"x" * 5000)):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o644
            ti.mtime = 1700000000
            tf.addfile(ti, io.BytesIO(data))
    path.write_bytes(buf.getvalue())


def _without_lib(cmd, lib, input=None):
    """cmd run in a mount namespace where lib reads as an empty file;
    input (bytes) comes through a pipe on its standard input."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    script = ('mount --bind /dev/null "$1" || exit 99; shift; exec "$@"')
    res = subprocess.run(["unshare", "-m", "--propagation", "private",
                           "sh", "-c", script, "sh", lib, *map(str, cmd)],
                          input=input, capture_output=True, timeout=120)
    res.stdout = res.stdout.decode(errors="replace")
    res.stderr = res.stderr.decode(errors="replace")
    return res


def test_missing_libarchive_refused_cleanly(tmp_path):
    lib = _libarchive_file()
    tar = tmp_path / "src.tar"
    _tar(tar)
    mkfs = binary("mkfs.extref")
    img = tmp_path / "a.img"

    res = _without_lib([mkfs, "-q", "-d", tar, img], lib)
    assert res.returncode != 99, "cannot hide libarchive:\n" + describe(res)
    assert res.returncode == 1, describe(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, describe(res)
    assert str(tar) in lines[0] and "libarchive" in lines[0], describe(res)
    assert not img.exists()

    # a pipe with SIZE is not measured first: the build itself refuses
    # (after mke2fs), and the new image is removed
    res = _without_lib([mkfs, "-q", "-d", "/dev/stdin", img, "64M"],
                              lib, input=tar.read_bytes())
    assert res.returncode == 1, describe(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, describe(res)
    assert "/dev/stdin" in lines[0] and "libarchive" in lines[0], \
        describe(res)
    assert not img.exists()

    # neither an empty image nor a directory needs libarchive
    res = _without_lib([mkfs, "-q", img, "64M"], lib)
    assert res.returncode == 0, describe(res)
    e2fsck_fn(img)
    src = tmp_path / "dir"
    (src / "etc").mkdir(parents=True)
    (src / "etc" / "motd").write_bytes(b"from a directory\n")
    dimg = tmp_path / "d.img"
    res = _without_lib([mkfs, "-q", "-d", src, dimg], lib)
    assert res.returncode == 0, describe(res)
    e2fsck_fn(dimg)
    assert debugfs_cat(dimg, "/etc/motd") == b"from a directory\n"

    # libarchive back: the same archive builds
    aimg = tmp_path / "b.img"
    run([mkfs, "-q", "-d", tar, aimg])
    e2fsck_fn(aimg)
    assert debugfs_cat(aimg, "/etc/motd") == b"hello from the archive\n"
    assert debugfs_cat(aimg, "/bin/tool") == b"\x7fELF" + b"x" * 5000


def test_running_mkfs_maps_no_libarchive(tmp_path):
    """The process itself, not only its ELF header: stop mke2fs (the
    child) and read the parent's mappings while it waits."""
    stub = tmp_path / "mke2fs"
    stub.write_text("#!/bin/sh\nkill -STOP $$\nexec mke2fs \"$@\"\n")
    stub.chmod(0o755)
    img = tmp_path / "a.img"
    env = dict(os.environ, MKFS_EXTREF_MKE2FS=str(stub))
    p = subprocess.Popen([binary("mkfs.extref"), "-q", str(img), "16M"],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        maps = None
        for _ in range(500):
            kids = _children(p.pid)
            if kids and _state(kids[0]) == "T":
                with open(f"/proc/{p.pid}/maps") as f:
                    maps = f.read()
                os.kill(kids[0], signal.SIGCONT)
                break
            time.sleep(0.01)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert maps is not None, "mke2fs never stopped"
    assert "libext2fs" in maps                 # the maps were read
    assert "libarchive" not in maps and "libselinux" not in maps
    assert p.returncode == 0, err
    e2fsck_fn(img)


CTX = "system_u:object_r:copied_t:s0"


def test_missing_libselinux(tmp_path):
    lib = _lib_file("libselinux.so.1")
    mkfs, shell = binary("mkfs.extref"), binary("debugfs.extref")
    fc = tmp_path / "file_contexts"
    fc.write_text("/.*  system_u:object_r:default_t:s0\n")
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_bytes(os.urandom(9000))

    # --file-contexts: refused at option time, nothing touched
    img = tmp_path / "a.img"
    with open(img, "wb") as f:
        f.write(os.urandom(4096))
        f.truncate(32 << 20)
    before = sha256(img)
    res = _without_lib([mkfs, "-q", "-F", "-d", src,
                               "--file-contexts", fc, img], lib)
    assert res.returncode != 99, "cannot hide libselinux:\n" + describe(res)
    assert res.returncode == 1, describe(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, describe(res)
    assert str(fc) in lines[0] and "libselinux" in lines[0], describe(res)
    assert sha256(img) == before

    # a label by syntax: written, and read back by stock debugfs
    run([mkfs, "-q", "-F", "-d", src, img, "32M"])
    res = _without_lib([shell, "-w", img, "-R",
                               f"reflink -Z {CTX} /d/f /lab"], lib)
    assert res.returncode == 0, describe(res)
    e2fsck_fn(img)
    res = run(["debugfs", "-R", "ea_get /lab security.selinux", str(img)])
    assert CTX in res.stdout, describe(res)
    assert debugfs_cat(img, "/lab") == (src / "d" / "f").read_bytes()
    before = sha256(img)
    res = _without_lib([shell, "-w", img, "-R",
                               "reflink -Z a:b:c /d/f /x"], lib)
    assert res.returncode != 0 and "-Z" in res.stderr, describe(res)
    assert sha256(img) == before


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
