"""libarchive is opened when an archive is read, not linked into every tool.

Linked, it maps some twenty libraries (libxml2, ICU, libstdc++, the
compressors) into each process at start, a few milliseconds of every
mkfs.extref, fsck.extref and debugfs.extref run and of every program that
loads libextref.so.  Checked:

- no tool and not libextref.so names libarchive among its NEEDED
  libraries (readelf -d), and a run of mkfs.extref maps no libarchive
  (its /proc/PID/maps, read while mke2fs, its child, is stopped);
- with libarchive.so.13 made unloadable (a private mount namespace with
  /dev/null bound over the library file), mkfs.extref -d ARCHIVE fails
  with one line naming the archive and the library, exit status 1 and no
  image left, whether the archive is a file (refused before mke2fs runs,
  when it is measured) or a pipe with SIZE (refused by the build); the same
  archive builds once libarchive is back (stock e2fsck -fn, content read
  back with stock debugfs); an empty mkfs and -d DIRECTORY do not need
  libarchive at all.
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
                     run)

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
    assert not [lib for lib in libs if "archive" in lib], libs


def _libarchive_file():
    """The file the dynamic loader opens for libarchive.so.13."""
    res = run(["ldconfig", "-p"])
    for line in res.stdout.splitlines():
        if line.strip().startswith("libarchive.so.13 ") and "x86-64" in line:
            return os.path.realpath(line.rsplit("=>", 1)[1].strip())
    name = ctypes.util.find_library("archive")
    pytest.skip(f"libarchive.so.13 not found by ldconfig ({name})")


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


def _without_libarchive(cmd, lib, input=None):
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

    res = _without_libarchive([mkfs, "-q", "-d", tar, img], lib)
    assert res.returncode != 99, "cannot hide libarchive:\n" + describe(res)
    assert res.returncode == 1, describe(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, describe(res)
    assert str(tar) in lines[0] and "libarchive" in lines[0], describe(res)
    assert not img.exists()

    # a pipe with SIZE is not measured first: the build itself refuses
    # (after mke2fs), and the new image is removed
    res = _without_libarchive([mkfs, "-q", "-d", "/dev/stdin", img, "64M"],
                              lib, input=tar.read_bytes())
    assert res.returncode == 1, describe(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, describe(res)
    assert "/dev/stdin" in lines[0] and "libarchive" in lines[0], \
        describe(res)
    assert not img.exists()

    # neither an empty image nor a directory needs libarchive
    res = _without_libarchive([mkfs, "-q", img, "64M"], lib)
    assert res.returncode == 0, describe(res)
    e2fsck_fn(img)
    src = tmp_path / "dir"
    (src / "etc").mkdir(parents=True)
    (src / "etc" / "motd").write_bytes(b"from a directory\n")
    dimg = tmp_path / "d.img"
    res = _without_libarchive([mkfs, "-q", "-d", src, dimg], lib)
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
    assert "libarchive" not in maps
    assert p.returncode == 0, err
    e2fsck_fn(img)


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
