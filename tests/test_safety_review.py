"""Fixes from reading the code (the safety review, section 5).

- A production build (configure without --enable-fault-injection) holds
  no fault-injecting io manager and no allocation hook: EXTREF_FAULT and
  EXTREF_FAULT_NOMEM in the environment change nothing.  A copy of the
  tree is built that way (module fixture, in a temporary directory, as
  test_fuzz.py builds its sanitizer copy; -O0 to keep it short).
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import helpers


def _copy_sources(work):
    src = helpers.REPO_ROOT
    files = subprocess.run(
        ["git", "-C", str(src), "ls-files", "-z", "--cached", "--others",
         "--exclude-standard"],
        capture_output=True, check=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        p = src / f.decode()
        if p.is_file():
            dst = work / f.decode()
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dst)


@pytest.fixture(scope="module")
def production_build():
    """libextref.a and debugfs.extref of a build configured without
    --enable-fault-injection (the default)."""
    work = Path(tempfile.mkdtemp(prefix="extref-prod-"))
    try:
        _copy_sources(work)
        for cmd in (["sh", "./autogen.sh"],
                    ["sh", "./configure", "--enable-werror"],
                    ["make", "-j2", "CFLAGS=-O0", "libextref.a",
                     "debug/debugfs.extref"]):
            res = subprocess.run(cmd, cwd=work, capture_output=True,
                                 text=True, timeout=900)
            assert res.returncode == 0, helpers.describe(res)
        yield {"lib": work / "libextref.a",
               "debugfs": str(work / "debug/debugfs.extref")}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_production_build_has_no_fault_hooks(production_build):
    """No symbol of faultio.c in the library, and nothing refers to one."""
    res = helpers.run(["nm", str(production_build["lib"])])
    names = [line.split()[-1] for line in res.stdout.splitlines()
             if len(line.split()) >= 2]
    assert "ext2fs_open2" in names     # the listing is a real one
    bad = [n for n in names if "fault" in n.lower()]
    assert bad == [], bad


def test_production_build_ignores_extref_fault(production_build, tmp_path):
    """EXTREF_FAULT=crash=0 (every write dropped, in a test build) and
    EXTREF_FAULT_NOMEM=1+ (every array growth fails) have no effect: the
    write lands and reads back with stock debugfs; a malformed setting
    is not even parsed."""
    dbg = production_build["debugfs"]
    img = tmp_path / "p.img"
    helpers.mkfs(img, "8M", "-q")
    data = tmp_path / "data"
    data.write_bytes(os.urandom(20000))
    for i, env in enumerate(({"EXTREF_FAULT": "crash=0"},
                             {"EXTREF_FAULT_NOMEM": "1+"},
                             {"EXTREF_FAULT": "bogus",
                              "EXTREF_FAULT_NOMEM": "x"})):
        res = helpers.run([dbg, "-w", "-R", f"write {data} /f{i}", str(img)],
                          check=False, env=env)
        assert res.returncode == 0, (env, helpers.describe(res))
        assert "EXTREF_FAULT" not in res.stderr, (env, res.stderr)
        got = helpers.debugfs(img, f"cat /f{i}", text=False).stdout
        assert got == data.read_bytes(), env
    helpers.e2fsck_fn(img)
