"""Crash tests: every operation interrupted after each of its writes, on
images without a journal (the ordered, flushed path; test_crash_txn.py has
the journal's transactions).

The operations run in debugfs.extref on top of the fault-injecting io
manager (libfs/txn/faultio.c, selected by the environment variable
EXTREF_FAULT):

- EXTREF_FAULT=count counts the writes W of an operation;
- EXTREF_FAULT=crash=N lets the first N writes reach the image and drops
  the rest: the process died after N writes;
- EXTREF_FAULT=powercut=N,seed=N holds the writes since the last flush in
  memory and, at the N-th write, applies a random half of them: a power
  cut with a volatile write cache that honours flushes.

For each operation (reflink, reflink -r of a small tree, clone_range,
dedupe, a copy-on-write pwrite into a shared file, truncate and punch of a
shared file, rm of one of two sharing files) a small image is prepared
(files, some shared, some untouched), and for N in 1..W (all points when
W <= 40, else 40 evenly spread ones; every 5th point also as a power cut)
a copy of the image is crashed at N and checked:

before any repair (test_crash):
  - no block's recorded count is below its number of mappings (the
    write-order invariant of FORMAT.md section 8).  Mappings are counted
    independently: in-use inodes from the raw inode tables, extents from
    stock debugfs "ex";
  - every file the operation does not touch is byte-identical; the source
    of a reflink/clone is intact; a reflink target is absent or equal to
    its source (a reflinked tree: a prefix of it); a changed file is in a
    state FORMAT.md's table allows: each block of the affected range holds
    its old bytes, its new bytes or zeros (a hole), the rest is old, the
    size is the old or the new one;
after a repair (test_crash_repair, skipped until fsck.extref is built):
  - fsck.extref -fy exits without bits 4 and 8, then fsck.extref -fn
    exits 0 and stock e2fsck -fn exits 0;
  - the counts are exact (every block mapped k >= 2 times has count k, no
    record elsewhere) and the contents are as above; a reflink target
    (or an rm'ed file) left unnamed may appear in /lost+found, with the
    content it had.
The final point of each sweep (all writes done) must also be the exact
expected result, with exact counts and stock e2fsck clean.

Every operation runs on an image of 1 KiB blocks, four of them (all in the
stress run) also on 4 KiB blocks.  Free space
after the files holds junk (a removed file of 0xEE bytes), so a block
mapped before its data was written shows as junk, never as a hole.

Stress run: EXTREF_CRASH_FULL=1 sweeps at least 200 evenly spread points
(all when W <= 200), every other one also as a power cut:

    EXTREF_CRASH_FULL=1 /usr/bin/python3 -m pytest tests/test_crash.py

A failure names the operation, block size and fault (crash=N or
powercut=N,seed=N); the first crashed images that failed are kept in the
test's temporary directory ("failed-*.img") for reproduction:
EXTREF_FAULT=crash=N debug/debugfs.extref -w -R "REQUEST" copy-of-base.img.

The fault-injecting io manager is a test hook, built only with configure
--enable-fault-injection (scripts/test, which CI runs, passes it); in a
build without it EXTREF_FAULT has no effect, and the tests that need it
skip, saying so.
"""

import hashlib
import os
import random
import shutil
import time
from pathlib import Path

import pytest

import crashlib
import helpers

_NO_FAULTS = helpers.fault_injection_skip_reason()
needs_faults = pytest.mark.skipif(_NO_FAULTS is not None,
                                  reason=_NO_FAULTS or "")
pytestmark = pytest.mark.crash

FULL = os.environ.get("EXTREF_CRASH_FULL") == "1"
POINT_LIMIT = 200 if FULL else 40
POWERCUT_EVERY = 2 if FULL else 5
KEEP_FAILED = 3

FSCK_SKIP = "fsck.extref not built yet"

# ----- the prepared image -----

SIZES = {
    "/keep1": 7000,
    "/keep2": 30000,
    "/src": 24676,
    "/shared": 32768,
    "/dst": 32768,
    "/dup1": 16384,
    "/frag0": 65536,
    "/dir/x": 3000,
    "/dir/y": 9000,
    "/dir/sub/z": 5000,
}
JUNK_SIZE = 1 << 20
REFLINKS = {"/keep2.ref": "/keep2", "/shared.ref": "/shared",
            "/frag": "/frag0"}
DIR_SRC, DIR_DST = "/dir", "/dir.copy"


def _prepare(workdir, bs):
    """Make the base image; return (img, {path: bytes})."""
    workdir.mkdir(parents=True, exist_ok=True)
    img = workdir / f"base-{bs}.img"
    # No journal: these tests keep the ordered, flushed path of images
    # without one (FORMAT.md section 8); test_crash_txn.py crashes the
    # same operations on images with a journal.
    helpers.mkfs(img, "16M", "-q", "-b", str(bs), "-O", "^has_journal")
    rng = random.Random(bs)
    host = workdir / "host"
    host.mkdir(exist_ok=True)
    cmds = ["mkdir /dir", "mkdir /dir/sub"]
    hostfiles = {}
    for i, (path, size) in enumerate(SIZES.items()):
        hf = hostfiles[path] = host / f"h{i}"
        hf.write_bytes(rng.randbytes(size))
        cmds.append(f"write {hf} {path}")
    # /dup2: the same bytes as /dup1 in blocks of its own.
    cmds.append(f"write {hostfiles['/dup1']} /dup2")
    for dst, src in REFLINKS.items():
        cmds.append(f"reflink {src} {dst}")
    # Unshare every other block of /frag: many extents, an extent tree of
    # depth >= 1 for the mapping parser.
    for off in range(0, SIZES["/frag0"], 2 * bs):
        cmds.append(f"pwrite -S {off // bs % 250 + 1} /frag {off} 1")
    # Free space right after the files holds junk (0xEE), not zeros: a
    # block that is mapped before its data is written reads as junk, not
    # as a hole.
    junk = host / "junk"
    junk.write_bytes(b"\xee" * JUNK_SIZE)
    cmds.append(f"write {junk} /junk")
    cmds.append("rm /junk")
    cmdfile = workdir / "prepare.cmds"
    cmdfile.write_text("\n".join(cmds) + "\n")
    res = helpers.run([crashlib.debugfs_extref(), "-w", "-f", str(cmdfile),
                       str(img)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    shutil.rmtree(host)
    paths = list(SIZES) + ["/dup2"] + list(REFLINKS)
    contents = crashlib.dump_files(img, paths, workdir)
    for p in paths:
        assert contents[p] is not None, f"{p} missing from the base image"
    assert contents["/dup1"] == contents["/dup2"]
    assert contents["/frag"] != contents["/frag0"]
    helpers.e2fsck_fn(img)
    return img, contents


_BASES = {}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """base(bs) -> (img, contents), made once per block size."""
    root = tmp_path_factory.mktemp("crash-base")

    def get(bs):
        if bs not in _BASES:
            _BASES[bs] = _prepare(root / str(bs), bs)
        return _BASES[bs]

    yield get
    _BASES.clear()
    shutil.rmtree(root, ignore_errors=True)


# ----- the operations and what each may leave -----

def _old_new_range(path, new_fn, lo_hi_fn):
    def check(c, got, bs):
        old = c[path]
        new = new_fn(c)
        lo, hi = lo_hi_fn(c)
        return crashlib.range_violations(old, new, got[path], lo, hi, bs)

    def final(c, got, bs):
        return [] if got[path] == new_fn(c) else \
            [f"{path}: final content is not the expected result"]
    return check, final


class Op:
    """request: the debugfs.extref request.  touched: base paths it may
    change (checked by check()); extra: new paths dumped for check();
    lost_found: base paths whose content an unnamed inode may have."""

    def __init__(self, request, touched=(), extra=(), check=None, final=None,
                 lost_found=(), tree=False, check_repaired=None):
        self.request = request
        self.touched = set(touched)
        self.extra = list(extra)
        self.check = check
        self.check_repaired = check_repaired or check
        self.final = final
        self.lost_found = list(lost_found)
        self.tree = tree


def _pwrite_new(c):
    b = bytearray(c["/shared"])
    b[5000:14000] = bytes([90]) * 9000
    return bytes(b)


def _punch_new(c):
    b = bytearray(c["/shared"])
    b[3000:15000] = bytes(12000)
    return bytes(b)


def _clone_new(c):
    d = c["/dst"]
    return d[:8192] + c["/src"][:12288] + d[20480:]


def _reflink_check(c, got, bs):
    v = got["/src.copy"]
    if v is not None and v != c["/src"]:
        return ["/src.copy exists but differs from /src"]
    return []


def _reflink_final(c, got, bs):
    return [] if got["/src.copy"] == c["/src"] else \
        ["/src.copy: final content differs from /src"]


def _rm_check(c, got, bs):
    v = got["/shared"]
    # All zeros: a power cut kept the inode write of step 2 (no mappings,
    # no links) but not the directory entry removal of step 1 (both sit
    # between the same two flushes).  The name points at a deleted inode,
    # which e2fsck removes: the file ends up removed, as asked.
    if v is not None and v != c["/shared"] and v != bytes(len(v)):
        return ["/shared still named but its content changed"]
    return []


def _rm_check_repaired(c, got, bs):
    v = got["/shared"]
    if v is not None and v != c["/shared"]:
        return ["/shared still named after repair but its content changed"]
    return []


def _rm_final(c, got, bs):
    return [] if got["/shared"] is None else ["/shared still exists"]


_pw_check, _pw_final = _old_new_range("/shared", _pwrite_new,
                                      lambda c: (5000, 14000))
_tr_check, _tr_final = _old_new_range("/shared",
                                      lambda c: c["/shared"][:10000],
                                      lambda c: (10000, len(c["/shared"])))
_pu_check, _pu_final = _old_new_range("/shared", _punch_new,
                                      lambda c: (3000, 15000))
_cl_check, _cl_final = _old_new_range("/dst", _clone_new,
                                      lambda c: (8192, 20480))
_de_check, _de_final = _old_new_range("/dup2", lambda c: c["/dup2"],
                                      lambda c: (0, 16384))

OPS = {
    "reflink": Op("reflink /src /src.copy", extra=["/src.copy"],
                  check=_reflink_check, final=_reflink_final,
                  lost_found=["/src"]),
    "reflink_r": Op(f"reflink -r {DIR_SRC} {DIR_DST}", tree=True,
                    lost_found=["/dir/x", "/dir/y", "/dir/sub/z"]),
    "clone_range": Op("clone_range /src 0 /dst 8192 12288", touched=["/dst"],
                      check=_cl_check, final=_cl_final),
    "dedupe": Op("dedupe /dup1 0 /dup2 0 16384", touched=["/dup2"],
                 check=_de_check, final=_de_final),
    "pwrite": Op("pwrite -S 90 /shared 5000 9000", touched=["/shared"],
                 check=_pw_check, final=_pw_final),
    "truncate": Op("truncate /shared 10000", touched=["/shared"],
                   check=_tr_check, final=_tr_final),
    "punch": Op("punch /shared 3000 12000", touched=["/shared"],
                check=_pu_check, final=_pu_final),
    "rm": Op("rm /shared", touched=["/shared"], check=_rm_check,
             check_repaired=_rm_check_repaired, final=_rm_final,
             lost_found=["/shared"]),
}

# Block size 1024 for every operation (more blocks, more writes); 4096 for
# four of them by default (run time), for all in the stress run.
CASES = [(op, 1024) for op in OPS] + \
    [(op, 4096) for op in OPS
     if FULL or op in ("reflink", "clone_range", "pwrite", "rm")]


# ----- checking one image -----

def _tree_violations(c, tree):
    """A reflinked directory tree must be a prefix of the source tree."""
    if tree is None:
        return []
    src_files = {p[len(DIR_SRC) + 1:]: c[p] for p in c
                 if p.startswith(DIR_SRC + "/")}
    src_dirs = {os.path.dirname(p) for p in src_files} - {""}
    out = []
    for rel, data in tree.items():
        if data is None:
            if rel not in src_dirs:
                out.append(f"{DIR_DST}/{rel}: unexpected directory")
        elif rel not in src_files:
            out.append(f"{DIR_DST}/{rel}: unexpected file")
        elif data != src_files[rel]:
            out.append(f"{DIR_DST}/{rel}: differs from {DIR_SRC}/{rel}")
    return out


def content_violations(op, img, c, bs, workdir, final=False,
                       lost_found=False):
    paths = [p for p in c] + op.extra
    got = crashlib.dump_files(img, paths, workdir)
    out = []
    for p in c:
        if p not in op.touched and got[p] != c[p]:
            out.append(f"{p} (untouched) "
                       + ("is missing" if got[p] is None else "changed"))
    if op.tree:
        tree = crashlib.rdump_tree(img, DIR_DST, workdir)
        out += _tree_violations(c, tree)
        if final:
            want = {p[len(DIR_SRC) + 1:] for p in c
                    if p.startswith(DIR_SRC + "/")}
            have = {r for r, d in (tree or {}).items() if d is not None}
            if have != want:
                out.append(f"{DIR_DST}: final tree has {sorted(have)}")
    elif final:
        out += op.final(c, got, bs)
    elif lost_found:
        out += op.check_repaired(c, got, bs)
    else:
        out += op.check(c, got, bs)
    if lost_found:
        out += _lost_found_violations(op, img, c, bs, workdir)
    return out


def _lost_found_ok(data, allowed, bs):
    """An unnamed inode holds one of the allowed contents.  Its size may
    still be 0 (reflink writes the extents before the size): e2fsck then
    sets it to the end of the last mapped block, so the content may be
    followed by zeros up to the block boundary."""
    for a in allowed:
        end = -(-len(a) // bs) * bs
        if data == a or (len(data) == end and data[:len(a)] == a
                         and not any(data[len(a):])):
            return True
    return False


def _lost_found_violations(op, img, c, bs, workdir):
    entries = crashlib.ls_dir(img, "/lost+found") or {}
    allowed = [c[p] for p in op.lost_found]
    out = []
    for name, (ino, mode) in entries.items():
        kind = mode & 0o170000
        path = f"/lost+found/{name}"
        if kind == 0o100000:
            data = crashlib.dump_files(img, [path], workdir)[path]
            if not _lost_found_ok(data, allowed, bs):
                out.append(f"{path} (inode {ino}): content of no file the "
                           "operation could leave unnamed")
        elif kind == 0o040000 and op.tree:
            tree = crashlib.rdump_tree(img, path, workdir) or {}
            for rel, data in tree.items():
                if data is not None and not _lost_found_ok(data, allowed,
                                                           bs):
                    out.append(f"{path}/{rel}: unexpected content")
        else:
            out.append(f"{path} (inode {ino}, mode {mode:o}): unexpected")
    return out


def _short(res):
    text = (res.stdout + res.stderr).strip().splitlines()
    return " | ".join(text[-6:])


def _judge(op, c, bs, workdir, fsck):
    """The oracle of a crashed image: [(stage, problem)], stage "pre"
    (before any repair) or "repair" (in or after fsck.extref -fy)."""
    def oracle(img, how):
        out = workdir / "fault.out"
        probs = []
        if not out.exists() or not out.read_text().strip():
            probs.append(("pre", "the tool wrote no fault report"))
        out.unlink(missing_ok=True)
        probs += [("pre", "count too low: " + p)
                  for p in crashlib.count_violations(img, workdir)]
        probs += [("pre", "content: " + p)
                  for p in content_violations(op, img, c, bs, workdir)]
        if not fsck:
            return probs
        r = crashlib.fsck_run(img, "-fy")
        if r.returncode & (4 | 8) or r.returncode >= 16:
            probs.append(("repair", f"fsck.extref -fy exit {r.returncode}: "
                          f"{_short(r)}"))
        # (-E no_e2fsck: stock e2fsck -fn runs next anyway)
        r = crashlib.fsck_run(img, "-fn", "-E", "no_e2fsck")
        if r.returncode != 0:
            probs.append(("repair", f"fsck.extref -fn after -fy exit "
                          f"{r.returncode}: {_short(r)}"))
        r = crashlib.e2fsck(img, "-fn")
        if r.returncode != 0:
            probs.append(("repair", f"e2fsck -fn after repair exit "
                          f"{r.returncode}: {_short(r)}"))
        probs += [("repair", "after repair: " + p) for p in
                  crashlib.count_violations(img, workdir, exact=True)]
        probs += [("repair", "content after repair: " + p) for p in
                  content_violations(op, img, c, bs, workdir,
                                     lost_found=True)]
        return probs
    return oracle


def run_sweep(op_name, bs, base_img, c, workdir):
    """Every crash point of the operation judged (crashlib.sweep, none
    replayed: no journal); the whole operation (the counting run) must
    be the exact result.  Returns the crashlib.Swept, with final (the
    problems of the whole operation), fsck and seconds added."""
    op = OPS[op_name]
    fsck = crashlib.fsck_path() is not None
    t0 = time.monotonic()
    workdir.mkdir(parents=True, exist_ok=True)
    swept = crashlib.sweep(
        base_img, crashlib.tool_op([crashlib.debugfs_extref(), "-w", "-R",
                                    op.request],
                                   {"EXTREF_FAULT_OUT": workdir / "fault.out"}),
        _judge(op, c, bs, workdir, fsck), workdir, POINT_LIMIT,
        faults=crashlib.crash_and_powercut(POWERCUT_EVERY, POWERCUT_EVERY - 1,
                                           last=True),
        replayers=(None,), stop_after=None, keep=KEEP_FAILED)
    channels = (workdir / "count.out").read_text().splitlines()
    swept.final = [] if len(channels) == 1 else [f"channels: {channels}"]
    img = swept.counted
    swept.final += crashlib.count_violations(img, workdir, exact=True)
    swept.final += content_violations(op, img, c, bs, workdir, final=True)
    r = crashlib.e2fsck(img, "-fn")
    if r.returncode != 0:
        swept.final.append(f"e2fsck -fn after the whole operation exit "
                           f"{r.returncode}: {_short(r)}")
    img.unlink()
    swept.fsck, swept.seconds = fsck, time.monotonic() - t0
    swept.label = (f"{op_name} (bs {bs}, request '{op.request}')")
    return swept


def _stage(swept, name):
    """The failures of one stage of the oracle, for Swept.report."""
    return [(f, h, [p for st, p in probs if st == name])
            for f, h, probs in swept.failures
            if any(st == name for st, _ in probs)]


_SWEEPS = {}


@pytest.fixture(scope="module")
def sweeps(base, tmp_path_factory):
    """sweeps(op, bs) -> Sweep, each sweep run once for both tests."""
    root = tmp_path_factory.mktemp("crash")

    def get(op_name, bs):
        key = (op_name, bs)
        if key not in _SWEEPS:
            base_img, c = base(bs)
            _SWEEPS[key] = run_sweep(op_name, bs, base_img, c,
                                     root / f"{op_name}-{bs}")
        return _SWEEPS[key]

    yield get
    _SWEEPS.clear()


# ----- the tests -----

@needs_faults
def test_faultio_unit(tmp_path):
    """The io manager itself: count, crash=N, powercut (C unit test)."""
    prog = helpers.binary("tests/unit/faultio_test")
    res = helpers.run([prog, str(tmp_path)], check=False)
    assert res.returncode == 0, helpers.describe(res)
    assert "faultio_test: OK" in res.stdout


def _image_digest(img):
    """sha256 of an image with the primary superblock's s_kbytes_written
    (libext2fs takes it from the io manager's statistics) and checksum
    masked."""
    data = bytearray(Path(img).read_bytes())
    data[1024 + 0x178:1024 + 0x180] = bytes(8)
    data[1024 + 0x3FC:1024 + 0x400] = bytes(4)
    return hashlib.sha256(data).hexdigest()


@needs_faults
def test_fault_modes_on_a_tool(base, tmp_path):
    """Through debugfs.extref: count, crash=W (the whole run) and a long
    powercut give the same image as a run without faults; crash=0 changes
    nothing."""
    base_img, _c = base(1024)
    request = OPS["pwrite"].request
    plain = tmp_path / "plain.img"
    crashlib.sparse_copy(base_img, plain)
    res = helpers.run([crashlib.debugfs_extref(), "-w", "-R", request,
                       str(plain)], check=False,
                      env={"SOURCE_DATE_EPOCH": "1700000000"})
    assert res.returncode == 0, helpers.describe(res)
    want = _image_digest(plain)

    img = tmp_path / "f.img"
    crashlib.sparse_copy(base_img, img)
    w, f = crashlib.count_writes(img, request, tmp_path)
    assert w > 0 and f > 0
    assert _image_digest(img) == want

    for fault in (f"crash={w}", f"powercut={w + 1},seed=1"):
        crashlib.sparse_copy(base_img, img)
        res, lines = crashlib.run_op(img, request, fault, tmp_path / "o")
        assert res.returncode == 0, helpers.describe(res)
        assert lines == [f"writes={w} dropped=0"], (fault, lines)
        assert _image_digest(img) == want, fault

    crashlib.sparse_copy(base_img, img)
    res, lines = crashlib.run_op(img, request, "crash=0", tmp_path / "o")
    # (after a dropped write the run may read stale data and take another
    # path, so only "everything dropped" is certain)
    assert len(lines) == 1 and lines[0].startswith("writes="), lines
    n = lines[0].split()[0].split("=")[1]
    assert lines[0] == f"writes={n} dropped={n}", lines
    assert helpers.sha256(img) == helpers.sha256(base_img)

    res, lines = crashlib.run_op(img, request, "bogus", tmp_path / "o")
    assert res.returncode != 0 and "EXTREF_FAULT" in res.stderr


def test_mapping_counter_matches_known_image(base, tmp_path):
    """The independent mapping count (raw inode tables + stock debugfs ex)
    agrees exactly with the tree on a consistent image, and the extent
    parser handles an extent tree of depth >= 1 (/frag)."""
    for bs in (1024, 4096):
        base_img, c = base(bs)
        assert crashlib.count_violations(base_img, tmp_path, exact=True) == []
        used = crashlib.inodes_in_use(base_img)
        assert 2 in used and crashlib.TREE_INO in used
        res = helpers.debugfs(base_img, "ex /frag")
        ext = crashlib.parse_ex_output("debugfs: ex <0>\n" + res.stdout)[0]
        # Index lines (depth >= 1) are skipped, the leaves cover the file.
        assert any(line.startswith(" 0/ 1") for line in
                   res.stdout.splitlines()), res.stdout
        assert sum(n for _l, _p, n, _u in ext) == SIZES["/frag0"] // bs
        assert len(ext) > 4
        # Every other block of /frag is its own, the rest shared with /frag0.
        recs = crashlib.refcount_records(base_img)
        shared = {b for s, n, k in recs for b in range(s, s + n) if k == 2}
        frag0 = crashlib.parse_ex_output(
            "debugfs: ex <0>\n" + helpers.debugfs(base_img,
                                                  "ex /frag0").stdout)[0]
        f0 = {p + i for _l, p, n, _u in frag0 for i in range(n)}
        f1 = {p + i for _l, p, n, _u in ext for i in range(n)}
        assert len(f0 & f1) == len(f0) // 2
        assert f0 & f1 <= shared


@pytest.mark.slow
@needs_faults
@pytest.mark.parametrize("op_name,bs", CASES,
                         ids=[f"{o}-{b}" for o, b in CASES])
def test_crash(sweeps, op_name, bs):
    """Before any repair: counts never below mappings; contents in a
    state FORMAT.md allows; the completed operation exact."""
    sweep = sweeps(op_name, bs)
    print(f"{op_name} bs={bs}: W={sweep.writes} flushes={sweep.flushes} "
          f"faults={len(sweep.faults)} in {sweep.seconds:.1f}s")
    assert sweep.writes > 0
    assert not sweep.final, sweep.report(sweep.label, [
        ("complete", None, sweep.final)])
    assert not _stage(sweep, "pre"), sweep.report(sweep.label,
                                                  _stage(sweep, "pre"))


@pytest.mark.slow
@needs_faults
@pytest.mark.parametrize("op_name,bs", CASES,
                         ids=[f"{o}-{b}" for o, b in CASES])
def test_crash_repair(sweeps, op_name, bs):
    """fsck.extref -fy repairs every crash point: -fn and stock e2fsck
    clean after it, exact counts, contents as allowed (lost+found too)."""
    if crashlib.fsck_path() is None:
        pytest.skip(FSCK_SKIP)
    sweep = sweeps(op_name, bs)
    assert sweep.fsck, "fsck.extref appeared after this sweep ran"
    assert not _stage(sweep, "repair"), sweep.report(
        sweep.label, _stage(sweep, "repair"))
