"""The manual pages and the tools' usage, as a user reads them."""

import os
import re
import subprocess
import shlex

import pytest

import crashlib
import helpers

DOCS = helpers.REPO_ROOT / "docs"


def test_man_pages_one_date_scheme():
    """Every page's .TH carries the same "Month YYYY" date and the
    package's version."""
    version = re.search(r"AC_INIT\(\[extref\], \[([^]]+)\]",
                        (helpers.REPO_ROOT / "configure.ac").read_text())[1]
    heads = {}
    for page in sorted(DOCS.glob("*.[0-9]")):
        th = re.search(r'^\.TH \S+ \d "([^"]*)" "([^"]*)"', page.read_text(),
                       re.M)
        assert th, page
        heads[page.name] = th.groups()
    assert len(heads) >= 4, heads
    dates = {d for d, _ in heads.values()}
    assert len(dates) == 1, heads
    assert re.fullmatch(r"(January|February|March|April|May|June|July|"
                        r"August|September|October|November|December) "
                        r"\d{4}", dates.pop()), heads
    assert {v for _, v in heads.values()} == {f"extref {version}"}, heads


def test_mkfs_usage_lists_every_form():
    out = helpers.run([helpers.binary("mkfs.extref"), "--help"]).stdout
    head = out.split("\n\n")[0]
    for form in ("IMAGE [SIZE]", "-d SOURCE|ARCHIVE", "--convert",
                 "--update -d SOURCE"):
        assert form in head, head


def test_mkfs_bad_option_short_usage():
    res = helpers.run([helpers.binary("mkfs.extref"), "-Z", "x.img"],
                      check=False)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert "invalid option" in lines[0]
    assert lines[-1] == "Try 'mkfs.extref --help' for more information."
    assert len(lines) <= 9, res.stderr
    assert "-d SOURCE|ARCHIVE" in res.stderr


# ----- the README: a front door whose recipes work as written -----

README = helpers.REPO_ROOT / "README"
TOOLS = {"mkfs.extref": "mkfs", "fsck.extref": "fsck",
         "debugfs.extref": "debug"}


def readme_commands():
    """The README's indented command lines that run one of the tools, as
    (tool, the words after it), comments and continuations dropped."""
    cmds = []
    for line in README.read_text().splitlines():
        m = re.match(r" {4}(\S+)\s+(.*)", line)
        if m and m[1] in TOOLS:
            cmds.append((m[1], shlex.split(m[2].split("#")[0])))
    return cmds


def test_readme_is_a_front_door():
    """About 100-150 lines (issue 24, section 4), grown by the recipes
    issue 30 asks of it (pipelines, growing, adopting Android images) to
    at most 200; the builder's recipe near the top, the rest pointed to
    rather than copied."""
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    first = next(i for i, line in enumerate(lines)
                 if re.match(r" {4}mkfs\.extref .*-d ", line))
    assert first < 60, first
    for pointer in ("mkfs.extref(8)", "fsck.extref(8)", "debugfs.extref(8)",
                    "libextref(3)", "docs/HACKING", "tests/README",
                    "docs/FORMAT.md"):
        assert pointer in README.read_text(), pointer


def test_readme_names_files_that_exist():
    """Every repository path the README names (docs/..., tests/...,
    examples/..., scripts/..., bench/) is there."""
    text = README.read_text()
    paths = set(re.findall(r"\b((?:docs|tests|examples|scripts|bench)"
                           r"/[\w./*-]*\w|(?:docs|tests|examples|scripts|"
                           r"bench)/)", text))
    assert len(paths) >= 6, paths
    for p in sorted(paths):
        assert list(helpers.REPO_ROOT.glob(p)), p


def test_readme_tools_are_where_it_says():
    """"After a build the tools are build/mkfs/mkfs.extref, ...": the
    same places under any build directory, and the PATH line names those
    directories."""
    text = README.read_text()
    for tool, sub in TOOLS.items():
        assert f"build/{sub}/{tool}" in " ".join(text.split()), tool
        assert (helpers.BUILD_DIR / sub / tool).is_file(), tool
    path_line = next(line for line in text.splitlines()
                     if "export PATH=" in line)
    for sub in TOOLS.values():
        assert f"$PWD/build/{sub}:" in path_line, path_line


def test_readme_commands_use_real_options():
    """Every option of the README's command lines is one the tool's
    --help lists; every debugfs.extref request is a command of the
    shell (debug/commands.def)."""
    cmds = readme_commands()
    assert {t for t, _ in cmds} == set(TOOLS), cmds
    requests = set(re.findall(r"^(\w+)\s", (helpers.REPO_ROOT / "debug" /
                                            "commands.def").read_text(),
                              re.M))
    helps = {t: helpers.run([helpers.binary(f"{sub}/{t}"), "--help"],
                            check=False)
             for t, sub in TOOLS.items()}
    for tool, words in cmds:
        usage = helps[tool].stdout + helps[tool].stderr
        if tool == "debugfs.extref" and "-R" in words:
            i = words.index("-R")
            request = words.pop(i + 1).split()[0]
            assert request in requests, (words, request)
        for w in words:
            if w.startswith("-") and w != "-":
                opt = w.split("=")[0]
                assert re.search(rf"(^|[\s\[|,]){re.escape(opt)}\b", usage), \
                    (tool, w, usage)


def test_dedup_default_is_stated_and_is_block(tmp_path):
    """The default of --dedup is stated where --dedup is described (the
    usage, the man page, the README) and is what a build does: block for
    -d, none for --convert."""
    out = helpers.run([helpers.binary("mkfs.extref"), "--help"]).stdout
    assert "default: block with -d" in " ".join(out.split()), out
    assert "none with --convert" in " ".join(out.split()), out
    man = (DOCS / "mkfs.extref.8").read_text()
    assert re.search(r"the default is\s+\.B block\s", man)     # -d
    assert re.search(r"the\s+default is\s+\.BR none\s", man)  # --convert
    assert re.search(r"--dedup=block \(the default", README.read_text())
    src = tmp_path / "src"
    src.mkdir()
    data = os.urandom(4 * 4096)                         # 4 blocks
    (src / "a").write_bytes(data)
    (src / "b").write_bytes(data)
    img = tmp_path / "d.img"
    helpers.mkfs(img, None, "-q", "-d", str(src))
    out = helpers.run([helpers.binary("debugfs.extref"), "-R", "refcount",
                       str(img)]).stdout.splitlines()
    assert [line.split()[1:] for line in out[1:]] == [["4", "2"]], out
    helpers.e2fsck_fn(img)


@pytest.mark.skipif(helpers.fault_injection_skip_reason() is not None,
                    reason=str(helpers.fault_injection_skip_reason()))
def test_readme_recovery_recipe(tmp_path, loop_mount):
    """"Recover after a crash": a reflink crashed after its commit leaves
    a journal that needs recovery; the kernel refuses `mount -o loop,ro`
    of it (it cannot replay through a read-only loop device), and after
    `fsck.extref -p` the same mount shows the reflinked file."""
    src = tmp_path / "src"
    src.mkdir()
    data = os.urandom(5 * 4096 + 100)
    (src / "a").write_bytes(data)
    img0 = tmp_path / "base.img"
    helpers.mkfs(img0, "16M", "-q", "-d", str(src))
    img = tmp_path / "crashed.img"
    crashlib.sparse_copy(img0, img)             # counting runs it
    writes, _ = crashlib.count_writes(img, "reflink /a /b", tmp_path)
    for n in range(1, writes + 1):
        crashlib.sparse_copy(img0, img)
        crashlib.run_op(img, "reflink /a /b", f"crash={n}")
        shown = helpers.run([crashlib.debugfs_extref(), "-R", "ls /",
                             str(img)], check=False).stdout.split()
        if crashlib.needs_recovery(img) and "b" in shown:
            break
    else:
        pytest.fail("no crash point left a committed, unreplayed reflink")
    _, res = loop_mount(img, check=False)
    assert res.returncode != 0, "the kernel mounted it: " + \
        helpers.describe(res)
    assert crashlib.needs_recovery(img)
    res = helpers.run([helpers.binary("fsck/fsck.extref"), "-p", str(img)],
                      check=False)
    assert res.returncode in (0, 1), helpers.describe(res)
    assert not crashlib.needs_recovery(img)
    mnt, _ = loop_mount(img)
    assert (mnt / "b").read_bytes() == data


def roff_args(line):
    """The arguments of a roff request line, quotes as roff reads them."""
    args, cur, quoted, i = [], None, False, 0
    while i < len(line):
        c = line[i]
        if quoted:
            if c == '"' and line[i + 1:i + 2] == '"':
                cur += '"'
                i += 1
            elif c == '"':
                quoted = False
            else:
                cur += c
        elif c == '"' and cur is None:
            cur, quoted = "", True
        elif c in " \t":
            if cur is not None:
                args.append(cur)
            cur = None
        else:
            cur = (cur or "") + c
        i += 1
    if cur is not None:
        args.append(cur)
    return args


def test_man_pages_no_glued_words():
    """The alternating-font requests (.BR, .IR, ...) join their arguments
    without a space: prose after one ('.BR x ).  On an image') renders
    as "Onanimage".  Two plain words in a row in such a request are that
    mistake."""
    word = re.compile(r"[A-Za-z][A-Za-z'-]*")
    bad = []
    for page in sorted(DOCS.glob("*.[0-9]")):
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if not re.match(r"\.(BR|RB|IR|RI|BI|IB) ", line):
                continue
            args = roff_args(line.split(" ", 1)[1])
            if any(word.fullmatch(a) and word.fullmatch(b)
                   for a, b in zip(args, args[1:])):
                bad.append(f"{page.name}:{n}: {line}")
    assert not bad, "\n".join(bad)


def test_man_pages_render_without_warnings():
    """groff -ww finds nothing: a control character where a \\f escape
    was meant (a raw form feed printed as a missing glyph), a bad
    request."""
    for page in sorted(DOCS.glob("*.[0-9]")):
        res = subprocess.run(["groff", "-man", "-ww", "-z", str(page)],
                             capture_output=True, text=True)
        assert res.returncode == 0 and not res.stderr, (page, res.stderr)
