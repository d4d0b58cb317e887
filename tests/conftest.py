"""pytest configuration for the extref integration tests.

Run from the repository root with Debian's pytest:

    /usr/bin/python3 -m pytest tests/

EXTREF_BUILD_DIR selects the build directory (default: helpers.BUILD_DIR).
A missing binary fails the tests with "run make first"; it never skips them.
"""

import contextlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers  # noqa: E402


def pytest_report_header(config):
    return [f"extref build dir: {helpers.BUILD_DIR}",
            f"loop mounts: {helpers.loop_skip_reason() or 'available'}"]


@pytest.fixture(scope="session")
def mkfs_bin():
    """Path of mkfs.extref; fails (not skips) when it has not been built."""
    return helpers.binary("mkfs.extref")


@pytest.fixture
def run():
    return helpers.run


@pytest.fixture
def mkfs(mkfs_bin):
    return helpers.mkfs


@pytest.fixture
def e2fsck_fn():
    return helpers.e2fsck_fn


@pytest.fixture
def loop_mount(tmp_path):
    """Factory: loop_mount(img, options="ro", check=True) -> mountpoint.

    Mounts now; the fixture teardown always unmounts and detaches the loop
    device, even when the test failed.  Skips (with the reason) when loop
    mounts are impossible here (not root, no /dev/loop-control).
    """
    helpers.require_loop()
    stack = contextlib.ExitStack()
    count = [0]

    def do_mount(img, options="ro", check=True, extra_args=()):
        count[0] += 1
        mnt = tmp_path / f"mnt{count[0]}"
        res = stack.enter_context(
            helpers.loop_mount(img, mnt, options=options, check=check,
                               extra_args=extra_args))
        return mnt, res

    with stack:
        yield do_mount


@pytest.fixture(scope="session")
def san_build():
    """A copy of the tree built with --enable-sanitizers in a temp dir (once
    a session): paths of its fsck.extref and debugfs.extref."""
    res = subprocess.run(["gcc", "-fsanitize=address,undefined", "-x", "c",
                          "-o", "/dev/null", "-"],
                         input="int main(void){return 0;}",
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip("the C compiler cannot link -fsanitize=address,undefined: "
                    + res.stderr.strip()[:200])
    work = Path(tempfile.mkdtemp(prefix="extref-asan-"))
    helpers.copy_sources(work)
    # Built out of tree (a build directory beside the sources), which
    # also keeps that way of building working.
    build = work / "build"
    build.mkdir()
    before = sorted(p.relative_to(work) for p in work.rglob("*")
                    if "build" not in p.relative_to(work).parts)
    for cmd, cwd in ((["sh", "./autogen.sh"], work),
                     (["sh", "../configure", "--enable-sanitizers"], build),
                     (["make", "-j2", "fsck/fsck.extref",
                       "debug/debugfs.extref", "tests/unit/trusted_op"],
                      build)):
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                             timeout=900)
        assert res.returncode == 0, helpers.describe(res)
    after = sorted(p.relative_to(work) for p in work.rglob("*")
                   if "build" not in p.relative_to(work).parts)
    made = set(after) - set(before)
    # autogen.sh's outputs belong to the source tree; nothing else may land
    assert {str(p) for p in made} <= {"configure", "autom4te.cache"} | {
        str(p) for p in made if p.parts[0] == "autom4te.cache"}, made
    yield {"fsck": str(build / "fsck/fsck.extref"),
           "debugfs": str(build / "debug/debugfs.extref"),
           "trusted_op": str(build / "tests/unit/trusted_op")}
    shutil.rmtree(work, ignore_errors=True)
