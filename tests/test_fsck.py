"""fsck.extref: one case per problem code (tests/fsck/, e2fsprogs style).

Each case directory tests/fsck/f_CODE_what/ builds an image with the tools
(tests/fsck/build.default, or the case's own `build`), records every
file's bytes, corrupts exactly one thing (`corrupt`) and checks:

  detect  fsck.extref -n -f reports 0xCODE (and no other code unless the
          case's `codes` file allows it), exits 4, changes nothing;
  repair  fsck.extref -y -f prints expect.1 (exit 1; 4 for the codes the
          core cannot fix), a second -n run prints expect.2 (exit 0 where
          fixable), stock e2fsck -fn is then clean, and every file reads
          as before (files named in `changed` as after the corruption).

EXTREF_UPDATE_EXPECT=1 rewrites expect.1 and expect.2 from the output
(except for cases whose repair is marked xfail: their expect files are
written by hand and show the correct behaviour).
See tests/fsck/README for the layout.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import helpers

CASES_DIR = Path(__file__).resolve().parent / "fsck"
CASES = sorted(p.name for p in CASES_DIR.iterdir()
               if p.is_dir() and p.name.startswith("f_"))
UPDATE = os.environ.get("EXTREF_UPDATE_EXPECT") == "1"

# extref_problem_info has no "fix" field: the codes whose table entry has
# no repair (libfs/check/problem.c), for which -y exits 4.
UNFIXABLE = {0x0101}


def fsck_bin():
    return helpers.binary("fsck/fsck.extref")


def tool_env(tmp):
    return {"MKFS": helpers.binary("mkfs.extref"),
            "DEBUGFS": helpers.binary("debugfs.extref"),
            "TMP": str(tmp)}


def case_code(case):
    return int(case.split("_")[1], 16)


def case_file(case, name, default=None):
    p = CASES_DIR / case / name
    return p.read_text() if p.exists() else default


def case_xfail(case, step):
    """Reason from the case's `xfail` file ("detect: why" lines), or None."""
    for line in (case_file(case, "xfail", "") or "").splitlines():
        key, _, reason = line.partition(":")
        if key.strip() == step:
            return reason.strip()
    return None


def run_script(path, img, tmp):
    env = dict(os.environ)
    env.update(tool_env(tmp))
    env["IMG"] = str(img)
    res = subprocess.run(["sh", str(path)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, helpers.describe(res)


def list_files(img):
    """Regular files of the root directory, by stock debugfs."""
    out = helpers.debugfs(img, "ls -p /").stdout
    names = []
    for line in out.splitlines():
        f = line.strip().split("/")
        if len(f) >= 7 and f[2].startswith("10"):
            names.append("/" + f[5])
    return sorted(names)


def file_hashes(img):
    hashes = {}
    for name in list_files(img):
        res = subprocess.run(["debugfs", "-R", f"cat {name}", str(img)],
                             capture_output=True, timeout=60)
        hashes[name] = res.stdout if res.returncode == 0 else None
    return hashes


def run_fsck(img, *opts):
    """fsck.extref output (stdout and stderr as one stream) and status."""
    res = subprocess.run([fsck_bin(), *opts, str(img)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=300)
    return res.stdout, res.returncode


def normalize(out, img, status):
    lines = []
    for line in out.splitlines():
        if re.match(r"^e2fsck \d+\.\d+", line):
            continue                    # version banner
        lines.append(line.replace(str(img), "test.img"))
    lines.append(f"Exit status is {status}")
    return "\n".join(lines) + "\n"


def codes_in(out):
    return {int(m, 16) for m in re.findall(r"^(?:\S+: )?0x([0-9a-f]{4}) ",
                                            out, re.M)}


_built = {}


def build_case(case, tmp_path):
    """(image, file hashes before and after the corruption), cached."""
    if case not in _built:
        work = Path(helpers.run(["mktemp", "-d"]).stdout.strip())
        img = work / "case.img"
        build = CASES_DIR / case / "build"
        run_script(build if build.exists() else CASES_DIR / "build.default",
                   img, work)
        before = file_hashes(img)
        run_script(CASES_DIR / case / "corrupt", img, work)
        after = file_hashes(img)
        _built[case] = (img, before, after)
    img, before, after = _built[case]
    copy = tmp_path / "test.img"
    shutil.copyfile(img, copy)
    return copy, before, after


@pytest.fixture(scope="module", autouse=True)
def _cleanup_built():
    yield
    for img, _, _ in _built.values():
        shutil.rmtree(img.parent, ignore_errors=True)
    _built.clear()


def fsck_opts(case):
    return (case_file(case, "fsck_opts", "") or "").split()


def maybe_xfail(request, case, step):
    reason = case_xfail(case, step)
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


# ----- the problem table -----

def problem_table():
    res = helpers.run([helpers.binary("tests/unit/problem_table")])
    rows = []
    for line in res.stdout.splitlines():
        code, name, preen, desc = line.split(" ", 3)
        rows.append((int(code, 16), name, int(preen), desc))
    return rows


def test_problem_table_sorted_unique_covered():
    rows = problem_table()
    codes = [r[0] for r in rows]
    names = [r[1] for r in rows]
    assert codes == sorted(codes), "problem table not sorted by code"
    assert len(set(codes)) == len(codes), "duplicate codes"
    assert len(set(names)) == len(names), "duplicate names"
    covered = {case_code(c) for c in CASES}
    missing = [f"0x{c:04x} {n}" for c, n, _, _ in rows if c not in covered]
    assert not missing, f"problem codes without a case in tests/fsck: {missing}"
    unknown = covered - set(codes)
    assert not unknown, f"cases for codes not in the table: {unknown}"
    # Each case directory is complete.
    for c in CASES:
        for f in ("name", "corrupt", "expect.1", "expect.2"):
            assert (CASES_DIR / c / f).exists() or UPDATE, f"{c}/{f} missing"
        assert len(case_file(c, "name").strip().splitlines()) == 1, c


# ----- one case per problem code -----

@pytest.mark.parametrize("case", CASES)
def test_detect(case, tmp_path, request):
    maybe_xfail(request, case, "detect")
    img, _, _ = build_case(case, tmp_path)
    code = case_code(case)
    allowed = {code} | {int(c, 16) for c in
                        (case_file(case, "codes", "") or "").split()}
    before = helpers.sha256(img)
    out, st = run_fsck(img, "-n", "-f", *fsck_opts(case))
    assert f"0x{code:04x} " in out, out
    assert st == 4, out
    assert codes_in(out) <= allowed, f"unexpected codes {codes_in(out)}:\n{out}"
    assert helpers.sha256(img) == before, "-n changed the image"


@pytest.mark.parametrize("case", CASES)
def test_repair(case, tmp_path, request):
    maybe_xfail(request, case, "repair")
    img, before, after = build_case(case, tmp_path)
    code = case_code(case)
    fixable = code not in UNFIXABLE
    opts = fsck_opts(case)
    out1, st1 = run_fsck(img, "-y", "-f", *opts)
    got1 = normalize(out1, img, st1)
    out2, st2 = run_fsck(img, "-n", "-f", *opts)
    got2 = normalize(out2, img, st2)
    d = CASES_DIR / case
    if UPDATE and not case_xfail(case, "repair"):
        (d / "expect.1").write_text(got1)
        (d / "expect.2").write_text(got2)
    assert f"0x{code:04x} " in out1, out1
    assert st1 == (1 if fixable else 4), out1
    assert got1 == (d / "expect.1").read_text(), "expect.1 differs:\n" + got1
    assert got2 == (d / "expect.2").read_text(), "expect.2 differs:\n" + got2
    if not fixable:
        assert st2 == 4, out2
        return
    assert st2 == 0, out2
    helpers.e2fsck_fn(img)
    changed = set((case_file(case, "changed", "") or "").split())
    now = file_hashes(img)
    assert set(now) == set(before), (sorted(now), sorted(before))
    for name, data in before.items():
        want = after[name] if name in changed else data
        assert now[name] is not None and now[name] == want, \
            f"{name}: contents changed by the repair"


# ----- preen -----

def tree_bytes(img, tmp_path):
    return helpers.dump_inode(img, 5, tmp_path / "ino5.dump")


def test_preen_fixes_safe_problem(tmp_path):
    img, _, _ = build_case("f_0302_count_too_high", tmp_path)
    out, st = run_fsck(img, "-p", "-f")
    assert st == 1, out
    assert "0x0302 " in out and "UNEXPECTED INCONSISTENCY" not in out, out
    out, st = run_fsck(img, "-n", "-f")
    assert st == 0, out


def test_preen_stops_at_shared_no_record(tmp_path):
    img, _, _ = build_case("f_0304_shared_no_record", tmp_path)
    tree = tree_bytes(img, tmp_path)
    out, st = run_fsck(img, "-p", "-f")
    assert st == 4, out
    assert "0x0304 " in out, out
    assert "UNEXPECTED INCONSISTENCY" in out, out
    assert tree_bytes(img, tmp_path) == tree, "-p changed the tree"
    out, st = run_fsck(img, "-n", "-f")
    assert st == 4 and "0x0304 " in out, out


def test_no_changes_nothing_on_every_case(tmp_path):
    """-n (with and without e2fsck) leaves every corrupted image as it is."""
    for case in CASES:
        img, _, _ = build_case(case, tmp_path)
        before = helpers.sha256(img)
        for extra in ([], ["-E", "no_e2fsck"]):
            run_fsck(img, "-n", "-f", *extra)
            assert helpers.sha256(img) == before, f"{case}: -n {extra}"


def test_missing_e2fsck_is_a_clear_error(tmp_path):
    """Without e2fsck on PATH: exit 8 with a message saying how to skip
    it; with -E no_e2fsck the reference counts are still checked."""
    img = tmp_path / "t.img"
    helpers.mkfs(img, "16M", "-q")
    env = {"PATH": str(tmp_path)}          # no e2fsck there
    res = helpers.run([fsck_bin(), "-n", str(img)], check=False, env=env)
    assert res.returncode == 8, helpers.describe(res)
    assert "e2fsck not found" in res.stderr and "no_e2fsck" in res.stderr, \
        helpers.describe(res)
    res = helpers.run([fsck_bin(), "-n", "-E", "no_e2fsck", str(img)],
                      check=False, env=env)
    assert res.returncode == 0, helpers.describe(res)


def extent_lines(img, path):
    """(level, depth, physical) of each line of stock debugfs `ex PATH`."""
    out = helpers.debugfs(img, f"ex {path}").stdout
    rows = []
    for line in out.splitlines()[1:]:
        m = re.match(r"\s*(\d+)/\s*(\d+)\s+\d+/\s*\d+\s+\d+\s+-\s+\d+\s+(\d+)",
                     line)
        if m:
            rows.append(tuple(int(x) for x in m.groups()))
    return rows


@pytest.fixture
def deep_image(tmp_path):
    """/sparse: 30,000 one-block extents on 1 KiB blocks (an extent tree
    of depth 3), and /copy, its reflink."""
    src = tmp_path / "src"
    src.mkdir()
    fd = os.open(src / "sparse", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        for i in range(30000):
            os.pwrite(fd, b"%08d" % i * 128, 2 * i * 1024)
    finally:
        os.close(fd)
    img = tmp_path / "deep.img"
    helpers.mkfs(img, "128M", "-q", "-b", "1024", "-d", str(src))
    helpers.run([helpers.binary("debugfs.extref"), "-w", "-R",
                 "reflink /sparse /copy", str(img)])
    rows = extent_lines(img, "/sparse")
    assert rows and rows[0][1] >= 2, f"extent tree too shallow: {rows[:3]}"
    assert sum(1 for r in rows if r[0] == r[1]) == 30000
    return img, rows


def test_deep_extent_tree_every_leaf_read(deep_image):
    """Every leaf of a depth-3 tree is read: all 30,000 blocks of /sparse
    are found shared with /copy, and both checkers are clean."""
    img, _ = deep_image
    out, st = run_fsck(img, "-n", "-f", "-v")
    assert st == 0, out
    m = re.search(r"(\d+) extent mappings, (\d+) shared blocks", out)
    assert m and int(m.group(1)) >= 60000 and int(m.group(2)) == 30000, out
    helpers.e2fsck_fn(img)


def test_deep_extent_tree_damage_named_by_path(deep_image):
    """An interior node with a broken header: reported against the file's
    path, the rest of the tree still read (its blocks keep their records,
    only the lost subtree's are reported)."""
    img, rows = deep_image
    child = next(p for lvl, depth, p in rows if lvl == 1)
    with open(img, "r+b") as f:
        f.seek(child * 1024)
        f.write(b"\0\0")                # the magic
    out, st = run_fsck(img, "-n", "-f", "-E", "no_e2fsck")
    assert st == 4, out
    assert re.search(r"^0x0101 .*inode \d+ \(/sparse\): Corrupt extent header",
                     out, re.M), out
    # the blocks of the other subtrees are still seen mapped twice
    m = re.search(r"(\d+) shared blocks", out)
    assert m and 0 < int(m.group(1)) < 30000, out
    # -y leaves the tree alone while mappings are unknown ...
    tree = helpers.dump_inode(img, 5, img.parent / "ino5.before")
    out, st = run_fsck(img, "-y", "-f", "-E", "no_e2fsck")
    assert st == 4 and "not done" in out, out
    assert helpers.dump_inode(img, 5, img.parent / "ino5.after") == tree
    # ... and, with e2fsck first (the default), the image is recovered
    out, st = run_fsck(img, "-y", "-f")
    assert st & 1 and not st & 4, out
    out, st = run_fsck(img, "-n", "-f")
    assert st == 0, out
    helpers.e2fsck_fn(img)


def test_extent_node_claimed_twice_read_once(deep_image):
    """Two index entries pointing at one node: the node is read once and
    the second claim reported, naming the block and the path."""
    img, rows = deep_image
    kids = [p for lvl, depth, p in rows if lvl == 1]
    root_child = next(p for lvl, depth, p in rows if lvl == 0)
    assert len(kids) >= 2
    with open(img, "r+b") as f:       # entry 2 of the level-1 node
        f.seek(root_child * 1024 + 12 + 12 + 4)
        f.write(kids[0].to_bytes(4, "little"))
    out, st = run_fsck(img, "-n", "-f", "-E", "no_e2fsck")
    assert st == 4, out
    assert re.search(rf"^0x0101 .*inode \d+ \(/sparse\): extent block "
                     rf"{kids[0]} is also a node of inode \d+ \(/sparse\)",
                     out, re.M), out


def test_progress_lines(deep_image):
    """-C 1: "PASS DONE TOTAL IMAGE" lines after e2fsck's own (passes
    1-5); ours are 10-13, pass 11 (the scan) counts up to its total
    without going back, its total twice the number of groups (inode
    scan, then the extent blocks)."""
    img, _ = deep_image
    res = subprocess.run([fsck_bin(), "-n", "-f", "-C", "1", str(img)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, helpers.describe(res)
    rows = [line.split() for line in res.stdout.splitlines()
            if re.match(r"^\d+ \d+ \d+ ", line)]
    ours = [(int(p), int(d), int(t)) for p, d, t, *_ in rows if int(p) >= 10]
    assert [p for p, _, _ in ours] == sorted(p for p, _, _ in ours)
    assert {p for p, _, _ in ours} == {10, 11, 12, 13}, ours
    groups = int(helpers.dumpe2fs_header(img)["Block count"]) // \
        int(helpers.dumpe2fs_header(img)["Blocks per group"])
    scan = [(d, t) for p, d, t in ours if p == 11 and t > 1]
    assert scan and all(t == 2 * groups for _, t in scan), scan
    done = [d for d, _ in scan]
    assert done == sorted(done) and done[-1] == 2 * groups, done
    assert any(int(r[0]) < 10 for r in rows), "no e2fsck progress lines"
