"""pytest configuration for the extref integration tests.

Run from the repository root with Debian's pytest:

    /usr/bin/python3 -m pytest tests/

EXTREF_BUILD_DIR selects the build directory (default: the repository root).
A missing binary fails the tests with "run make first"; it never skips them.
"""

import contextlib
import sys
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
