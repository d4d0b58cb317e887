"""pytest configuration for the extref integration tests.

Run from the repository root with Debian's pytest:

    /usr/bin/python3 -m pytest tests/
    /usr/bin/python3 -m pytest -m "not slow" tests/     # the fast part

EXTREF_BUILD_DIR selects the build directory (default: helpers.BUILD_DIR).
A missing binary fails the tests with "run make first"; it never skips them.
The markers are described in tests/README and registered below; at the
end of a run the time each file took is printed (slowest first), with
the tests over SLOW_SECONDS not marked slow.
"""

import contextlib
import functools
import inspect
import re
import time
from collections import defaultdict
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import helpers  # noqa: E402
from prebuild import Prebuild  # noqa: E402


MARKERS = {
    "slow": "takes more than about 5 s (deselect with -m 'not slow')",
    "long": "a long run, left out of make check (bench/long_tests.sh)",
    "crash": "crashes a tool at its writes (fault-injection builds)",
    "root": "needs root (ownership, another user, mounts)",
    "loop": "mounts an image on a loop device (root, /dev/loop-control)",
    "sanitizers": "uses the copy of the tree built with --enable-sanitizers",
}
SLOW_SECONDS = 5.0


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    config.stash[_TIMES] = defaultdict(float)
    config.stash[_UNMARKED] = {}


# What the test's own code (and the module's functions it calls by name)
# says it needs: loop mounts through helpers.loop_mount, the loop_mount
# fixture or a losetup; root through another user or a chown.
_LOOP = re.compile(r"loop_mount|require_loop|losetup|\"mount\"")
_ROOT = re.compile(r"setpriv|as_user|geteuid|chown|NOBODY")


@functools.lru_cache(maxsize=None)
def _source(fn):
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def _source_of(item):
    fn = getattr(item, "function", None)
    if fn is None:
        return ""
    text = _source(fn)
    for name in set(re.findall(r"\b([A-Za-z_]\w*)\(", text)):
        f = getattr(item.module, name, None)
        if inspect.isfunction(f) and f.__module__ == item.module.__name__:
            text += _source(f)
    return text


def pytest_collection_modifyitems(config, items):
    for item in items:
        text = _source_of(item)
        if "loop_mount" in item.fixturenames or _LOOP.search(text):
            item.add_marker(pytest.mark.loop)
            item.add_marker(pytest.mark.root)
        elif _ROOT.search(text):
            item.add_marker(pytest.mark.root)
        if "san_build" in item.fixturenames:
            item.add_marker(pytest.mark.sanitizers)
            item.add_marker(pytest.mark.slow)


_TIMES = pytest.StashKey()
_UNMARKED = pytest.StashKey()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = time.monotonic()
    yield
    took = time.monotonic() - t0
    item.config.stash[_TIMES][item.location[0]] += took
    if took > SLOW_SECONDS and item.get_closest_marker("slow") is None:
        item.config.stash[_UNMARKED][item.nodeid] = took


def pytest_terminal_summary(terminalreporter, config):
    times = config.stash.get(_TIMES, {})
    if not times:
        return
    tr = terminalreporter
    tr.section("seconds per file")
    for path, secs in sorted(times.items(), key=lambda kv: -kv[1]):
        tr.write_line(f"{secs:8.1f}  {path}")
    tr.write_line(f"{sum(times.values()):8.1f}  (all)")
    unmarked = config.stash[_UNMARKED]
    if unmarked:
        tr.section(f"over {SLOW_SECONDS:.0f} s, not marked slow")
        for nodeid, secs in sorted(unmarked.items(), key=lambda kv: -kv[1]):
            tr.write_line(f"{secs:8.1f}  {nodeid}")


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


def _tree_files(work):
    return sorted(p.relative_to(work) for p in work.rglob("*")
                  if "build" not in p.relative_to(work).parts)


def _san_plan(work):
    # Built out of tree (a build directory beside the sources), which
    # also keeps that way of building working.
    build = work / "build"
    build.mkdir()
    before = _tree_files(work)

    def check():
        made = set(_tree_files(work)) - set(before)
        # autogen.sh's outputs belong to the source tree; nothing else
        assert {str(p) for p in made} <= {"configure", "autom4te.cache"} | {
            str(p) for p in made if p.parts[0] == "autom4te.cache"}, made
    return ([(["sh", "./autogen.sh"], work),
             (["sh", "../configure", "--enable-sanitizers"], build),
             (["make", "-j2", "fsck/fsck.extref", "debug/debugfs.extref",
               "tests/unit/trusted_op"], build)], check)


def _san_result(work):
    build = work / "build"
    return {"fsck": str(build / "fsck/fsck.extref"),
            "debugfs": str(build / "debug/debugfs.extref"),
            "trusted_op": str(build / "tests/unit/trusted_op")}


def _prod_plan(work):
    return ([(["sh", "./autogen.sh"], work),
             (["sh", "./configure", "--enable-werror"], work),
             (["make", "-j2", "CFLAGS=-O0", "libextref.a",
               "debug/debugfs.extref"], work)], lambda: None)


_PREBUILDS = {
    "san_build": Prebuild("extref-asan-", _san_plan, _san_result),
    "production_build": Prebuild(
        "extref-prod-", _prod_plan,
        lambda work: {"lib": work / "libextref.a",
                      "debugfs": str(work / "debug/debugfs.extref")}),
}


def _sanitizers_link():
    res = subprocess.run(["gcc", "-fsanitize=address,undefined", "-x", "c",
                          "-o", "/dev/null", "-"],
                         input="int main(void){return 0;}",
                         capture_output=True, text=True)
    return res.returncode == 0, res.stderr.strip()[:200]


def pytest_collection_finish(session):
    """Start the builds the selected tests need (tests/prebuild.py)."""
    if session.config.option.collectonly:
        return
    need = {name for item in session.items for name in _PREBUILDS
            if name in item.fixturenames}
    if "san_build" in need and not _sanitizers_link()[0]:
        need.discard("san_build")
    for name in sorted(need):
        _PREBUILDS[name].start()


def pytest_sessionfinish(session):
    for pre in _PREBUILDS.values():
        pre.stop()


@pytest.fixture(scope="session")
def san_build():
    """A copy of the tree built with --enable-sanitizers in a temp dir (once
    a session, in the background from the session's start): paths of its
    fsck.extref and debugfs.extref."""
    ok, why = _sanitizers_link()
    if not ok:
        pytest.skip("the C compiler cannot link -fsanitize=address,undefined: "
                    + why)
    return _PREBUILDS["san_build"].wait()


@pytest.fixture(scope="session")
def production_build():
    """libextref.a and debugfs.extref of a copy of the tree configured
    without --enable-fault-injection (the default), built once a session
    in a temp dir (-O0 to keep it short; in the background from the
    session's start)."""
    return _PREBUILDS["production_build"].wait()
