"""How mkfs.extref starts mke2fs (libfs/builder/tool.c, mke2fs.c and
mke2fs_run.c; mkfs/mke2fs_run.c).

mke2fs is started with posix_spawn, and its configuration is a memory
file it reads through /proc/self/fd (nothing in TMPDIR).  A wrapper
mke2fs (MKFS_EXTREF_MKE2FS) records what it was given, then runs the real
one.  Checked:

- its environment: ours, less MKE2FS_SYNC, MKE2FS_FIRST_META_BG,
  MKE2FS_DEVICE_SECTSIZE, MKE2FS_DEVICE_PHYS_SECTSIZE and a
  E2FSPROGS_FAKE_TIME of our own, plus LC_ALL=C, MKE2FS_CONFIG naming a
  readable memory file holding our configuration ([defaults] and the ext4
  type), and E2FSPROGS_FAKE_TIME from SOURCE_DATE_EPOCH when it is set;
- standard input /dev/null, no signal blocked, TMPDIR empty while it runs
  and after; the image is made (stock e2fsck -fn) with the block size
  and inode size of our configuration (dumpe2fs), not the host's;
- an mke2fs that cannot be started: one line naming the image and
  "cannot run mke2fs", exit status 1, no image left;
- without a memory file for the configuration (LD_PRELOAD), a temporary
  file in TMPDIR while mke2fs runs with the signals held, gone after.
"""
import os
import re
import shutil
import signal
import subprocess

import pytest

from helpers import binary, describe, dumpe2fs_header, e2fsck_fn


def _wrapper(tmp_path):
    rec = tmp_path / "rec"
    rec.mkdir()
    w = tmp_path / "mke2fs-rec"
    # the mask first, with builtins only: the shell blocks every signal
    # for a moment around each fork, which a child reading it would see
    w.write_text(f"""#!/bin/sh
while read -r k v; do case $k in SigBlk:|SigIgn:) echo "$k$v";; esac
done < /proc/$$/status > {rec}/sig
env > {rec}/env
readlink /proc/$$/fd/0 > {rec}/stdin
cat "$MKE2FS_CONFIG" > {rec}/conf
readlink "$MKE2FS_CONFIG" > {rec}/conf_link
ls -A "$TMPDIR" > {rec}/tmpdir
exec mke2fs "$@"
""")
    w.chmod(0o755)
    return w, rec


def _make_clean(tmp_path, env):
    """A 64M image made with env, stock e2fsck -fn clean."""
    img = tmp_path / "a.img"
    res = subprocess.run([binary("mkfs.extref"), "-q", str(img), "64M"],
                         env=env, capture_output=True, text=True)
    assert res.returncode == 0, describe(res)
    e2fsck_fn(img)
    return img


def _env(path):
    out = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


@pytest.mark.parametrize("epoch", [None, "1700000000"])
def test_mke2fs_environment(tmp_path, epoch):
    w, rec = _wrapper(tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = dict(os.environ, MKFS_EXTREF_MKE2FS=str(w), TMPDIR=str(tmpdir),
               MKE2FS_SYNC="1", MKE2FS_FIRST_META_BG="3",
               MKE2FS_DEVICE_SECTSIZE="4096",
               MKE2FS_DEVICE_PHYS_SECTSIZE="4096",
               E2FSPROGS_FAKE_TIME="12345", LC_ALL="POSIX",
               MKE2FS_CONFIG="/nonexistent", EXTREF_TEST_MARK="kept")
    env.pop("SOURCE_DATE_EPOCH", None)
    if epoch:
        env["SOURCE_DATE_EPOCH"] = epoch
    img = _make_clean(tmp_path, env)

    got = _env(rec / "env")
    for var in ("MKE2FS_SYNC", "MKE2FS_FIRST_META_BG",
                "MKE2FS_DEVICE_SECTSIZE", "MKE2FS_DEVICE_PHYS_SECTSIZE"):
        assert var not in got, var
    assert got.get("EXTREF_TEST_MARK") == "kept"
    assert got.get("LC_ALL") == "C"
    if epoch:
        assert got.get("E2FSPROGS_FAKE_TIME") == epoch
    else:
        assert "E2FSPROGS_FAKE_TIME" not in got
    assert re.fullmatch(r"/proc/self/fd/\d+", got["MKE2FS_CONFIG"]), got
    assert (rec / "conf_link").read_text().startswith("/memfd:")
    conf = (rec / "conf").read_text()
    assert conf.startswith("[defaults]") and "ext4 = {" in conf, conf
    assert (rec / "stdin").read_text().strip() == "/dev/null"
    sig = dict(line.split(":") for line in
               (rec / "sig").read_text().splitlines())
    assert int(sig["SigBlk"], 16) == 0, sig
    assert (rec / "tmpdir").read_text() == ""
    assert os.listdir(tmpdir) == []
    # our configuration's geometry: 64M is "small" there (1 KiB blocks)
    h = dumpe2fs_header(img)
    assert h["Block size"] == "1024" and h["Inode size"] == "256", h


def test_mke2fs_cannot_start(tmp_path):
    img = tmp_path / "a.img"
    env = dict(os.environ, MKFS_EXTREF_MKE2FS=str(tmp_path / "missing"))
    res = subprocess.run([binary("mkfs.extref"), "-q", str(img), "64M"],
                         env=env, capture_output=True, text=True)
    assert res.returncode == 1, describe(res)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, describe(res)
    assert "cannot run mke2fs" in lines[0] and str(img) in lines[0], \
        describe(res)
    assert not img.exists()


_NO_MEMFD = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
int memfd_create(const char *name, unsigned int flags)
{
	int (*real)(const char *, unsigned int) =
		(int (*)(const char *, unsigned int))dlsym(RTLD_NEXT,
							   "memfd_create");
	if (!strcmp(name, "mkfs.extref.conf")) {
		errno = ENOSYS;
		return -1;
	}
	return real(name, flags);
}
"""


def test_configuration_without_a_memory_file(tmp_path):
    """Where the configuration's memory file cannot be made (memfd_create
    failing for it, through LD_PRELOAD), it is a temporary file in
    TMPDIR that exists only while mke2fs runs with the terminating
    signals held, and is gone after; the image is made from it."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the LD_PRELOAD shim")
    src = tmp_path / "nomemfd.c"
    src.write_text(_NO_MEMFD)
    shim = tmp_path / "nomemfd.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(shim), str(src),
                    "-ldl"], check=True)
    w, rec = _wrapper(tmp_path)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    # a sanitizer build's runtime wants to come first: our shim before it
    # is what this test means, so ASan is told not to mind the order
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = dict(os.environ, MKFS_EXTREF_MKE2FS=str(w), TMPDIR=str(tmpdir),
               LD_PRELOAD=str(shim),
               ASAN_OPTIONS=f"{asan}:verify_asan_link_order=0".lstrip(":"))
    img = _make_clean(tmp_path, env)
    got = _env(rec / "env")
    assert got["MKE2FS_CONFIG"].startswith(str(tmpdir) +
                                           "/mkfs.extref.conf."), got
    conf = (rec / "conf").read_text()
    assert conf.startswith("[defaults]") and "ext4 = {" in conf, conf
    sig = dict(line.split(":") for line in
               (rec / "sig").read_text().splitlines())
    held = int(sig["SigBlk"], 16)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert held & (1 << (s - 1)), sig
    assert os.listdir(tmpdir) == []
    h = dumpe2fs_header(img)
    assert h["Block size"] == "1024" and h["Inode size"] == "256", h
