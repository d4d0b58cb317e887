"""The catalogues that describe the tree follow it: tests/README's table
of test files lists every tests/test_*.py (one row each, in name order,
saying what the file covers) and no file that is gone; docs/HACKING's
layer map names the folders of libfs/, top to bottom, in
tests/test_layers.py's order; and every file either document names
exists.  A failure says which row or which line to change.
"""

import ast
import re

import helpers
from test_layers import LAYERS

TESTS = helpers.REPO_ROOT / "tests"
README = TESTS / "README"
HACKING = helpers.REPO_ROOT / "docs" / "HACKING"
ROW = re.compile(r"^\| (test_\w+\.py) \|(.*)\|\s*$", re.M)
WIDTH = 150         # a row's description, cut with " ..." past it


def describe_file(path):
    """What a test file covers, for its row: the first paragraph of its
    docstring on one line, without the final full stop, cut near WIDTH."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split("\n\n")[0].split()).rstrip(".")
    if len(text) > WIDTH:
        text = text[:WIDTH - 4].rsplit(" ", 1)[0] + " ..."
    return text


def rows(text):
    """[(file, description)] of tests/README's table, in its order."""
    return [(m.group(1), m.group(2).strip()) for m in ROW.finditer(text)]


def missing_rows(text, files):
    """For each file without a row: the row to add and where."""
    have = [name for name, _ in rows(text)]
    out = []
    for path in sorted(files, key=lambda p: p.name):
        if path.name in have:
            continue
        before = [n for n in have if n < path.name]
        where = (f"after the row of {before[-1]}" if before
                 else "as the table's first row")
        out.append(f"tests/README, {where}:\n"
                   f"| {path.name} | {describe_file(path)} |")
    return out


def test_readme_lists_every_test_file():
    files = sorted(TESTS.glob("test_*.py"))
    assert len(files) > 50, files
    add = missing_rows(README.read_text(), files)
    assert not add, ("test files tests/README does not list; add (or "
                     "write a better line for) each row:\n\n"
                     + "\n\n".join(add))


def test_readme_rows_name_files_that_exist():
    table = rows(README.read_text())
    assert len(table) > 50, "tests/README's table of files not found"
    gone = [f"tests/README: remove the row of {name} (no tests/{name})"
            for name, _ in table if not (TESTS / name).is_file()]
    assert not gone, "\n".join(gone)


def test_readme_rows_are_sorted_and_said():
    names = [name for name, _ in rows(README.read_text())]
    dup = sorted({n for n in names if names.count(n) > 1})
    assert not dup, f"tests/README lists these twice: {dup}"
    for a, b in zip(names, names[1:]):
        assert a < b, (f"tests/README: the row of {b} belongs before "
                       f"the row of {a} (rows in name order)")
    empty = [n for n, desc in rows(README.read_text()) if len(desc) < 10]
    assert not empty, f"tests/README: say what these cover: {empty}"


def test_a_missing_row_is_spelled_out(tmp_path):
    """The failure's message: the row, from the file's docstring, and
    where it goes."""
    new = tmp_path / "test_bbb.py"
    new.write_text('"""What bbb covers,\nover two lines.\n\nMore."""\n')
    long = tmp_path / "test_zzz.py"
    long.write_text('"""' + "word " * 60 + '"""\n')
    text = "| test_aaa.py | a |\n| test_ccc.py | c |\n"
    add = missing_rows(text, [new, long, tmp_path / "test_aaa.py"])
    assert add[0] == ("tests/README, after the row of test_aaa.py:\n"
                      "| test_bbb.py | What bbb covers, over two lines |")
    assert add[1].startswith("tests/README, after the row of test_ccc.py")
    assert add[1].endswith(" ... |") and len(add[1]) < WIDTH + 80
    assert len(add) == 2


def layer_map(text):
    """The folders docs/HACKING's layer map names, top to bottom."""
    start = text.index("The library's layers\n")
    end = text.index("Public headers belong to layers", start)
    return re.findall(r"^    (\w+)/  ", text[start:end], re.M)


def test_hacking_layer_map_is_the_layers():
    drawn = layer_map(HACKING.read_text())
    folders = sorted(p.name for p in (helpers.REPO_ROOT / "libfs").iterdir()
                     if p.is_dir())
    assert sorted(LAYERS) == folders, (
        f"libfs/ holds {folders}; tests/test_layers.py's LAYERS are "
        f"{LAYERS}: add the new folder to LAYERS, in its place")
    assert drawn == LAYERS[::-1], (
        f"docs/HACKING's layer map names {drawn} (top to bottom); the "
        f"layers are {LAYERS[::-1]} (tests/test_layers.py, reversed): "
        "draw each folder, in that order")


# A file a document names: a path with a folder (libfs/txn/faultio.c,
# image/open.c: under libfs/) or a bare name with a source extension.
FILE = re.compile(r"(?<![\w./-])((?:\.\./|\./)?(?:[\w.+-]+/)*[\w+-][\w.+-]*"
                  r"\.(?:c|h|py|sh|et|def|awk|md|map|ct|in|8|3))(?![\w/])")


def generated(path):
    """Made by the build from a file of the tree: configure from
    configure.ac, extref.pc from extref.pc.in, extref_err.h from
    extref_err.et."""
    return any(path.with_name(path.name + ext).exists()
               for ext in (".in", ".ac")) or \
        (path.suffix == ".h" and path.with_suffix(".et").exists())


def named_files(text):
    return sorted(set(FILE.findall(text)))


def file_exists(name, tracked):
    name = re.sub(r"^(\.\./|\./)+", "", name)
    if "/" not in name:
        return any(p.name == name or generated(p.parent / name)
                   for p in tracked)
    root = helpers.REPO_ROOT
    return any((base / name).exists() or generated(base / name)
               for base in (root, root / "libfs", root / "tests"))


def test_docs_name_files_that_exist():
    root = helpers.REPO_ROOT
    tracked = [p for d in ("libfs", "mkfs", "fsck", "debug", "fuse", "fuzz",
                           "tests", "docs", "bench", "scripts", "examples")
               for p in (root / d).rglob("*") if p.is_file()]
    tracked += [p for p in root.iterdir() if p.is_file()]
    bad = []
    for doc in (HACKING, README):
        names = named_files(doc.read_text())
        assert len(names) > 5, f"{doc}: no file names read"
        bad += [f"{doc.relative_to(root)} names {n}, which does not exist"
                for n in names if not file_exists(n, tracked)]
    assert not bad, "\n".join(bad)


def test_named_files_reads_paths():
    text = ("see libfs/txn/faultio.c, image/open.c and xr_handle.h; "
            "`make fuzz`; ../configure; debugfs.extref.8 (1.0, e.g. x.y); "
            "./autogen.sh.")
    assert named_files(text) == ["./autogen.sh", "debugfs.extref.8",
                                 "image/open.c", "libfs/txn/faultio.c",
                                 "xr_handle.h"]
