"""Fixes from reading the code (the safety review, section 5).

- A production build (configure without --enable-fault-injection) holds
  no fault-injecting io manager and no allocation hook: EXTREF_FAULT and
  EXTREF_FAULT_NOMEM in the environment change nothing.  A copy of the
  tree is built that way (conftest.py's production_build, once a
  session, in a temporary directory).
- An allocation failure while fsck.extref loads the tree's records
  (fsck_compare.c, load_rec) or defers a problem (report) is an
  operational error (exit 8), never a list of problems that are not
  there nor a problem silently dropped.  Allocations are failed one at a
  time with EXTREF_FAULT_NOMEM=N (the N-th array growth fails; a test
  build's hook, libfs/txn/faultio.c), for every N the run reaches.
- A reflink whose second range fails to be raised, and whose undo of the
  first fails too (EXTREF_FAULT_NOMEM=N-M), leaves the tree marked
  broken: nothing commits the first range's raised count (ops/counts.c).
- The image builder's deduplication returns the error of an inode scan
  that does not open, and closes no scan it never opened (build/
  dedupe_fs.c; tests/unit/dedupe_scan_fail, which crashed before).
- fsck.extref counts the mappings of an inode whose checksum fails
  (made with stock debugfs "sif <INO> checksum 0"), as e2fsck's pass 1
  reads such an inode: with -E no_e2fsck -y the counts stay at the
  mappings (check/fsck_scan.c).
"""

import os
import re
import shutil

import pytest

import helpers


@pytest.mark.slow
def test_production_build_has_no_fault_hooks(production_build):
    """No symbol of faultio.c in the library, and nothing refers to one."""
    res = helpers.run(["nm", str(production_build["lib"])])
    names = [line.split()[-1] for line in res.stdout.splitlines()
             if len(line.split()) >= 2]
    assert "ext2fs_open2" in names     # the listing is a real one
    # ("default" is no fault hook: dedup_default, the builder's)
    bad = [n for n in names if "fault" in n.lower().replace("default", "")]
    assert bad == [], bad


@pytest.mark.slow
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


# ----- allocation failures in fsck.extref -----

_NO_FAULTS = helpers.fault_injection_skip_reason()
needs_faults = pytest.mark.skipif(_NO_FAULTS is not None,
                                  reason=_NO_FAULTS or "")

PROBLEM = re.compile(r"^(0x[0-9a-f]{4}) .*?: (blocks [0-9-]+: recorded \d+, "
                     r"mapped [^,]+),", re.M)


def _shell(img, cmds, tmp_path):
    script = tmp_path / "cmds"
    script.write_text("\n".join(cmds) + "\n")
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-f", str(script),
                 str(img)])


@pytest.fixture(scope="module")
def many_records(tmp_path_factory):
    """60 files of 4 blocks, each reflinked once (count 2) or twice
    (count 3), alternately: 60 records, more than one growth of every
    array that holds them."""
    tmp = tmp_path_factory.mktemp("records")
    img = tmp / "m.img"
    helpers.mkfs(img, "16M", "-q")
    src = tmp / "s"
    src.write_bytes(os.urandom(4096))
    cmds = []
    for i in range(60):
        cmds += [f"write {src} /f{i}", f"reflink /f{i} /r{i}"]
        if i % 2:
            cmds.append(f"reflink /f{i} /q{i}")
    _shell(img, cmds, tmp)
    return img


def _fsck_n(img, nomem=None):
    env = {"EXTREF_FAULT_NOMEM": str(nomem)} if nomem else {}
    return helpers.run([helpers.binary("fsck/fsck.extref"), "-n", "-f", "-v",
                        "-E", "no_e2fsck", str(img)], check=False, env=env)


def _sweep_nomem(img):
    """Yield (N, result) for every allocation the clean run makes."""
    for n in range(1, 1000):
        res = _fsck_n(img, n)
        if f"EXTREF_FAULT_NOMEM: growth {n} fails" not in res.stderr:
            assert res.returncode in (0, 4), helpers.describe(res)
            return
        yield n, res
    raise AssertionError("more than 999 growths: the hook never stops?")


def _problems(out):
    return sorted(PROBLEM.findall(out))


@needs_faults
def test_fsck_allocation_failure_reports_no_false_problems(many_records):
    """A clean image: every failed allocation gives exit 8 and a memory
    error, or (an allocation whose failure is survived, e.g. the table of
    names) a clean result; never a problem."""
    clean = _fsck_n(many_records)
    assert clean.returncode == 0, helpers.describe(clean)
    assert "60 records; 0 problems" in clean.stdout, clean.stdout
    seen = 0
    for n, res in _sweep_nomem(many_records):
        seen += 1
        assert _problems(res.stdout) == [], f"N={n}: " + helpers.describe(res)
        if res.returncode != 0:
            assert res.returncode == 8, f"N={n}: " + helpers.describe(res)
            assert "Memory allocation failed" in res.stderr, res.stderr
    assert seen > 10


@needs_faults
def test_fsck_allocation_failure_drops_no_problem(many_records, tmp_path):
    """30 of the 60 records with a count too high: every failed
    allocation gives exit 8 and a memory error, or all 30 problems (the
    same codes and ranges; paths may fall back to inode numbers)."""
    img = tmp_path / "p.img"
    shutil.copyfile(many_records, img)
    _shell(img, [f"set_tree_entry 2 {i} count 9" for i in range(0, 60, 2)],
           tmp_path)
    clean = _fsck_n(img)
    assert clean.returncode == 4, helpers.describe(clean)
    want = _problems(clean.stdout)
    assert len(want) == 30 and all(p[0] == "0x0302" for p in want), want
    for n, res in _sweep_nomem(img):
        if res.returncode == 8:
            assert "Memory allocation failed" in res.stderr, res.stderr
            continue
        assert res.returncode == 4, f"N={n}: " + helpers.describe(res)
        assert _problems(res.stdout) == want, f"N={n}: " + res.stdout


# ----- a failed undo in a failed operation -----

@needs_faults
def test_failed_undo_commits_nothing(tmp_path):
    """/a has two extents; reflink /a /b raises one range, then the next.
    Growths N and N+1 fail (the second raise, then the undo of the first,
    for some N): whatever fails, no count problem may be left (stock
    e2fsck clean, fsck.extref without any 0x03xx problem; a commit cut
    short at close may leak a tree block, 0x0203, which is not this
    test's concern)."""
    img = tmp_path / "u.img"
    helpers.mkfs(img, "8M", "-q")
    src = tmp_path / "s"
    src.write_bytes(os.urandom(16384))
    _shell(img, [f"write {src} /a", f"write {src} /spacer",
                 f"write {src} /c", "clone_range /c 0 /a 16384 16384"],
           tmp_path)
    stat = helpers.run([helpers.binary("debugfs.extref"), "-R", "stat /a",
                        str(img)]).stdout
    assert len(re.findall(r"^\s+lblk ", stat, re.M)) == 2, stat
    base = img.read_bytes()
    t = tmp_path / "t.img"
    failed_ops = 0
    for n in range(1, 200):
        t.write_bytes(base)
        res = helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                           "reflink /a /b", str(t)], check=False,
                          env={"EXTREF_FAULT_NOMEM": f"{n}-{n + 1}"})
        if "EXTREF_FAULT_NOMEM" not in res.stderr:
            assert res.returncode == 0, helpers.describe(res)
            break
        if res.returncode != 0:
            failed_ops += 1
        helpers.e2fsck_fn(t)
        chk = _fsck_n(t)
        bad = [line for line in chk.stdout.splitlines()
               if line.startswith("0x03")]
        assert bad == [], f"N={n}-{n + 1}: " + helpers.describe(res) + \
            "\n" + chk.stdout
    else:
        raise AssertionError("the reflink never ran without a fault")
    assert failed_ops >= 3


# ----- dedupe: an inode scan that does not open -----

def test_dedupe_scan_open_failure(tmp_path):
    """ext2fs_open_inode_scan fails (journal_dev set in memory): the
    error comes back, nothing is closed that was never opened (with
    valgrind, when installed, no uninitialised value is used either), and
    the image is unchanged."""
    img = tmp_path / "d.img"
    helpers.mkfs(img, "8M", "-q")
    src = tmp_path / "s"
    src.write_bytes(os.urandom(8192))
    _shell(img, [f"write {src} /a", f"write {src} /b"], tmp_path)
    before = helpers.sha256(img)
    prog = helpers.binary("tests/unit/dedupe_scan_fail")
    res = helpers.run([prog, str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert "dedupe_scan_fail: OK" in res.stdout
    # (valgrind cannot run a program built with AddressSanitizer)
    if shutil.which("valgrind") and not helpers.sanitized_build():
        res = helpers.run(["valgrind", "-q", "--error-exitcode=9",
                           "--leak-check=no", prog, str(img)], check=False)
        assert res.returncode == 0, helpers.describe(res)
    assert helpers.sha256(img) == before


# ----- an inode whose checksum fails -----

def _refcounts(img):
    out = helpers.run([helpers.binary("debugfs.extref"), "-R", "refcount",
                       str(img)]).stdout
    return [tuple(map(int, line.split())) for line in out.splitlines()
            if re.fullmatch(r"\d+ +\d+ +\d+", line.strip())]


@pytest.mark.parametrize("e2fsck_first", [False, True],
                         ids=["no_e2fsck", "e2fsck_first"])
def test_inode_with_bad_checksum_keeps_its_counts(tmp_path, e2fsck_first):
    """/b, a reflink of /a, gets a wrong inode checksum.  Stock e2fsck
    -fn finds only that ("passes checks, but checksum does not match").
    fsck.extref -fy (-E no_e2fsck, or with e2fsck first, which fixes the
    checksum) must leave the record: 40 blocks mapped twice."""
    img = tmp_path / "c.img"
    helpers.mkfs(img, "8M", "-q")
    src = tmp_path / "s"
    src.write_bytes(os.urandom(40 * 1024))
    _shell(img, [f"write {src} /a", "reflink /a /b"], tmp_path)
    want = _refcounts(img)
    assert len(want) == 1 and want[0][1:] == (40, 2), want
    ino = re.search(r"Inode: (\d+)", helpers.debugfs_stat(img, "/b"))[1]
    helpers.run(["debugfs", "-w", "-R", f"sif <{ino}> checksum 0", str(img)])
    res = helpers.run(["e2fsck", "-fn", str(img)], check=False)
    assert res.returncode == 4 and "checksum does not match inode" in \
        res.stdout, helpers.describe(res)
    opts = ["-fy"] if e2fsck_first else ["-fy", "-E", "no_e2fsck"]
    res = helpers.run([helpers.binary("fsck/fsck.extref"), *opts, str(img)],
                      check=False)
    assert res.returncode in (0, 1), helpers.describe(res)
    assert _refcounts(img) == want, helpers.describe(res)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-fn", str(img)],
                      check=False)
    if e2fsck_first:
        assert res.returncode == 0, helpers.describe(res)
        helpers.e2fsck_fn(img)
    else:
        # the checksum is e2fsck's to fix; only that is left
        assert res.returncode == 4, helpers.describe(res)
        assert "checksum does not match inode" in res.stdout, res.stdout
        assert "0x0" not in res.stdout, res.stdout
